// The weight RAM with the layout of its rows, and the weights the MAC array takes from it. Weights arrive as
// the constant port's beats (V bytes): a standard conv's in rows of R banks, a depthwise tile's taps in
// [ky][kx] order, one row each, or where the window path takes a kernel row per step (`win_rows`) a row per
// kernel row and stride phase (row ky, or 2 ky + kx mod 2 at stride 2) with its taps in banks 0, 1, ...
// On the window path a depthwise layer feeds array row e the tap of the step's phase that reaches e columns
// further (zero past the phase's taps; rows past P are not summed, mac_array.taps), or, a tap per step, row r
// lane r's weight only (a diagonal), so the array's sums are the lane-wise products.
import engine_pkg::*;

module array_weights #(
  parameter int V = 16,
  parameter int R = 16,
  parameter int P = 1,
  parameter int WROWS = 1024,
  parameter bit URAM = 0
) (
  input  logic clk,
  input  logic [engine_pkg::DESC_BITS-1:0] desc,
  input  logic win,                        // the layer runs on the window path
  input  logic win_rows,                   // ... a depthwise one, a kernel row per step
  input  logic we,                         // a weight beat
  input  logic [23:0] beat,                // its index in the tile's weights
  input  logic first,                      // ... is 0 (a register)
  input  logic [8*V-1:0] wdata,
  input  logic wbank,                      // the half being loaded
  input  logic rbank,                      // the half being read
  input  logic re,
  input  logic [$clog2(WROWS)-1:0] raddr,
  input  logic dw_phase_next,              // the stride phase of the depthwise step the array takes next ...
  input  logic step_en,                    // ... as its pipeline moves
  output logic [8*V-1:0] rdata,            // the row's first bank: a depthwise beat's weights (per-tap path)
  output logic [R*8*V-1:0] array_w         // the row as the array takes it
);
  localparam int DW = 8 * V;
  localparam int RSH = $clog2(R);
  localparam int WAW = $clog2(WROWS);
  localparam int RD = R < P + 1 ? R : P + 1;
  engine_pkg::desc_t d;
  assign d = desc;
  wire dw = d.op == OP_CONV && d.flags[F_DEPTHWISE];
  wire [7:0] phases = d.stride_w == 8'd2 && d.kw > 8'd1 ? 8'd2 : 8'd1;

  // the beat's tap, stepped beside the beats: kx_end (kx is the kernel row's last) a flag kept with it
  logic [7:0] kw_pen_q;
  logic kw_one_q;
  always_ff @(posedge clk) begin
    kw_pen_q <= d.kw - 8'd2;
    kw_one_q <= d.kw == 8'd1;
  end
  logic [7:0] next_kx, next_ky;
  logic next_kx_end;
  wire [7:0] kx = first ? 8'd0 : next_kx;
  wire [7:0] ky = first ? 8'd0 : next_ky;
  wire kx_end = first ? kw_one_q : next_kx_end;
  always_ff @(posedge clk)
    if (we) begin
      next_kx <= kx_end ? 8'd0 : kx + 8'd1;
      next_ky <= kx_end ? ky + 8'd1 : ky;
      next_kx_end <= kx_end ? kw_one_q : kx == kw_pen_q;
    end
  wire [7:0] lane = phases == 8'd2 ? kx >> 1 : kx;
  logic [WAW-1:0] wrow;
  logic [R*DW-1:0] row;
  logic [RSH > 0 ? RSH-1 : 0:0] wlane;
  assign wrow = dw ? (win_rows ? (phases == 8'd2 ? WAW'({ky, kx[0]}) : WAW'(ky)) : WAW'(beat)) : WAW'(beat >> RSH);
  assign wlane = dw ? (win_rows ? lane[RSH > 0 ? RSH-1 : 0:0] : '0) : beat[RSH > 0 ? RSH-1 : 0:0];
  weight_ram #(.V(V), .R(R), .WROWS(WROWS), .URAM(URAM)) wram (
    .clk, .we, .wbank, .wrow, .wlane, .wdata, .rbank, .re, .rrow(raddr), .rdata(row));
  assign rdata = row[DW-1:0];

  // the array rows past a kernel row's taps, for each stride phase: per layer, in registers, so the weights'
  // way into the DSPs holds a phase select, not the descriptor's decode; the taps per phase a register before
  // (the descriptor is steady for cycles before a layer's first step, and its decode and the comparisons did not
  // fit one cycle)
  logic [7:0] taps0_q, taps1_q;
  logic [RD-1:0] past0_q, past1_q;
  logic dw_q;
  always_ff @(posedge clk) begin
    taps0_q <= phases == 8'd2 ? (d.kw + 8'd1) >> 1 : d.kw;
    taps1_q <= phases == 8'd2 ? d.kw >> 1 : d.kw;
    for (int e = 0; e < RD; e++) begin
      past0_q[e] <= 8'(e) >= taps0_q;
      past1_q[e] <= 8'(e) >= taps1_q;
    end
    dw_q <= dw;
  end
  // ... and what each array row takes, as the step enters it: its own bank (keep_q), or on the window path's
  // depthwise diagonal bank 0's byte of its lane (from0_q), else zeros. Registers moved with the steps (and on
  // every idle cycle, when the step's enable is up), so the weights' way into the DSPs is one pick from flip-flops,
  // not a decode of win (at a load near two thousand) and the phase
  logic diag_q;                            // a cycle after the layer's flags: read at its first step, cycles later
  always_ff @(posedge clk) diag_q <= !win_rows && win && dw_q;
  logic [R-1:0] keep_q, from0_q;
  always_ff @(posedge clk)
    if (step_en)
      for (int e = 0; e < R; e++) begin
        keep_q[e] <= !diag_q && !(win_rows && e < RD && (dw_phase_next ? past1_q[e % RD] : past0_q[e % RD]));
        from0_q[e] <= diag_q;
      end
  always_comb
    for (int r = 0; r < R; r++)
      for (int c = 0; c < V; c++)
        array_w[r*DW + 8*c +: 8] = from0_q[r] && c == r ? row[8*r +: 8] : keep_q[r] ? row[r*DW + 8*c +: 8] : 8'd0;
endmodule
