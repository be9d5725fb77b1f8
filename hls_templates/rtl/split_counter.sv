// A 64-bit counter as two 32-bit halves, the carry between them in a register: no 64-bit carry chain. The high
// half takes a low half's wrap a cycle late, so a count read while it moves may be short by 2^32 for that cycle;
// the engine's counters are read once a run is done.
module split_counter #(
  parameter int IW = 1                 // bits of the increment
) (
  input  logic          clk_i,
  input  logic          rst_ni,
  input  logic          clear_i,
  input  logic [IW-1:0] inc_i,
  output logic [63:0]   count_o
);
  logic [31:0] lo_q, hi_q;
  logic carry_q;
  always_ff @(posedge clk_i)
    if (!rst_ni || clear_i) begin
      lo_q <= '0; hi_q <= '0; carry_q <= 1'b0;
    end else begin
      {carry_q, lo_q} <= {1'b0, lo_q} + 33'(inc_i);
      hi_q <= hi_q + 32'(carry_q);
    end
  assign count_o = {hi_q, lo_q};
endmodule
