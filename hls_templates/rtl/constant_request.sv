// What the controller collects from the constant port next, as one read run of whole beats: a layer's
// descriptor (from the program), its lookup tables, or a group of output-channel tiles' biases,
// requantisation table or weights (a depthwise tile's kh x kw x V bytes; a standard tile's kh x kw x in_c x R,
// for each tile of the group). `offset`: where the wanted bytes start in the first beat.
// The run is computed from the request's fields and registered: `fresh` says the registered run is the one
// asked for now, a cycle after the request last changed (what is collected, and for whom: the main sequence or
// the prefetch; its tile and layer do not change while it is asked for).
import engine_pkg::*;

module constant_request #(
  parameter int V = 16,
  parameter int R = 16
) (
  input  logic clk,
  input  logic [engine_pkg::DESC_BITS-1:0] desc,
  input  logic by_main,                // the main sequence asks, not the prefetch
  input  engine_pkg::state_t what,
  input  logic [31:0] layer,
  input  logic [63:0] program_addr,
  input  logic [63:0] const_base,
  input  logic [15:0] tile,            // the first tile of the group
  input  logic [15:0] c0,              // its first output channel
  input  logic [15:0] tiles,           // tiles in the group
  input  logic [7:0]  lanes,           // channels a tile's tables hold
  output logic [63:0] run_addr,
  output logic [23:0] run_beats,
  output logic [7:0]  offset,
  output logic        fresh
);
  localparam int VSH = $clog2(V);
  engine_pkg::desc_t d;
  assign d = desc;
  wire dw = d.op == OP_CONV && d.flags[F_DEPTHWISE];
  logic [63:0] addr;
  logic [31:0] len;
  always_comb begin
    addr = '0;
    len = 32'd0;
    case (what)
      S_DESC: begin addr = program_addr + 64'd16 + 64'(layer) * 64'd128; len = 32'd128; end
      S_LUT1: begin addr = const_base + 64'(d.lut1_addr); len = 32'd256; end
      S_LUT2: begin addr = const_base + 64'(d.lut2_addr); len = 32'd256; end
      S_BIAS: begin addr = const_base + 64'(d.bias_addr) + 64'(c0) * 64'd4; len = 32'(lanes) * 32'd4 * 32'(tiles); end
      S_RQ:   begin addr = const_base + 64'(d.requant_addr) + 64'(c0) * 64'd8; len = 32'(lanes) * 32'd8 * 32'(tiles); end
      S_WEIGHTS: begin
        if (dw) begin
          addr = const_base + 64'(d.weight_addr) + 64'(tile) * 64'(d.kh) * 64'(d.kw) * 64'(V);
          len = 32'(d.kh) * 32'(d.kw) * 32'(V);
        end else begin
          addr = const_base + 64'(d.weight_addr) + 64'(tile) * 64'(d.kh) * 64'(d.kw) * 64'(d.in_c) * 64'(R);
          len = 32'(d.kh) * 32'(d.kw) * 32'(d.in_c) * 32'(R) * 32'(tiles);
        end
      end
      default: ;
    endcase
  end
  engine_pkg::state_t what_q;
  logic by_main_q;
  always_ff @(posedge clk) begin
    run_addr <= addr & ~64'(V - 1);
    run_beats <= 24'((64'(addr[VSH-1:0]) + 64'(len) + 64'(V - 1)) >> VSH);
    offset <= 8'(addr[VSH-1:0]);
    what_q <= what;
    by_main_q <= by_main;
  end
  assign fresh = what_q == what && by_main_q == by_main;
endmodule
