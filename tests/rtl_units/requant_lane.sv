// Test wrapper: the epilogue's integer arithmetic (engine_functions.svh) on one lane, its pipeline stages
// (epilogue.sv) chained in one cycle.
module requant_lane (
  input  logic signed [31:0] acc,
  input  logic signed [17:0] mult,          // ABI v2: every multiplier below 2^17
  input  logic [7:0]         shift,
  input  logic signed [7:0]  a,
  input  logic signed [7:0]  b,
  input  logic signed [17:0] mult_a,
  input  logic signed [17:0] mult_b,
  input  logic signed [63:0] wide,          // shift_sat8 on any 64-bit value
  output logic signed [7:0]  wide_q,
  output logic signed [7:0]  q,
  output logic signed [7:0]  added,
  output logic signed [7:0]  residual,
  output logic signed [7:0]  gated
);
  `include "engine_functions.svh"
  logic signed [15:0] g16;
  // S1 product, S2 + half, S3 shift and saturate
  function automatic logic signed [7:0] requantise(input logic signed [31:0] x, input logic signed [17:0] m,
                                                   input logic signed [7:0] y, input logic signed [17:0] n,
                                                   input logic [7:0] s);
    logic signed [63:0] r;
    r = 64'(x) * 64'(m) + 64'(y) * 64'(n) + round_half(s);
    requantise = shift_sat8(r, s);
  endfunction
  assign g16 = a * b;
  assign q = requantise(acc, mult, 8'sd0, mult_b, shift);          // requantisation
  assign added = requantise(32'(a), mult_a, b, mult_b, shift);      // ADD
  // S5 products, S6 + half, S7 shift and saturate (0 from a shift of 48 on, as the epilogue's S7): a conv's
  // residual, 48 bits wide
  logic signed [47:0] residual_sum;
  assign residual_sum = 48'(a) * 48'(mult_a) + 48'(b) * 48'(mult_b)
                      + (shift == 8'd0 || shift > 8'd47 ? 48'sd0 : 48'sd1 <<< (shift - 8'd1));
  assign residual = shift > 8'd47 ? 8'sd0
                  : shift_sat8_within(64'(residual_sum), shift, 64'sd128 <<< shift, -(64'sd128 <<< shift));
  assign wide_q = shift_sat8(wide, shift);
  assign gated = requantise(32'(g16), mult_a, 8'sd0, mult_b, shift); // the channel gate
endmodule
