// First-in first-out queue with a fill count, for the credit-based hand-offs between engine stages.
module sync_fifo #(
  parameter int W = 8,
  parameter int DEPTH = 8          // power of two
) (
  input  logic clk,
  input  logic rst_n,
  input  logic         push,
  input  logic [W-1:0] din,
  input  logic         pop,
  output logic [W-1:0] dout,
  output logic         empty,
  output logic [$clog2(DEPTH):0] count
);
  localparam int AW = $clog2(DEPTH);
  logic [W-1:0] mem[DEPTH];
  logic [AW:0] wp, rp;
  assign count = wp - rp;
  assign empty = wp == rp;
  assign dout = mem[rp[AW-1:0]];
  always_ff @(posedge clk) begin
    if (!rst_n) begin
      wp <= '0;
      rp <= '0;
    end else begin
      if (push) begin
        mem[wp[AW-1:0]] <= din;
        wp <= wp + 1'b1;
      end
      if (pop && !empty) rp <= rp + 1'b1;
    end
  end
endmodule
