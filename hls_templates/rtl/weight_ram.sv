// Weight RAM: R banks of V bytes (one per output channel of the array), one row per (kernel tap, input-channel
// tile), and two halves: the running tile reads one while the next tile's weights are written into the other.
// A row written is readable three cycles after its beat.
module weight_ram #(
  parameter int V = 16,
  parameter int R = 16,
  parameter int WROWS = 1024,
  parameter bit URAM = 0
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
  // the write two cycles late, from registers: the beat's row, lane and half first (they leave the beat's decode),
  // then each bank's enable and the address (the half's offset is an add: WROWS need not be a power of two)
  localparam int AW = $clog2(2 * WROWS);
  logic we_a;
  logic wbank_a;
  logic [$clog2(WROWS)-1:0] wrow_a;
  logic [(R > 1 ? $clog2(R) : 1)-1:0] wlane_a;
  logic [8*V-1:0] wdata_a;
  logic [R-1:0] we_q;
  logic [AW-1:0] waddr_q;
  logic [8*V-1:0] wdata_q;
  always_ff @(posedge clk) begin
    we_a <= we;
    wbank_a <= wbank;
    wrow_a <= wrow;
    wlane_a <= wlane;
    wdata_a <= wdata;
    for (int r = 0; r < R; r++) we_q[r] <= we_a && (R == 1 || 32'(wlane_a) == r);
    waddr_q <= AW'(32'(wbank_a) * WROWS + 32'(wrow_a));
    wdata_q <= wdata_a;
  end
  // UltraRAM or block RAM as the engine instance asks (URAM; the exploration weighs them per unit), never the
  // tool's pick: Vivado infers UltraRAM only from ram_style "ultra" (UG901), yosys by cost at deep sizes
  for (genvar r = 0; r < R; r++) begin : g_bank
    if (URAM) begin : g_ultra
      (* ram_style = "ultra" *) logic [8*V-1:0] bank[2 * WROWS];
      always_ff @(posedge clk) begin
        if (we_q[r]) bank[waddr_q] <= wdata_q;
        if (re) rdata[r*8*V +: 8*V] <= bank[32'(rbank) * WROWS + 32'(rrow)];
      end
    end else begin : g_block
      (* ram_style = "block" *) logic [8*V-1:0] bank[2 * WROWS];
      always_ff @(posedge clk) begin
        if (we_q[r]) bank[waddr_q] <= wdata_q;
        if (re) rdata[r*8*V +: 8*V] <= bank[32'(rbank) * WROWS + 32'(rrow)];
      end
    end
  end
endmodule
