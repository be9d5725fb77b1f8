// Weight RAM: R banks of V bytes (one per output channel of the array), one row per (kernel tap, input-channel
// tile), and two halves: the running tile reads one while the next tile's weights are written into the other.
// A row written is readable two cycles after its beat.
module weight_ram #(
  parameter int V = 16,
  parameter int R = 16,
  parameter int WROWS = 1024
) (
  input  logic clk,
  input  logic we,
  input  logic wbank,
  input  logic [$clog2(WROWS)-1:0] wrow,
  input  logic [(R > 1 ? $clog2(R) : 1)-1:0] wlane,
  input  logic [8*V-1:0] wdata,
  input  logic rbank,
  input  logic re,                 // hold the outputs while the reader stalls
  input  logic [$clog2(WROWS)-1:0] rrow,
  output logic [R*8*V-1:0] rdata
);
  // the write a cycle late, from registers: a bank's enable and address leave flip-flops, not the beat's decode
  localparam int AW = $clog2(2 * WROWS);
  logic [R-1:0] we_q;
  logic [AW-1:0] waddr_q;
  logic [8*V-1:0] wdata_q;
  always_ff @(posedge clk) begin
    for (int r = 0; r < R; r++) we_q[r] <= we && (R == 1 || 32'(wlane) == r);
    waddr_q <= AW'(32'(wbank) * WROWS + 32'(wrow));
    wdata_q <= wdata;
  end
  for (genvar r = 0; r < R; r++) begin : g_bank
    logic [8*V-1:0] bank[2 * WROWS];
    always_ff @(posedge clk) begin
      if (we_q[r]) bank[waddr_q] <= wdata_q;
      if (re) rdata[r*8*V +: 8*V] <= bank[32'(rbank) * WROWS + 32'(rrow)];
    end
  end
endmodule
