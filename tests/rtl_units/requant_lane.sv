// Test wrapper: the epilogue's integer arithmetic (engine_functions.svh) on one lane.
module requant_lane (
  input  logic signed [31:0] acc,
  input  logic signed [31:0] mult,
  input  logic [7:0]         shift,
  input  logic signed [7:0]  a,
  input  logic signed [7:0]  b,
  input  logic signed [31:0] mult_a,
  input  logic signed [31:0] mult_b,
  output logic signed [7:0]  q,
  output logic signed [7:0]  added,
  output logic signed [7:0]  gated
);
  `include "engine_functions.svh"
  assign q = requantize(acc, mult, shift);
  assign added = rescale2(a, b, mult_a, mult_b, shift);
  assign gated = gate(a, b, mult_a, shift);
endmodule
