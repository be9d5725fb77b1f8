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
  logic signed [15:0] g16;
  assign g16 = a * b;
  assign q = requantize(acc, mult, shift);
  assign added = rescale2(a, b, mult_a, mult_b, shift);
  assign gated = requantize(32'(g16), mult_a, shift);      // the channel gate, as the epilogue computes it
endmodule
