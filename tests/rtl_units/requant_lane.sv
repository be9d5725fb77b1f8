// Test wrapper: the epilogue's integer arithmetic (engine_functions.svh) on one lane.
module requant_lane (
  input  logic signed [31:0] acc,
  input  logic signed [17:0] mult,          // ABI v2: every multiplier below 2^17
  input  logic [7:0]         shift,
  input  logic signed [7:0]  a,
  input  logic signed [7:0]  b,
  input  logic signed [17:0] mult_a,
  input  logic signed [17:0] mult_b,
  output logic signed [7:0]  q,
  output logic signed [7:0]  added,
  output logic signed [7:0]  residual,
  output logic signed [7:0]  gated
);
  `include "engine_functions.svh"
  logic signed [15:0] g16;
  assign g16 = a * b;
  assign q = scale_sum(acc, mult, 8'sd0, mult_b, shift);          // requantisation
  assign added = scale_sum(32'(a), mult_a, b, mult_b, shift);      // ADD
  assign residual = rescale2(a, b, mult_a, mult_b, shift);         // a conv's residual, 48 bits wide
  assign gated = scale_sum(32'(g16), mult_a, 8'sd0, mult_b, shift); // the channel gate
endmodule
