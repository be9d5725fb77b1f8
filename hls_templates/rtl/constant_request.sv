// What the controller collects from the constant port next, as one read run of whole beats: a layer's
// descriptor (from the program), its lookup tables, or a group of output-channel tiles' biases,
// requantisation table or weights (a depthwise tile's kh x kw x V bytes; a standard tile's kh x kw x in_c x R,
// for each tile of the group). `offset`: where the wanted bytes start in the first beat.
// The run is computed from the request's fields over seven registered stages (its two products on DSP48E2s with
// every register): `fresh` says the run out is the one asked for now, seven cycles after the request last changed
// (what is collected, and for whom: the main sequence or the prefetch; its tile, layer and descriptor do not change
// while it is asked for). A tile's bytes lie below 2^26 (it fits the weight RAM) and the tiles below 2^16, so
// the 27 x 18-bit products are exact.
import engine_pkg::*;

module constant_request #(
  parameter int V = 16,
  parameter int R = 16,
  parameter bit PRIMITIVE = 1'b1       // dsp_mult's: the DSP48E2 primitive in synthesis (UltraScale+)
) (
  input  logic clk,
  input  logic [engine_pkg::DESC_BITS-1:0] desc,
  input  logic by_main,                // the main sequence asks, not the prefetch
  input  engine_pkg::state_t what_main,      // what the main sequence would ask for ...
  input  engine_pkg::state_t what_prefetch,  // ... and the prefetch
  input  logic [31:0] layer,
  input  logic [63:0] program_addr,
  input  logic [63:0] const_base,
  input  logic [15:0] tile,            // the first tile of the group
  input  logic [15:0] c0,              // its first output channel
  input  logic [15:0] tiles,           // tiles in the group
  input  logic [7:0]  lanes,           // channels a tile's tables hold
  input  logic [31:0] tile_rows,       // weight RAM rows of a standard conv's tile (layer_descriptor)
  // a depthwise tile's taps, kh x kw (layer_descriptor's, three cycles after the descriptor, which is steady for
  // many more before a tile's weights are asked for)
  input  logic [15:0] taps,
  output logic [63:0] run_addr,
  output logic [23:0] run_beats,
  output logic [7:0]  offset,
  output logic        fresh
);
  localparam int VSH = $clog2(V);
  localparam int RSH = $clog2(R);
  engine_pkg::desc_t d;
  assign d = desc;

  // C0: the request in registers (whose it is picks among inputs that settle late in the cycle), and whether the
  // layer is depthwise (the descriptor changes no later than the request)
  engine_pkg::state_t what;
  logic [15:0] tile_c0, c0_c0, tiles_c0;
  logic dw;
  always_ff @(posedge clk) begin
    what <= by_main ? what_main : what_prefetch;
    dw <= d.op == OP_CONV && d.flags[F_DEPTHWISE];
    tile_c0 <= tile; c0_c0 <= c0; tiles_c0 <= tiles;
  end


  // C1: the run's parts: a base, a shifted index (a descriptor or table row), a tile's weights as a product
  // (a tile's bytes are per-layer: tile_rows x VEC x PE rows, or kh x kw x VEC for depthwise), its length as one
  logic [63:0] base_q, index_q;
  logic [15:0] tile_q, len_b_q;
  logic [26:0] tile_bytes_q, len_a_q;            // below 2^26: a tile fits the weight RAM
  always_ff @(posedge clk) begin
    logic [26:0] tile_bytes;
    tile_bytes = dw ? 27'({16'd0, taps} << VSH) : 27'(tile_rows << (VSH + RSH));
    base_q <= const_base;
    index_q <= '0;
    tile_q <= '0;
    tile_bytes_q <= tile_bytes;
    len_a_q <= 27'd0;
    // the tiles the run spans: one pick from the state's decode, apart from the case below
    len_b_q <= what == S_BIAS || what == S_RQ || (what == S_WEIGHTS && !dw) ? tiles_c0 : 16'd1;
    case (what)
      S_DESC: begin base_q <= program_addr + 64'd16; index_q <= 64'(layer) << 7; len_a_q <= 27'd128; end
      S_LUT1: begin base_q <= const_base + 64'(d.lut1_addr); len_a_q <= 27'd256; end
      S_LUT2: begin base_q <= const_base + 64'(d.lut2_addr); len_a_q <= 27'd256; end
      S_BIAS: begin
        base_q <= const_base + 64'(d.bias_addr); index_q <= 64'(c0_c0) << 2;
        len_a_q <= 27'(lanes) << 2;
      end
      S_RQ: begin
        base_q <= const_base + 64'(d.requant_addr); index_q <= 64'(c0_c0) << 3;
        len_a_q <= 27'(lanes) << 3;
      end
      S_WEIGHTS: begin
        base_q <= const_base + 64'(d.weight_addr); tile_q <= tile_c0;
        len_a_q <= tile_bytes;
      end
      default: base_q <= '0;
    endcase
  end

  // C2-C4: the group's offset (its first tile times a tile's bytes) and length (a row's or tile's bytes times the
  // tiles) on DSP48E2s; C5: the address and length; C6: the run of whole beats
  logic signed [41:0] at_p;                      // below 2^26 x 2^16
  logic signed [31:0] len_p;                     // its low 32 bits, as the length's register holds
  dsp_mult #(.AW(27), .BW(18), .PW(42), .PRIMITIVE(PRIMITIVE)) tile_offset (
    .clk_i(clk), .en_i(1'b1), .a_i(tile_bytes_q), .b_i({2'b00, tile_q}), .c_i('0), .p_o(at_p));
  dsp_mult #(.AW(27), .BW(18), .PW(32), .PRIMITIVE(PRIMITIVE)) run_length (
    .clk_i(clk), .en_i(1'b1), .a_i(len_a_q), .b_i({2'b00, len_b_q}), .c_i('0), .p_o(len_p));
  logic [63:0] addr_q;
  logic [31:0] len_q;
  always_ff @(posedge clk) begin
    addr_q <= base_q + index_q + 64'(at_p);
    len_q <= len_p;
    run_addr <= addr_q & ~64'(V - 1);
    run_beats <= 24'((64'(addr_q[VSH-1:0]) + 64'(len_q) + 64'(V - 1)) >> VSH);
    offset <= 8'(addr_q[VSH-1:0]);
  end

  // the run out now was asked for seven cycles ago: fresh while the request has not changed since. Whether each
  // of the last six cycles' requests equalled the one before is a shift register of flags, their conjunction a
  // register (settled_q); this cycle's is compared with last cycle's for each asker, and whose it is picks last,
  // so `fresh` is one LUT after by_main
  localparam int KW = 1 + 4;                       // by_main and the state (engine_pkg::state_t, 4 bits)
  logic [KW-1:0] asked_q;                          // last cycle's request
  logic [4:0] same_q;                              // the request equalled the one before, one to five cycles ago
  logic settled_q;                                 // ... and this cycle's: the last seven cycles' requests were one
  wire [KW-1:0] asking = {by_main, by_main ? what_main : what_prefetch};
  wire same_now = asking == asked_q;
  always_ff @(posedge clk) begin
    asked_q <= asking;
    same_q <= {same_q[3:0], same_now};
    settled_q <= same_now && &same_q;
  end
  wire same_main = asked_q[KW-1] && asked_q[0 +: KW-1] == what_main;
  wire same_prefetch = !asked_q[KW-1] && asked_q[0 +: KW-1] == what_prefetch;
  assign fresh = settled_q && (by_main ? same_main : same_prefetch);
endmodule
