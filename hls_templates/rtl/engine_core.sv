// The engine: runs a program of ABI v3 layer descriptors (docs/kernel-abi.md) over the activation port
// (reads and writes) and the constant port (program, weights, biases, requantisation tables, LUTs).
//
// Decoupled access and execute: the controller walks layers and output-channel tiles and fills the weight
// RAM; the address generator walks a layer's loop nest and emits read runs (a pixel's input channels at a
// kernel tap, a residual operand, ...) tagged with what they are for; the reader turns runs into AXI bursts
// and returns tagged beats in order; the MAC stage consumes one beat per cycle (R x V products for a
// standard conv); the epilogue requantises, applies activations and residuals; results go to the writer or,
// with a fused max pool, to a ring of conv rows that the pool emitter reduces.
import engine_pkg::*;

module engine_core #(
  parameter int V = 16,            // input-channel lanes; the activation port is 8*V bits
  parameter int R = 16,            // output channels in parallel
  parameter int MAXK = 7,          // largest kernel (conv and fused pool)
  parameter int MAX_W = 64,        // widest conv output row with a fused pool
  parameter int WROWS = 1024,      // weight RAM rows (R x V bytes each)
  parameter bit PACK = 1,          // two int8 products per multiplier (DSP48E2)
  parameter int EL = 0,            // epilogue lanes per pass (0: all, one pass)
  parameter int P = 1,             // output pixels per step of the window path (1: no window path)
  parameter int WDEPTH = 2,        // input-window words per bank
  parameter bit DWW = 1,           // the window path's depthwise kernel-row logic (else depthwise is per-tap)
  parameter bit DOUBLE = 0,        // the array's DSPs at clk2x (`--dsp-clock 2x`)
  parameter bit WINO = 0,          // the window path's Winograd unit (its array operands 10-bit)
  parameter bit LANE_PRODUCTS = 1, // the MAC stage's lane-by-lane products (a depthwise conv off the window path,
                                   // L2NORM; mac_stage.sv)
  parameter bit RESIDUAL = 1,      // the epilogue's second-operand stage (ADD, SCALE, a fused residual; epilogue.sv)
  parameter bit TABLES = 1,        // the epilogue's activation tables (a layer with a table activation; epilogue.sv)
  parameter bit WEIGHT_URAM = 0    // the weight RAM in UltraRAM (weight_ram.sv)
) (
  input  logic clk,
  input  logic clk2x,                      // DOUBLE: twice clk, rising edges aligned
  input  logic rst_n,
  input  logic        ap_start,
  output logic        ap_ready,
  output logic        ap_done,
  output logic        ap_idle,
  input  logic [63:0] program_addr,
  input  logic [31:0] layer_count,
  input  logic [63:0] act_base,
  input  logic [63:0] const_base,
  output logic [63:0] cycles,
  output logic [31:0] status,
  output logic [31:0] error_layer,
  output logic [64*9-1:0] counters,
  output logic [31:0] layer_index,     // layer now running (profiling)
  // activation port
  output logic m_act_arvalid, input logic m_act_arready, output logic [63:0] m_act_araddr,
  output logic [7:0] m_act_arlen, output logic [2:0] m_act_arsize, output logic [1:0] m_act_arburst,
  input  logic m_act_rvalid, output logic m_act_rready, input logic [8*V-1:0] m_act_rdata, input logic m_act_rlast,
  output logic m_act_awvalid, input logic m_act_awready, output logic [63:0] m_act_awaddr,
  output logic [7:0] m_act_awlen, output logic [2:0] m_act_awsize, output logic [1:0] m_act_awburst,
  output logic m_act_wvalid, input logic m_act_wready, output logic [8*V-1:0] m_act_wdata,
  output logic [V-1:0] m_act_wstrb, output logic m_act_wlast,
  input  logic m_act_bvalid, output logic m_act_bready,
  // constant port (read only)
  output logic m_const_arvalid, input logic m_const_arready, output logic [63:0] m_const_araddr,
  output logic [7:0] m_const_arlen, output logic [2:0] m_const_arsize, output logic [1:0] m_const_arburst,
  input  logic m_const_rvalid, output logic m_const_rready, input logic [8*V-1:0] m_const_rdata,
  input  logic m_const_rlast
);
  localparam int B = V;                        // bytes per beat
  localparam int DW = 8 * V;
  localparam int G = R > V ? R : V;            // lanes of the epilogue
  localparam int PM = P;                       // output-channel tiles a 1x1 window layer takes per group
  localparam int TW = PM > 1 ? $clog2(PM) : 1;   // bits of a tile's index in its group
  localparam int CB = (8 * G * PM > 256 ? 8 * G * PM : 256) + B;    // bytes collected from the constant port
  localparam int VSH = $clog2(V);
  localparam int RSH = $clog2(R);

  // the descriptor of the running layer: 128 little-endian bytes as fields
  logic [1023:0] desc_raw;
  engine_pkg::desc_t d;
  // what the descriptor implies (its kind, fits, window path and geometry) is decoded once per layer into
  // registers (layer_descriptor), so its multiplies and compares are not in series with the controller, the
  // array, the address generator or the epilogue
  logic layer_fits, is_conv, dw, has_pool, is_gap, need_lut1, need_lut2, win, win_rows, win_items, win_operands;
  logic [7:0] group_max;
  logic [4:0] win_slots;
  logic [31:0] win_phase_words, win_row_words, tile_rows;
  logic [15:0] layer_taps;
  layer_descriptor #(.V(V), .R(R), .MAXK(MAXK), .MAX_W(MAX_W), .WROWS(WROWS), .P(P), .WDEPTH(WDEPTH), .DWW(DWW),
                   .WINO(WINO)) layer_desc (
    .clk, .rst_n, .raw(desc_raw), .desc(d), .fits(layer_fits), .is_conv, .dw, .has_pool, .is_gap, .need_lut1,
    .need_lut2, .win, .win_items, .win_operands, .win_rows, .group_max, .win_slots, .win_phase_words, .win_row_words, .tile_rows, .taps(layer_taps));

  // ---- controller ------------------------------------------------------------------------------------------
  engine_pkg::state_t st;
  (* keep *) wire [15:0] st_is = 16'd1 << st;              // st, one-hot (the state register's logic, below)
  engine_pkg::state_t taken_from;                          // the collection S_TAKE finishes
  engine_pkg::state_t take_to;                             // ... and the state after S_TAKE, set with it
  logic [31:0] layer, layers;
  logic [15:0] tile, tiles;
  logic [15:0] c0;                             // first output channel of the tile
  logic [7:0]  nl;                             // channels a pixel result holds: R (standard conv) or V
  // two banks of weights (and two copies of the tables, layer_tables): the next tile loads while this one runs
  logic        cur_bank;                       // the bank the running tile reads
  // tiles in the running group, and in the one after it (1 but for window layers that take several); in
  // registers over three stages after `tile` or `tiles` moves, which S_TILE waits out (`gs_age`, tile_free_q)
  logic [15:0] gsz_cur, gsz_next, left_q, rest_q, next_tile;
  logic more_tiles;                            // a group follows the running one in the layer
  logic more_layers;                           // a layer follows the running one (S_NEXT tests a register)
  logic [1:0] gs_age;
  logic [2:0] check_age_q;                     // cycles in S_CHECK
  logic check_ready_q;                         // S_CHECK's sixth cycle: the layer's fit is in (layer_descriptor)
  always_ff @(posedge clk) begin
    left_q <= tiles - tile;
    gsz_cur <= left_q < 16'(group_max) ? left_q : 16'(group_max);
    rest_q <= left_q < 16'(group_max) ? 16'd0 : left_q - 16'(group_max);
    more_tiles <= left_q > 16'(group_max);
    more_layers <= layer + 32'd1 < layers;     // layer and layers move in S_IDLE and S_NEXT, cycles before S_NEXT
    gsz_next <= rest_q < 16'(group_max) ? rest_q : 16'(group_max);
    next_tile <= tile + gsz_cur;
  end

  // ---- constant-port reads: one run at a time, collected into cbuf or written to the weight RAM -------
  logic        c_run_valid, c_run_ready, c_issued;
  logic [63:0] c_run_addr;
  logic [23:0] c_run_beats;
  logic        cb_valid, cb_last;
  logic [DW-1:0] cb_data;
  logic [23:0] cb_idx;
  logic        c_idle;
  logic        const_beat;
  logic [8*CB-1:0] cbuf;
  logic [7:0]  c_off;                          // byte offset of the wanted data in cbuf
  // the next constant beat's index in its run, one-hot (zero past cbuf's slots; runs arrive whole, one after
  // another, each ending on its last beat)
  logic [CB/B-1:0] cb_slot_q;
  always_ff @(posedge clk)
    if (!rst_n || (cb_valid && cb_last)) cb_slot_q <= (CB/B)'(1);
    else if (cb_valid) cb_slot_q <= cb_slot_q << 1;

  axi_run_reader #(.DW(DW), .TAGW(1), .QDEPTH(4), .MAX_OUT(4), .AW(ADDR_W)) creader (
    .clk, .rst_n, .run_valid(c_run_valid), .run_ready(c_run_ready), .run_addr(c_run_addr),
    .run_beats(c_run_beats), .run_pad(1'b0), .run_fill(8'd0), .run_tag(1'b0),
    .beat_valid(cb_valid), .beat_ready(1'b1), .beat_data(cb_data), .beat_tag(), .beat_idx(cb_idx),
    .beat_last(cb_last), .idle(c_idle), .beat_read(const_beat),
    .m_arvalid(m_const_arvalid), .m_arready(m_const_arready), .m_araddr(m_const_araddr),
    .m_arlen(m_const_arlen), .m_arsize(m_const_arsize), .m_arburst(m_const_arburst),
    .m_rvalid(m_const_rvalid), .m_rready(m_const_rready), .m_rdata(m_const_rdata), .m_rlast(m_const_rlast));

  // the prefetch: tile + 1's biases, requantisation table and weights while tile runs
  typedef enum logic [1:0] {PF_IDLE, PF_BIAS, PF_RQ, PF_WEIGHTS} pf_t;
  pf_t pf_st;
  logic pf_take, pf_ready;
  logic take_params, take_rq;
  wire pf_collecting = pf_st != PF_IDLE && !pf_take;
  logic main_collecting;
  engine_pkg::state_t cst;                                 // what is being collected: the main sequence's or the prefetch's
  engine_pkg::state_t pf_what;                             // ... what the prefetch collects, a register set
                                                           // with pf_st (its state as the main sequence's)
  logic [15:0] ctile, cc0, cg;
  logic [15:0] pf_tile, pf_g;              // the group the prefetch loads, fixed when it starts: the running
                                           // group may end, and `tile` move on, before the prefetch does
  always_comb begin
    cst = main_collecting ? st : pf_what;
    ctile = main_collecting ? tile : pf_tile;
    cg = main_collecting ? gsz_cur : pf_g;
    cc0 = is_conv && !dw ? ctile << RSH : ctile << VSH;
  end
  wire ld_bank = main_collecting ? cur_bank : !cur_bank;

  logic [7:0] c_want_off;
  logic c_fresh;
  constant_request #(.V(V), .R(R), .PRIMITIVE(PACK)) creq (
    .clk, .desc(d), .by_main(main_collecting), .what_main(st), .what_prefetch(pf_what), .layer, .program_addr, .const_base, .tile(ctile), .c0(cc0), .tiles(cg), .lanes(nl),
    .tile_rows, .taps(layer_taps),
    .run_addr(c_run_addr), .run_beats(c_run_beats), .offset(c_want_off), .fresh(c_fresh));
  // a register: the main sequence collects from the cycle after it enters a collecting state, so what is asked
  // (and whether it is fresh) does not wait on the state's decode; it leaves for S_TAKE on the last beat, with
  // nothing left to collect, so the cycle this flag lags there asks for nothing
  always_ff @(posedge clk)
    main_collecting <= rst_n && (st_is[S_DESC] || (st_is[S_LUT1] && need_lut1) || (st_is[S_LUT2] && need_lut2)
                                 || st_is[S_BIAS] || st_is[S_RQ] || (st_is[S_WEIGHTS] && !is_gap));
  wire collecting = main_collecting || pf_collecting;
  // the run's request, a register: set a cycle after the run out of constant_request is fresh for a collection
  // that has issued none, and cleared as it is taken. While a collection has issued no run its state, and so what
  // it asks, holds (it leaves on its last beat), so the cycle's lag issues no run nobody wants; what decides it (the
  // request unchanged for seven cycles) stays off the enables of what the run's issue sets (c_issued, c_off)
  always_ff @(posedge clk)
    c_run_valid <= rst_n && collecting && !c_issued && c_fresh && !(c_run_valid && c_run_ready);
  wire c_done = cb_valid && cb_last;          // the last beat of the current collection arrives
  // the collection's beats go to cbuf, or to the weight RAM: a cycle late, as a run's first beat comes cycles
  // after the collection starts and its last leaves it
  logic to_cbuf_q, to_wram_q;

  // ---- weight RAM: R banks of V bytes, one row per (tap, input-channel tile); the array's view of it --------
  localparam int WAW = $clog2(WROWS);
  logic          w_we;
  logic [WAW-1:0] w_raddr, mac_raddr, wc_raddr;
  logic          wc_re;
  assign w_raddr = win ? wc_raddr : mac_raddr;
  logic [DW-1:0] w_rdata_bits;
  logic [R*DW-1:0] array_w;
  logic dw_phase_next;
  logic wc_array_en;                       // the window path's array pipeline moves
  assign w_we = to_wram_q && cb_valid;
  array_weights #(.V(V), .R(R), .P(P), .WROWS(WROWS), .URAM(WEIGHT_URAM)) weights (
    .clk, .desc(d), .win, .win_rows, .we(w_we), .beat(cb_idx), .first(cb_slot_q[0]), .wdata(cb_data), .wbank(ld_bank), .rbank(cur_bank),
    .re(!win || wc_re), .raddr(w_raddr), .dw_phase_next, .step_en(wc_array_en),
    .rdata(w_rdata_bits), .array_w);


  // ---- the datapath: address generator -> reader -> MAC stage -> epilogue -> (pool unit) -> writer ---------
  localparam int TAGW = engine_pkg::TAG_BITS;
  logic ag_active, ag_start;
  logic wc_start;                          // ag_start on a window layer, a register of its own
  logic pool_start;                        // ag_start, the pool's own (no reset: a start in a reset's cycles
                                           // leaves nothing the reset does not clear), away from its load
  logic nest_start;                        // ... and on a layer of the loop nest
  logic pix_start;                         // ... its copy for the pixel loops (no reset, as pool_start)
  logic a_run_valid, a_run_ready, a_run_pad;
  logic [63:0] a_run_addr;
  logic [23:0] a_run_beats;
  logic [7:0] a_run_fill;
  logic [TAGW-1:0] a_tag;
  logic [31:0] win_limit;
  address_generator #(.V(V), .B(B), .P(P > 1 ? P : 2), .PRIMITIVE(PACK)) agen (
    .clk, .rst_n, .desc(d), .ag_start, .nest_start, .pix_start, .c0, .nl, .win, .win_limit, .ag_active, .a_run_valid, .a_run_ready, .a_run_addr, .a_run_beats,
    .a_run_pad, .a_run_fill, .a_tag_bits(a_tag));

  logic          ab_valid, ab_ready, ab_last;
  logic [DW-1:0] ab_data;
  logic [TAGW-1:0] ab_tag;
  logic [23:0]   ab_idx;
  logic          a_idle;
  logic          act_beat_read;
  axi_run_reader #(.DW(DW), .TAGW(TAGW), .QDEPTH(128), .MAX_OUT(64), .AW(ADDR_W)) areader (
    .clk, .rst_n, .run_valid(a_run_valid), .run_ready(a_run_ready),
    .run_addr(64'(act_base[ADDR_W-1:0] + ADDR_W'(a_run_addr))),
    .run_beats(a_run_beats), .run_pad(a_run_pad), .run_fill(a_run_fill), .run_tag(a_tag),
    .beat_valid(ab_valid), .beat_ready(ab_ready), .beat_data(ab_data), .beat_tag(ab_tag),
    .beat_idx(ab_idx), .beat_last(ab_last), .idle(a_idle), .beat_read(act_beat_read),
    .m_arvalid(m_act_arvalid), .m_arready(m_act_arready), .m_araddr(m_act_araddr), .m_arlen(m_act_arlen),
    .m_arsize(m_act_arsize), .m_arburst(m_act_arburst), .m_rvalid(m_act_rvalid), .m_rready(m_act_rready),
    .m_rdata(m_act_rdata), .m_rlast(m_act_rlast));

  // pixels between the MAC stage and the epilogue
  localparam int ITEMW = G * ACC_W + G * 8 + DW + 32 + 3 * 16 + TW;
  logic item_valid, mac_busy, mac_beat, mac_ab_ready, mac_item_valid;
  logic [G*ACC_W-1:0] item_acc;
  logic [G*8-1:0] item_b;
  logic [DW-1:0] item_a;
  logic [31:0] item_oaddr;
  logic [15:0] item_n, item_y, item_x;
  logic epi_pop, epi_valid;
  logic epi_pop_ctl, epi_valid_copy;     // the pop again for the queue's pointers, from its head flag's copy
  logic [ITEMW-1:0] epi_dout;
  logic [4:0] epi_count;
  // the array path's room in the epilogue queue for what its stages hold (at most 11 - ARRAY_LATENCY items), in a
  // register from the count, the push and the pop of the cycle before: the count they make, as a compare of
  // the count with its bound and the one either side (a push or a pop moves it by one)
  localparam int MAC_ROOM = 11 - ARRAY_LATENCY;
  logic mac_room_q;
  always_ff @(posedge clk)
    mac_room_q <= epi_count < 5'(MAC_ROOM) || (epi_count == 5'(MAC_ROOM) && (!item_valid || epi_pop_ctl))
                  || (epi_count == 5'(MAC_ROOM + 1) && !item_valid && epi_pop_ctl);
  logic [PM*G*ACC_W-1:0] bias_bits;
  logic [PM*G*18-1:0] mult_bits;
  logic [PM*G*8-1:0] shift_bits;
  logic [PM*G*18-1:0] nmult_bits;
  // The tile's start and S_TILE's way out, as flags that are exact in the cycle they are read, so what fans out
  // into every loop (the starts, below) is an OR of three registers, not a decode of the state. tile_free_q: S_TILE,
  // no prefetch loading and the group's sizes in (gs_age 3), from the cycle before, unless S_TILE left then (it
  // leaves on tile_free_q): exact but for S_TILE's first cycle, which it always waits (gs_age 2 becomes 3; in
  // S_TILE no prefetch starts, and pf_ready cannot move while none runs). tile_go_q: that, and the start's last
  // condition (a prefetched group, or a layer without weights). take_go_q: S_TAKE after the weights' collection
  // (S_TAKE lasts a cycle). gap_go_q: S_WEIGHTS on a pool layer (entered from S_TAKE after S_RQ, left at once).
  logic tile_free_q, tile_go_q, take_go_q, gap_go_q;
  // layer_count == 0, a cycle old: the host's writes of it and of ap_start are two AXI-lite writes, which the
  // control slave takes two cycles apart at least (axil_control: none while a response waits)
  logic no_layers_q;
  always_ff @(posedge clk) no_layers_q <= layer_count == 32'd0;
  always_ff @(posedge clk) begin
    logic free, took;
    free = rst_n && st_is[S_TILE] && !tile_free_q && pf_st == PF_IDLE && !pf_take && gs_age[1];
    took = rst_n && main_collecting && c_done;
    tile_free_q <= free;
    tile_go_q <= free && (pf_ready || (!is_conv && !is_gap));
    take_go_q <= took && !(st_is[S_DESC] || st_is[S_LUT1] || st_is[S_LUT2] || st_is[S_BIAS] || st_is[S_RQ]);
    gap_go_q <= rst_n && !took && st_is[S_TAKE] && taken_from == S_RQ && is_gap;
  end
  // the staged tables become the running ones as a group starts: the cycle after the main sequence took its
  // requantisation entries (its biases were taken before them), or as S_TILE switches to a prefetched group
  logic tables_promote;
  always_ff @(posedge clk)
    tables_promote <= (st_is[S_TAKE] && taken_from == S_RQ) || (tile_free_q && pf_ready);
  layer_tables #(.G(G), .PM(PM), .R(R), .B(B), .CB(CB)) tables (
    .clk, .cbuf, .c_off, .take_bias(take_params && !take_rq), .take_rq(take_params && take_rq),
    .promote(tables_promote), .bias_bits, .mult_bits, .shift_bits, .nmult_bits);
  // an activation table goes into every epilogue lane's copy a beat per cycle, as it arrives
  wire lut_we1 = collecting && cst == S_LUT1 && cb_valid, lut_we2 = collecting && cst == S_LUT2 && cb_valid;
  logic [G*ACC_W-1:0] mac_acc;
  logic [G*8-1:0] mac_b;
  // the MAC array both conv paths share: pixel 0 is the per-tap path's, all P the window path's
  logic [DW-1:0] mac_x_bits;
  localparam int XW = WINO ? 10 : 8;       // the array's operand bits (a Winograd layer's V: 10)
  logic [P*XW*V-1:0] wc_x_bits, array_x, mac_x_wide;
  logic [P*R*ACC_W-1:0] array_sums;
  always_comb begin
    mac_x_wide = '0;
    for (int l = 0; l < V; l++) mac_x_wide[l*XW +: XW] = XW'($signed(mac_x_bits[l*8 +: 8]));
  end
  assign array_x = win_operands ? wc_x_bits : mac_x_wide;
  logic [2*P*V*20-1:0] array_taps;
  // DOUBLE: the DSPs at clk2x take the enable in half a cycle, so it is a register: the window path's copy of its
  // move, which is 1 whenever that path is idle (no group in flight), so whenever `!win || wc_array_en` is
  // a depthwise layer on the window path takes each lane's products (`taps`): the array's lane pairs not summed
  logic split_q;
  always_ff @(posedge clk) split_q <= DWW && win && win_rows;
  mac_array #(.V(V), .R(R), .P(P), .PACK(PACK), .TAPS(DWW), .DOUBLE(DOUBLE), .XW(XW)) array (.clk_i(clk), .clk2x_i(clk2x),
    .en_i(DOUBLE ? wc_array_en : !win || wc_array_en), .split_i(split_q), .x(array_x), .w(array_w), .sums(array_sums),
    .taps(array_taps));
  logic [31:0] mac_oaddr;
  logic [15:0] mac_n, mac_y, mac_x;
  mac_stage #(.V(V), .PACK(PACK), .R(R), .WAW(WAW), .LANE_PRODUCTS(LANE_PRODUCTS)) mac (
    .clk, .rst_n, .nl, .c0, .bias(bias_bits[G*ACC_W-1:0]), .l2(d.op == OP_L2NORM), .l2_mult(d.res_mult_a),
    .l2_shift(d.res_shift), .ab_valid(ab_valid && !win), .ab_ready(mac_ab_ready), .ab_data,
    .ab_tag_bits(ab_tag), .ab_idx, .ab_last, .room(mac_room_q), .w_raddr(mac_raddr),
    .w_rdata(w_rdata_bits), .array_x(mac_x_bits), .array_sums(array_sums[R*ACC_W-1:0]), .item_valid(mac_item_valid), .item_acc(mac_acc), .item_b(mac_b), .item_a,
    .item_oaddr(mac_oaddr), .item_n(mac_n), .item_y(mac_y), .item_x(mac_x), .busy(mac_busy), .mac_beat);

  // the window path of standard convs (P > 1)
  logic wc_item_valid, wc_busy, wc_beat, wc_wait_in, wc_wait_out, wc_res_room;
  // the stream's ready in one term here, not a term of the window path's under a pick here: on the window path a
  // residual beat waits on its queue's room (a register) and any other beat goes in
  wire ab_res = ab_tag[TAG_BITS-1 -: 3] == K_RES;                   // tag_t's first field, its kind
  assign ab_ready = win ? !ab_res || wc_res_room : mac_ab_ready;
  logic [G*ACC_W-1:0] wc_acc;
  logic [G*8-1:0] wc_b;
  logic [31:0] wc_oaddr;
  logic [15:0] wc_n, wc_y, wc_x;
  if (P > 1) begin : g_window
    // its room in the epilogue queue, a cycle old: one result a cycle goes in, so 12 then is at most 13 now
    logic room_q;
    always_ff @(posedge clk) room_q <= epi_count <= 5'd12;
    window_conv #(.V(V), .R(R), .P(P), .WDEPTH(WDEPTH), .WAW(WAW), .DWW(DWW), .PRIMITIVE(PACK), .DOUBLE(DOUBLE),
                  .WINO(WINO)) wconv (
      .clk, .rst_n, .desc(d), .rows_mode(win_rows), .slots(win_slots), .phase_words(win_phase_words), .row_words(win_row_words),
      .start(wc_start), .group_tiles(gsz_cur[7:0]), .c0, .bias(bias_bits), .ab_valid(ab_valid && win), .ab_data, .ab_tag_bits(ab_tag),
      .ab_last, .res_room(wc_res_room), .load_limit(win_limit), .w_re(wc_re), .w_raddr(wc_raddr),
      .array_x(wc_x_bits), .array_en(wc_array_en), .array_sums, .array_taps, .dw_phase_next,
      .room(room_q), .item_valid(wc_item_valid), .item_acc(wc_acc), .item_b(wc_b), .item_oaddr(wc_oaddr), .item_tile(wc_tile),
      .item_n(wc_n), .item_y(wc_y), .item_x(wc_x), .busy(wc_busy), .mac_beat(wc_beat), .wait_input(wc_wait_in),
      .wait_output(wc_wait_out));
  end else begin : g_no_window
    assign win_limit = '1; assign wc_re = 1'b1; assign wc_array_en = 1'b1; assign wc_raddr = '0; assign wc_item_valid = 1'b0;
    assign wc_x_bits = '0; assign wc_tile = '0; assign dw_phase_next = 1'b0; assign wc_acc = '0; assign wc_b = '0; assign wc_res_room = 1'b1; assign wc_oaddr = '0; assign wc_n = '0; assign wc_y = '0; assign wc_x = '0;
    assign wc_busy = 1'b0; assign wc_beat = 1'b0; assign wc_wait_in = 1'b0; assign wc_wait_out = 1'b0;
  end
  assign item_valid = mac_item_valid || wc_item_valid;
  assign item_acc = win_items ? wc_acc : mac_acc;
  assign item_b = win_items ? wc_b : mac_b;
  assign item_oaddr = win_items ? wc_oaddr : mac_oaddr;
  assign item_n = win_items ? wc_n : mac_n;
  assign item_y = win_items ? wc_y : mac_y;
  assign item_x = win_items ? wc_x : mac_x;
  logic [TW-1:0] item_tile, wc_tile;
  assign item_tile = win_items ? wc_tile : '0;
  sync_fifo #(.W(ITEMW), .DEPTH(16), .OUT_REG(1'b1)) epi_fifo (
    .clk, .rst_n, .push(item_valid),
    .din({item_acc, item_b, item_a, item_oaddr, item_n, item_y, item_x, item_tile}),
    .pop(epi_pop), .pop_ctl(epi_pop_ctl), .dout(epi_dout), .valid(epi_valid), .valid_copy(epi_valid_copy),
    .count(epi_count));

  logic e_valid, e_busy;
  logic [G*8-1:0] e_q;
  logic [31:0] e_oaddr;
  logic [15:0] e_n, e_y, e_x;
  logic [G*ACC_W-1:0] e_in_acc;
  logic [G*8-1:0] e_in_b;
  logic [DW-1:0] e_in_a;
  logic [31:0] e_in_oaddr;
  logic [15:0] e_in_n, e_in_y, e_in_x;
  logic [TW-1:0] e_in_tile;
  assign {e_in_acc, e_in_b, e_in_a, e_in_oaddr, e_in_n, e_in_y, e_in_x, e_in_tile} = epi_dout;
  logic epi_ready;
  sliced_epilogue #(.V(V), .G(G), .E(EL == 0 ? G : EL), .PM(PM), .TB(B), .PRIMITIVE(PACK),
                   .RESIDUAL(RESIDUAL), .TABLES(TABLES)) epi (
    .clk, .rst_n, .desc(d), .mult(mult_bits), .shift(shift_bits), .nmult(nmult_bits), .lut_we1, .lut_we2,
    .lut_waddr(cb_idx[$clog2(256 / B)-1:0]), .lut_wdata(cb_data),
    .in_ready(epi_ready), .in_valid(epi_pop), .in_tile(e_in_tile), .in_acc(e_in_acc), .in_b(e_in_b), .in_a(e_in_a), .in_oaddr(e_in_oaddr), .in_n(e_in_n),
    .in_y(e_in_y), .in_x(e_in_x), .out_valid(e_valid), .out_q(e_q), .out_oaddr(e_oaddr), .out_n(e_n),
    .out_y(e_y), .out_x(e_x), .busy(e_busy));

  // results, straight from the epilogue or through the fused pool, queue for the writer
  localparam int WITEMW = G * 8 + 32;
  logic wq_push, wq_pop, wq_valid;
  logic [WITEMW-1:0] wq_din, wq_dout;
  localparam int WQ_DEPTH = 32;
  logic [5:0] wq_count;
  logic p_room, p_valid, p_done, p_busy;
  logic wq_room_pool, wq_room_epi;
  logic [G*8-1:0] p_q;
  logic [31:0] p_oaddr;
  pool_unit #(.G(G), .MAXK(MAXK), .MAX_W(MAX_W), .P(P > 1 ? P : 2)) pool (
    .clk, .rst_n, .desc(d), .start(pool_start), .c0, .in_valid(e_valid), .in_q(e_q), .in_n(e_n), .in_y(e_y),
    .in_x(e_x), .room(p_room), .out_valid(p_valid), .out_q(p_q), .out_oaddr(p_oaddr),
    .out_room(wq_room_pool), .done(p_done), .busy(p_busy));
  // room for the result popped and for every one inside the epilogue's pipeline; both from last cycle's fill,
  // one result more cautious, so the queue's pointers reach no further than these registers
  always_ff @(posedge clk) begin
    wq_room_pool <= wq_count <= 6'd25;
    wq_room_epi <= wq_count <= 6'(WQ_DEPTH - EPI_LATENCY - 6);
  end
  assign epi_pop = epi_valid && epi_ready && (has_pool ? p_room : wq_room_epi);
  // (epi_pop loads the epilogue's operands, over four hundred flip-flops: the queue's pointers read this one)
  assign epi_pop_ctl = epi_valid_copy && epi_ready && (has_pool ? p_room : wq_room_epi);
  assign wq_push = has_pool ? p_valid : e_valid;
  assign wq_din = has_pool ? {p_q, p_oaddr} : {e_q, e_oaddr};
  sync_fifo #(.W(WITEMW), .DEPTH(WQ_DEPTH), .OUT_REG(1'b1)) wq (
    .clk, .rst_n, .push(wq_push), .din(wq_din), .pop(wq_pop), .pop_ctl(wq_pop), .dout(wq_dout),
    .valid(wq_valid), .valid_copy(), .count(wq_count));

  logic wr_idle;
  logic act_beat_written;
  result_writer #(.V(V), .G(G)) rwriter (
    .clk, .rst_n, .nl, .act_base, .in_valid(wq_valid), .in_pop(wq_pop), .in_q(wq_dout[WITEMW-1:32]),
    .in_oaddr(wq_dout[31:0]), .idle(wr_idle), .beat_written(act_beat_written),
    .m_awvalid(m_act_awvalid), .m_awready(m_act_awready), .m_awaddr(m_act_awaddr), .m_awlen(m_act_awlen),
    .m_awsize(m_act_awsize), .m_awburst(m_act_awburst), .m_wvalid(m_act_wvalid), .m_wready(m_act_wready),
    .m_wdata(m_act_wdata), .m_wstrb(m_act_wstrb), .m_wlast(m_act_wlast), .m_bvalid(m_act_bvalid),
    .m_bready(m_act_bready));

  // registered: everything was idle last cycle, and nothing starts again in S_DRAIN
  logic drained;
  always_ff @(posedge clk)
    drained <= !ag_active && a_idle && !mac_busy && !wc_busy && !epi_valid && !e_busy && !wq_valid
               && (!has_pool || p_done) && !p_busy && wr_idle;

  // ---- controller sequence ---------------------------------------------------------------------------------
  wire streaming = (st_is[S_RUN] || st_is[S_DRAIN]) && (ag_active || !a_idle);
  // why the array is not taking a beat: no input yet, results backing up, or the tile's tail; on the window
  // path it waits for input rows or for the epilogue
  perf_counters #(.B(B)) perf (
    .clk, .rst_n, .clear(st_is[S_IDLE] && ap_start), .mac_beat(mac_beat || wc_beat),
    .wait_input(win ? wc_wait_in : streaming && ab_ready && !ab_valid),
    .wait_weights(main_collecting || st_is[S_TAKE] || (st_is[S_TILE] && pf_st != PF_IDLE)),
    .wait_output(win ? wc_wait_out : streaming && ab_valid && !ab_ready),
    .draining((st_is[S_RUN] || st_is[S_DRAIN]) && (win ? !wc_busy : !streaming)),
    .act_beat_read, .const_beat_read(const_beat), .act_beat_written, .counters);
  assign ap_idle = st_is[S_IDLE];
  assign ap_ready = st_is[S_IDLE] && ap_start;
  // the run's clock cycles in two 32-bit halves, the high half stepping on a flag set as the low half reaches all
  // ones: no 64-bit carry chain
  logic [31:0] cycles_lo_q, cycles_hi_q;
  logic cycles_lo_ones_q;
  wire cycles_clear = st_is[S_IDLE] && ap_start;            // nothing is collected in S_IDLE
  always_ff @(posedge clk)
    if (!rst_n || cycles_clear) begin
      cycles_lo_q <= '0; cycles_hi_q <= '0; cycles_lo_ones_q <= 1'b0;
    end else if (!st_is[S_IDLE]) begin
      cycles_lo_q <= cycles_lo_q + 32'd1;
      cycles_lo_ones_q <= cycles_lo_q == 32'hFFFF_FFFE;
      if (cycles_lo_ones_q) cycles_hi_q <= cycles_hi_q + 32'd1;
    end
  assign cycles = {cycles_hi_q, cycles_lo_q};
  assign layer_index = layer;

  // S_CHECK's registers: its sixth cycle, the layer's tile count and channels per pixel result (no collection
  // ends in S_CHECK, so their enables are the state's decode alone, not behind the collection's last beat as the
  // controller's other registers)
  always_ff @(posedge clk) begin
    check_age_q <= rst_n && st_is[S_CHECK] ? check_age_q + 3'd1 : 3'd0;
    check_ready_q <= rst_n && st_is[S_CHECK] && check_age_q == 3'd4;
    if (st_is[S_CHECK]) begin
      tiles <= is_conv ? (dw ? d.out_c >> VSH : d.out_c >> RSH) : (is_gap ? d.out_c >> VSH : 16'd1);
      nl <= (is_conv && !dw) ? 8'(R) : 8'(V);
    end
  end

  // a collected beat into its slot of cbuf: a bit per slot, no index compare; data, so the reset is not among its
  // enables (it fans out to every slot's)
  always_ff @(posedge clk)
    if (to_cbuf_q && cb_valid)
      for (int k = 0; k < CB / B; k++) if (cb_slot_q[k]) cbuf[k * DW +: DW] <= cb_data;

  // the tile's first output channel, as S_TILE leaves: in a block of its own from flat tests of registers (the
  // state machine's first test, the main collection's last beat, is false in S_TILE, as below)
  always_ff @(posedge clk)
    if (rst_n && tile_free_q)
      c0 <= is_conv && !dw ? tile << RSH : tile << VSH;

  // a tile starts (S_RUN next) from the weights' collection taken, a tile whose constants are in (prefetched, or
  // none to load), or a pool layer's weightless step: flat tests of registers, apart from the state machine,
  // since the window path's start fans out into every loop of `window_conv`. The state machine's first test (the
  // main collection's last beat) is false in these three states, so it is left out: S_TILE and S_WEIGHTS follow
  // no collecting state (main_collecting is 0 there), and in S_TAKE the last beat came the cycle before, with
  // no run issued since (one run at a time: its beats come cycles after the request)
  always_ff @(posedge clk) begin
    logic go;
    go = take_go_q || tile_go_q || gap_go_q;
    ag_start <= rst_n && go;
    pool_start <= go;
    wc_start <= rst_n && go && win;
    nest_start <= rst_n && go && !win;
    pix_start <= go && !win;
  end

  // the tile: set in S_CHECK and S_NEXT, states no collecting state precedes (main_collecting is 0 there), so
  // apart from the state machine's first test (a collection's last beat, through the constant reader's load)
  always_ff @(posedge clk)
    if (rst_n && st_is[S_CHECK]) tile <= '0;
    else if (rst_n && st_is[S_NEXT] && more_tiles) tile <= next_tile;
  // the layer: in a block of its own, as S_IDLE and S_NEXT are never collecting states' next (main_collecting is 0
  // there), so the collection's end, which the state block tests first, is not in its enable
  always_ff @(posedge clk)
    if (!rst_n || (st_is[S_IDLE] && ap_start)) layer <= '0;
    else if (st_is[S_NEXT] && !more_tiles && more_layers) layer <= layer + 32'd1;

  // The state register. Its next state and whether it moves are built from a one-hot decode of it (kept: a LUT
  // per state, st_is) and one condition per waiting state, so its enable is a decode, an AND-OR and an OR, not a chain
  // that synthesis threads through the decode. A collection's last beat (took) goes to S_TAKE from any state that
  // collects; S_DESC, S_BIAS and S_RQ leave only so. The state block below keeps what each state does besides.
  (* keep *) logic st_leave;
  (* keep *) engine_pkg::state_t st_next;
  always_comb begin
    st_leave = (st_is[S_IDLE] && ap_start) || st_is[S_TAKE] || st_is[S_DECODE] || st_is[S_SIZE]
               || (st_is[S_CHECK] && check_ready_q) || (st_is[S_LUT1] && !need_lut1)
               || (st_is[S_LUT2] && !need_lut2) || tile_free_q || (st_is[S_WEIGHTS] && is_gap)
               || (st_is[S_RUN] && !ag_start && !ag_active) || (st_is[S_DRAIN] && drained) || st_is[S_NEXT]
               || st_is[S_FINISH];
    // an OR of each state's next, masked by its decode (no priority among them: one is set)
    st_next = engine_pkg::state_t'(
        ({4{st_is[S_IDLE]}} & (no_layers_q ? S_FINISH : S_DESC))
      | ({4{st_is[S_TAKE]}} & take_to)
      | ({4{st_is[S_DECODE]}} & S_SIZE)          // the decoded descriptor's registers take it in S_DECODE
      | ({4{st_is[S_SIZE]}} & S_CHECK)           // a tile's weight rows, from their products
      | ({4{st_is[S_CHECK]}} & (layer_fits ? S_LUT1 : S_FINISH))
      | ({4{st_is[S_LUT1]}} & S_LUT2)
      | ({4{st_is[S_LUT2]}} & S_TILE)
      | ({4{st_is[S_TILE]}} & (pf_ready || (!is_conv && !is_gap) ? S_RUN : is_conv ? S_BIAS : S_RQ))
      | ({4{st_is[S_WEIGHTS]}} & S_RUN)
      | ({4{st_is[S_RUN]}} & S_DRAIN)
      | ({4{st_is[S_DRAIN]}} & S_NEXT)
      | ({4{st_is[S_NEXT]}} & (more_tiles ? S_TILE : more_layers ? S_DESC : S_FINISH)));   // S_FINISH: S_IDLE, 0
  end
  always_ff @(posedge clk)
    if (!rst_n) st <= S_IDLE;
    else if (main_collecting && c_done) st <= S_TAKE;
    else if (st_leave) st <= st_next;

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      c_issued <= 1'b0; ap_done <= 1'b0; cur_bank <= 1'b0; pf_st <= PF_IDLE; pf_what <= S_WEIGHTS; pf_take <= 1'b0;
      pf_ready <= 1'b0; take_params <= 1'b0; status <= '0;
      error_layer <= '0; c_off <= '0; gs_age <= '0; to_cbuf_q <= 1'b0; to_wram_q <= 1'b0;
    end else begin
      ap_done <= 1'b0;
      if (gs_age != 2'd3) gs_age <= gs_age + 2'd1;
      if (c_run_valid && c_run_ready) begin
        c_issued <= 1'b1;
        c_off <= c_want_off;
      end
      to_cbuf_q <= collecting && cst != S_WEIGHTS;
      to_wram_q <= collecting && cst == S_WEIGHTS;
      // a tile's biases or requantisation table are all in cbuf: into the bank they were loaded for, next cycle
      take_params <= collecting && c_done && (cst == S_BIAS || cst == S_RQ);
      take_rq <= cst == S_RQ;
      if (pf_collecting && c_done) begin
        c_issued <= 1'b0;
        pf_take <= 1'b1;
      end
      if (pf_take) begin
        pf_take <= 1'b0;
        case (pf_st)
          PF_BIAS: begin
            pf_st <= PF_RQ;
            pf_what <= S_RQ;
          end
          PF_RQ: begin
            pf_st <= is_gap ? PF_IDLE : PF_WEIGHTS;
            pf_what <= S_WEIGHTS;
            pf_ready <= is_gap;
          end
          default: begin
            pf_st <= PF_IDLE;
            pf_ready <= 1'b1;
          end
        endcase
      end
      // a tile starts: prefetch the next one of the layer
      if (ag_start && (is_conv || is_gap) && more_tiles) begin
        pf_st <= is_conv ? PF_BIAS : PF_RQ;
        pf_what <= is_conv ? S_BIAS : S_RQ;
        pf_tile <= next_tile;
        pf_g <= gsz_next;
      end
      if (main_collecting && c_done) begin    // every beat is in: take them next cycle
        c_issued <= 1'b0;
        taken_from <= st;
        take_to <= st_is[S_DESC] ? S_DECODE : st_is[S_LUT1] ? S_LUT2 : st_is[S_LUT2] ? S_TILE
                   : st_is[S_BIAS] ? S_RQ : st_is[S_RQ] ? S_WEIGHTS : S_RUN;   // S_WEIGHTS: the weight RAM is full
      end else case (st)
        S_IDLE: if (ap_start) begin
          layers <= layer_count;
          status <= '0;
        end
        S_TAKE: begin
          // the program header puts the descriptor 16 bytes into a beat; a run's offset is below a beat
          // (constant_request); layer_tables takes a table, layer_tables' banks the biases and requantisation
          if (taken_from == S_DESC) desc_raw <= cbuf[8 * 32'(c_off[VSH-1:0]) +: 1024];
        end
        S_CHECK: begin
          gs_age <= '0;
          if (!check_ready_q) begin
            // the first five cycles: `fits` comes from the descriptor's products (layer_descriptor)
          end else if (!layer_fits) begin
            status <= 32'd1;
            error_layer <= layer;
          end
        end
        S_TILE: if (tile_free_q && pf_ready) begin   // prefetched while the last tile ran: switch banks and go
          pf_ready <= 1'b0;
          cur_bank <= !cur_bank;
        end
        S_NEXT: if (more_tiles) gs_age <= '0;
        S_FINISH: ap_done <= 1'b1;
        default: ;
      endcase
    end
  end

endmodule
