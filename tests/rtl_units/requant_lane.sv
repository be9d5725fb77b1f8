// Test wrapper: the epilogue's integer arithmetic (engine_functions.svh) on one lane, its pipeline stages
// (epilogue.sv) chained in one cycle, at the epilogue's widths.
module requant_lane (
  input  logic signed [31:0] acc,
  input  logic signed [17:0] mult,          // ABI v2: every multiplier below 2^17
  input  logic [7:0]         shift,
  input  logic signed [7:0]  a,
  input  logic signed [7:0]  b,
  input  logic signed [17:0] mult_a,
  input  logic signed [17:0] mult_b,
  input  logic signed [51:0] wide,          // the two-stage saturating shift on any 52-bit value, shift < 52
  output logic signed [7:0]  wide_q,
  output logic signed [7:0]  wide_split_q,  // ... with the shift split by its multiple of eight (the residual's)
  output logic signed [7:0]  q,
  output logic signed [7:0]  added,
  output logic signed [7:0]  residual,
  output logic signed [7:0]  gated
);
  `include "engine_functions.svh"
  logic signed [15:0] g16;
  // S1-S4: the product of x's low 27 bits (ABI v3) and m, the rounding half added (below a shift of 44), + y * n
  // in 52 bits; S5-S6 shift and saturate (0 from a shift of 44 on)
  function automatic logic signed [7:0] requantise(input logic signed [31:0] x, input logic signed [17:0] m,
                                                   input logic signed [7:0] y, input logic signed [17:0] n,
                                                   input logic [7:0] s);
    logic signed [26:0] x27;
    logic signed [47:0] xm;
    logic signed [51:0] r;
    x27 = x[26:0];
    xm = 48'(x27) * 48'(m) + (s >= 8'd1 && s <= 8'd43 ? 48'sd1 <<< (s - 8'd1) : 48'sd0);
    r = 52'(xm) + 52'(y) * 52'(n);
    // the mask as the epilogue's S3-S4 make it, decoded then picked
    requantise = s > 8'd43 ? 8'sd0
               : shift_sat8_finish(shift_sat8_parts(r, s[5:0], shift_sat8_above_pick(shift_sat8_above_decode(s[5:0]))));
  endfunction
  assign g16 = a * b;
  assign q = requantise(acc, mult, 8'sd0, mult_b, shift);          // requantisation
  assign added = requantise(32'(a), mult_a, b, mult_b, shift);      // ADD
  // S8-S10 products and + half, S11 the sum, S12-S13 shift (by the multiple of eight, then the rest) and saturate
  // (0 from a shift of 48 on, as the epilogue's S13): a conv's residual, 48 bits wide
  logic signed [47:0] residual_sum;
  assign residual_sum = 48'(a) * 48'(mult_a) + 48'(b) * 48'(mult_b)
                      + (shift == 8'd0 || shift > 8'd47 ? 48'sd0 : 48'sd1 <<< (shift - 8'd1));
  assign residual = shift > 8'd47 ? 8'sd0
                  : shift_sat8_finish(shift_sat8_fine(shift_sat8_coarse(52'(residual_sum), shift[5:3],
                                                                        shift_sat8_above(shift[5:0])), shift[2:0]));
  assign wide_q = shift_sat8_finish(shift_sat8_parts(wide, shift[5:0], shift_sat8_above(shift[5:0])));
  assign wide_split_q = shift_sat8_finish(shift_sat8_fine(shift_sat8_coarse(wide, shift[5:3], shift_sat8_above(shift[5:0])),
                                                          shift[2:0]));
  assign gated = requantise(32'(g16), mult_a, 8'sd0, mult_b, shift); // the channel gate
endmodule
