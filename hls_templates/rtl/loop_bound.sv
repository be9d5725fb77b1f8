// A loop's count, fixed per layer or tile, as the registers its end flags are kept from. A counter c that runs
// 0 .. count - 1 and steps to its `_nx` (c + 1) knows a step ahead that the next value is its last by comparing
// `_nx` with count - 2 (`less2_o`) as it steps, and two steps ahead by count - 3 (`less3_o`); after a wrap to 0 the
// flags come from `is1_o` (0 is the last) and `is2_o` (1 is the last), and `is3_o` (1 is the one before the last)
// for a flag kept a step further ahead. The step's decisions are then tests of flags, not compares of counters.
module loop_bound #(
  parameter int W = 16
) (
  input  logic         clk_i,
  input  logic [W-1:0] count_i,
  output logic [W-1:0] less2_o,
  output logic [W-1:0] less3_o,
  output logic         is1_o,
  output logic         is2_o,
  output logic         is3_o
);
  always_ff @(posedge clk_i) begin
    less2_o <= count_i - W'(2);
    less3_o <= count_i - W'(3);
    is1_o <= count_i == W'(1);
    is2_o <= count_i == W'(2);
    is3_o <= count_i == W'(3);
  end
endmodule
