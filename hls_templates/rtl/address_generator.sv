// Address generator: the loop nest of one layer (one output-channel tile of it) as a stream of read runs,
// each tagged with what its beats are for (engine_pkg::tag_t), one run per cycle, AG_LATENCY cycles after the
// nest reaches it: P1 decodes the run (its tag, the operands of its two pixel addresses, the input tap's
// coordinates), then pixel_address.sv takes engine_pkg::ADDRESS_LATENCY stages for each address (adds, and two
// registered DSP48E2 products). The MAC stage walks the same nest by the tags alone. On the window path (`win`) the runs are
// the layer's input rows in order instead (a whole row where its channels are contiguous, else a pixel at a
// time), each issued only once the window has room for it (`win_limit`).
import engine_pkg::*;

module address_generator #(
  parameter int V = 16,
  parameter int B = 16,            // bytes per activation beat
  parameter int P = 2,             // the window path's pixels per step (a Winograd group's tiles)
  parameter bit PRIMITIVE = 1'b1   // dsp_mult's: the DSP48E2 primitive in synthesis (UltraScale+)
) (
  input  logic clk,
  input  logic rst_n,
  input  logic [engine_pkg::DESC_BITS-1:0] desc,
  input  logic        ag_start,    // begin the tile's nest
  input  logic        nest_start,  // ... on a layer that walks the loop nest (not the window path), a register of
                                   // its own: it resets the tap and pixel loops, so their step logic is not behind
                                   // ag_start's load (every register of the tile's start)
  input  logic        pix_start,   // nest_start again, the pixel loops' own (away from the tap loop's load)
  input  logic [15:0] c0,          // first output channel of the tile
  input  logic [7:0]  nl,          // channels of a pixel result (PE rows, or lanes)
  input  logic        win,         // the layer takes the window path
  input  logic [31:0] win_limit,   // input rows (over the batch) below this may be loaded
  output logic        ag_active,
  output logic        a_run_valid,
  input  logic        a_run_ready,
  output logic [63:0] a_run_addr,  // offset in the activation region
  output logic [23:0] a_run_beats,
  output logic        a_run_pad,
  output logic [7:0]  a_run_fill,
  output logic [engine_pkg::TAG_BITS-1:0] a_tag_bits
);
  `include "engine_functions.svh"
  localparam int VSH = $clog2(V);
  engine_pkg::desc_t d;
  assign d = desc;

  // the layer's op, a register per kind, from which every per-layer register below is decoded a cycle later: the
  // descriptor is steady for cycles before a tile starts
  logic op_conv, op_pool, op_copy, op_l2, op_gap, op_add, op_scale;
  always_ff @(posedge clk) begin
    op_conv <= d.op == OP_CONV; op_pool <= d.op == OP_MAXPOOL; op_copy <= d.op == OP_COPY;
    op_l2 <= d.op == OP_L2NORM; op_gap <= d.op == OP_GAP; op_add <= d.op == OP_ADD; op_scale <= d.op == OP_SCALE;
  end
  // the layer's kind and the nest's loop ends (each bound less one), in registers, so the nest's step tests
  // equalities of registers
  logic is_conv, has_res, up, has_ph1, contiguous;
  logic wx_one, in_w_one;                // a window row is one run: its channels contiguous, or one pixel
  logic [15:0] conv_w_pen, in_w_last, in_w_pen2, in_h_last, conv_h_last;
  logic in_w_two;
  logic [15:0] in_h_pen;
  logic in_h_one;
  // lead_q's: within an image between -kh - stride and in_h + pad_t, so 18 bits carry it
  logic signed [17:0] lead_top;          // what lead_q starts an image at: -(kh - pad_t - 1)
  logic due_top;                         // res_due at an image's start
  logic wres;                            // a Winograd layer's residual: in the order its tiles leave (below)
  logic w_narrow_top, w_last_top;        // a row's first group is narrower than 2P columns; is its last
  logic res_x_top;                       // res_x_end at a row's start: a direct layer's row is one pixel
  logic [15:0] res_rows_q;               // output rows a row (a Winograd layer's pair) of residuals moves on
  logic signed [17:0] res_lead_q;        // ... the input rows its last input row moves on
  // ... and the nest's loops as loop_bound's registers: each bound less two (a counter's end flag is set as it steps
  // from the one before its last) and whether it is one; the kernel loops' less three and whether they are two
  // (their flags that they are one step from their ends, kx_at_pen and ky_at_pen, are set the same way)
  logic [15:0] y_pen2, x_pen2, c_pen2, n_pen;
  logic        y_two, x_two, c_two;
  logic [7:0]  ky_pen2, kx_pen2;
  logic        ky_two, kx_two;
  logic        kx_one, ky_one, c_one, x_one, y_one, n_one;
  logic [15:0] lim_y, lim_x, lim_c;      // the loops' bounds for the layer's kind, in registers (the
                                         // flags below a cycle later: the descriptor is steady for many)
  logic [7:0]  lim_ky, lim_kx;
  always_ff @(posedge clk) begin
    lim_c <= 16'd1; lim_ky <= 8'd1; lim_kx <= 8'd1;
    if (op_conv) begin
      lim_y <= d.conv_h; lim_x <= d.conv_w; lim_ky <= d.kh; lim_kx <= d.kw;
    end else if (op_gap) begin
      lim_y <= d.in_h; lim_x <= d.in_w;
    end else if (op_pool) begin
      lim_y <= d.out_h; lim_x <= d.out_w; lim_c <= d.out_c >> VSH; lim_ky <= d.pool_kh; lim_kx <= d.pool_kw;
    end else if (op_copy || op_l2) begin
      lim_y <= d.out_h; lim_x <= d.out_w;
    end else begin
      lim_y <= d.out_h; lim_x <= d.out_w; lim_c <= d.out_c >> VSH;
    end
  end
  loop_bound #(.W(16)) y_bound (.clk_i(clk), .count_i(lim_y), .less2_o(), .less3_o(y_pen2), .is1_o(y_one),
    .is2_o(y_two), .is3_o());
  loop_bound #(.W(16)) x_bound (.clk_i(clk), .count_i(lim_x), .less2_o(), .less3_o(x_pen2), .is1_o(x_one),
    .is2_o(x_two), .is3_o());
  loop_bound #(.W(16)) c_bound (.clk_i(clk), .count_i(lim_c), .less2_o(), .less3_o(c_pen2), .is1_o(c_one),
    .is2_o(c_two), .is3_o());
  loop_bound #(.W(16)) n_bound (.clk_i(clk), .count_i(d.batch), .less2_o(n_pen), .less3_o(), .is1_o(n_one),
    .is2_o(), .is3_o());
  loop_bound #(.W(8)) ky_bound (.clk_i(clk), .count_i(lim_ky), .less2_o(), .less3_o(ky_pen2), .is1_o(ky_one),
    .is2_o(ky_two), .is3_o());
  loop_bound #(.W(8)) kx_bound (.clk_i(clk), .count_i(lim_kx), .less2_o(), .less3_o(kx_pen2), .is1_o(kx_one),
    .is2_o(kx_two), .is3_o());
  always_ff @(posedge clk) begin
    conv_w_pen <= d.conv_w - 16'd2;
    in_w_last <= d.in_w - 16'd1; in_h_last <= d.in_h - 16'd1; conv_h_last <= d.conv_h - 16'd1;
    in_w_pen2 <= d.in_w - 16'd3; in_w_two <= d.in_w == 16'd2;
    in_h_pen <= d.in_h - 16'd2; in_h_one <= d.in_h == 16'd1;
    // a Winograd layer's residual comes a pair of output rows at a time: after the last input row the second reads
    lead_top <= 18'(d.pad_t) + (d.flags[F_WINOGRAD] ? 18'sd0 : 18'sd1) - 18'(d.kh);
    due_top <= op_conv && d.flags[F_RESIDUAL] && d.conv_h != 16'd0
               && (32'(d.pad_t) + (d.flags[F_WINOGRAD] ? 32'sd0 : 32'sd1) > 32'(d.kh) || d.in_h == 16'd0);
    wres <= op_conv && d.flags[F_RESIDUAL] && d.flags[F_WINOGRAD];
    w_narrow_top <= 32'(d.conv_w) < 32'(2 * P);
    res_x_top <= !(d.flags[F_RESIDUAL] && d.flags[F_WINOGRAD]) && d.conv_w == 16'd1;
    res_rows_q <= d.flags[F_WINOGRAD] ? 16'd2 : 16'd1;
    res_lead_q <= d.flags[F_WINOGRAD] ? 18'sd2 : 18'(d.stride_h);
    w_last_top <= 32'(d.conv_w) <= 32'(2 * P);
    is_conv <= op_conv;
    has_res <= op_conv && d.flags[F_RESIDUAL];
    up <= d.flags[F_UPSAMPLE2];
    has_ph1 <= (op_conv && d.flags[F_RESIDUAL]) || op_add || op_scale || op_l2;
    contiguous <= !(op_conv && d.flags[F_DEPTHWISE]) && d.in_c == d.in_c_stride;   // depthwise: VEC channels
    in_w_one <= d.in_w == 16'd1;
    wx_one <= contiguous || in_w_one;      // a cycle after both (the descriptor is steady for more)
  end

  logic [15:0] ag_n, ag_y, ag_x, ag_c;
  logic [7:0]  ag_ky, ag_kx;
  logic        ag_ph;
  // products of the nest's counters, kept beside them as sums (a multiple more or less as a counter moves), so
  // no multiply sits behind the nest: y * stride - pad and ky * dilation for the tap's row (x, kx for its
  // column), the tap's weight row (tap index times the weight rows of a tap), n times the three image heights
  logic signed [31:0] y_org, x_org, ky_off, kx_off;
  logic [15:0] tap_row;
  logic [31:0] n_in_h, n_conv_h, n_out_h;
  logic [15:0] step_y, step_x, pad_y, pad_x;     // the tap geometry of the layer's kind, in registers
  logic [7:0]  dil_y, dil_x;
  logic [15:0] tap_rows;                         // weight rows of a tap: a conv's input-channel beats, 1 depthwise
  always_ff @(posedge clk) begin
    logic conv, pool;
    conv = op_conv;
    pool = op_pool;
    step_y <= conv ? 16'(d.stride_h) : pool ? 16'(d.pool_sh) : 16'd1;
    step_x <= conv ? 16'(d.stride_w) : pool ? 16'(d.pool_sw) : 16'd1;
    pad_y <= conv ? 16'(d.pad_t) : pool ? 16'(d.pool_pad_t) : 16'd0;
    pad_x <= conv ? 16'(d.pad_l) : pool ? 16'(d.pool_pad_l) : 16'd0;
    dil_y <= conv ? d.dil_h : pool ? 8'd1 : 8'd0;
    dil_x <= conv ? d.dil_w : pool ? 8'd1 : 8'd0;
    tap_rows <= d.flags[F_DEPTHWISE] ? 16'd1 : d.in_c >> VSH;
  end

  // the window path's runs: rows of the input, image after image; with a fused residual, an output row's
  // residual operands right after the last input row it reads, so they wait in the window's queue while the
  // next rows load
  logic [31:0] ag_row;                   // input rows issued so far, over the batch
  logic [32:0] ag_row_p1;                // ag_row + 1, counted beside it (no adder before room_next_q's compare)
  logic [15:0] res_y, res_x;
  logic [15:0] res_row;                  // the residual pixel's row: res_y, or on a Winograd layer res_y + i
  // A Winograd layer's output leaves a group of P tiles at a time, as four sets (i, j): row res_y + i, columns
  // 2 x0 + j + 2p for p < P (window_conv.sv), so its residual pixels come in that order. A position past the
  // map's right or bottom edge takes a step but issues no run (res_skip)
  localparam int LP = $clog2(P);
  logic [1:0] res_q;                     // the set (i, j)
  logic [LP-1:0] res_p;
  logic [15:0] res_t2;                   // the group's first column, 2 x0
  logic signed [16:0] grp_left;          // columns from it to the map's right edge
  logic grp_last, grp_narrow;            // grp_left <= 2P (the row's last group); < 2P (some positions skip)
  logic res_set_q, res_grp_q;            // the position ends a set (not its group's last); a group (not the pair's)
  logic [15:0] res_t2_nx, res_t2_p1, res_y_p1;   // res_t2 + 2P, res_t2 + 1, res_y + 1
  logic signed [16:0] grp_left_nx;       // grp_left - 2P, and what grp_last and grp_narrow are then
  logic grp_last_nx, grp_narrow_nx;
  logic [15:0] rows_left;                // output rows from res_y on
  logic row1_in;                         // the pair's second row is in the map
  // the residual's turn, from flags kept beside the counters (each set by the step that makes it true), so no
  // comparison against the descriptor sits behind the nest's step: every row of image ag_n is issued
  // (ag_y == in_h), every output row's residual is (res_y == conv_h), and ag_y less the last input row output
  // row res_y reads (positive: that row is in)
  logic w_loaded, res_end, res_x_end;    // res_x_end: res_x is the output row's last
  logic wx_end;                          // the window row's run at ag_x is its last
  logic wx_pen;                          // ... the next one is (ag_x is in_w - 2), kept beside it: wx_end steps
                                         // to a flag, no compare behind the step's decode
  logic signed [17:0] lead_q;
  logic res_due;                         // has_res && !res_end && (lead_q > 0 || w_loaded), set with them
  // the nest's position, decoded (P1) and carried beside the two pixel_address pipelines (P2 on), then offered
  // from a register with a skid register behind it: the pipeline moves while the skid is empty, so neither its
  // enable nor the nest's step waits on the reader's ready
  localparam int AG_LATENCY = 1 + ADDRESS_LATENCY;
  logic nest_active;
  logic [AG_LATENCY-1:0] v_q;
  logic out_v_q, sk_v_q;
  wire en = !sk_v_q;
  assign a_run_valid = out_v_q;
  // a register, a cycle behind the nest and the pipeline and set by ag_start itself, so the controller never sees
  // a started tile idle, only an idle one a cycle late
  always_ff @(posedge clk) ag_active <= rst_n && (ag_start || nest_active || |v_q || out_v_q || sk_v_q);
  // a run enters the pipeline (the nest moves on) when the nest has one and the pipeline moves
  // whether the window has room for row ag_row, from registers: the compare against win_limit of the cycle
  // before, for ag_row and for ag_row + 1 (picked when the row count stepped). The limit only grows during a
  // layer, so a cycle-old one never lets a row in early; for the cycle after ag_start (when the window's limit
  // is still the last layer's) nothing is let in.
  logic room_now_q, room_next_q, row_step_q, room_fresh_q;
  logic win_q;                          // win, a copy of its own: it decodes the nest's every step
  always_ff @(posedge clk) begin
    win_q <= win;
    room_now_q <= ag_row < win_limit;
    room_next_q <= ag_row_p1 < 33'(win_limit);
  end
  wire room = !room_fresh_q && (row_step_q ? room_next_q : room_now_q);
  wire want = nest_active && (!win_q || res_due || (!w_loaded && room));
  // the pipeline moves, a copy for the nest (its inverse: synthesis keeps it apart from the skid's valid, which
  // fans out to every pipeline register)
  logic nest_en_q;
  wire issue = want && nest_en_q;
  wire res_skip = wres && ((res_q[1] && !row1_in)
                           || (grp_narrow && {res_p, res_q[0]} >= grp_left[LP:0]));   // grp_left < 2P then
  wire [31:0] cv = 32'(ag_c) << VSH;
  wire [15:0] cin_beats = d.in_c >> VSH;
  // each of the nest's counters at its last value, a flag kept beside it (the window path's image count too)
  logic kx_end, ky_end, c_end, x_end, y_end, n_end;
  logic kx_at_pen, ky_at_pen;            // ag_kx == kw - 2, ag_ky == kh - 2
  logic c_at_pen, x_at_pen, y_at_pen;    // ... and the pixel loops' (set by the nest's steps, not the window's)
  // ... and their conjunctions, kept the same way, so what moves each counter is two flags and the issue
  logic tap_end, cx_end, cxy_end;        // ky_end && kx_end; c_end && x_end; c_end && x_end && y_end
  logic tap_done_q;                      // ag_ph || (tap_end && !has_ph1): the next step leaves the pixel's taps
  // what moves the nest this cycle, one condition per branch of its block below (they exclude each other)
  // (nest_on_q, win_on_q: nest_active on the nest's or on the window path, registers of their own)
  logic nest_on_q, win_on_q;
  wire go_image = win_on_q && w_loaded && !res_due;              // the window path: the next image
  wire go_res = win_on_q && nest_en_q && res_due;                // ... a residual's run
  // what a row's last residual run (due_res) and last input run (due_row, y_last) leave res_due and w_loaded at
  logic y_last;                          // ag_y == in_h_last, set where ag_y is
  wire due_res = has_res && (wres ? rows_left > 16'd2 : res_y != conv_h_last) && (w_loaded || lead_q > res_lead_q);
  wire due_row = has_res && !res_end && (!lead_q[17] || y_last);
  logic open_q;                          // win_on_q && !res_due && !w_loaded, set with them (below)
  wire go_row = open_q && nest_en_q && room;                     // ... a run of an input row
  wire go_pixel = nest_on_q && nest_en_q && tap_done_q;          // ... past the pixel's taps
  wire nest_done = (go_image || (go_pixel && cxy_end)) && n_end;
  wire last_tap = tap_end;

  // What P1 picks, decoded per layer (and per tile: c0 is set with ag_start, a cycle before the nest's first run),
  // for each of its four modes: a window row (WI) or residual (WR), a tap or first operand (phase 0, P0), a
  // residual or second operand (phase 1, P1). P1 then only picks among these registers and the nest's counters.
  logic cls_copy, cls_gap, cls_l2, tap_first_cls, tap_last_cls;
  engine_pkg::kind_t kind_p0, kind_p1;
  logic [23:0] beats_res, beats_wi, beats_p0, beats_p1;
  // a window row's beats where its channels are contiguous, in_w x channel beats: per layer, on a DSP48E2 with its
  // registers (three cycles; the descriptor is steady for many more before the nest's first run)
  logic signed [23:0] row_beats;
  dsp_mult #(.AW(17), .BW(17), .PW(24), .PRIMITIVE(PRIMITIVE)) row_beats_product (
    .clk_i(clk), .en_i(1'b1), .a_i({1'b0, d.in_w}), .b_i({1'b0, cin_beats}), .c_i('0), .p_o(row_beats));
  logic [7:0] fill_p0;
  logic [1:0] geo_p1;                    // phase 1's A geometry: 0 input, 1 conv output, 2 output, 3 gate vector
  logic gate_p1;                         // ... is the gate vector
  logic in2_p1, wide_p0, wide_p1, cv_p0, cv_p1, step2;
  logic [31:0] off_a_wr, off_a_wi, off_a_p0, off_a_p1, off_b_p0, off_b_p1;
  logic sel_dw_q, sel_dw_gap_q, sel_conv_q, sel_conv_gap_q, sel_l2_q;   // which offsets take c0
  logic [15:0] wb_layer;
  always_ff @(posedge clk) begin
    logic conv, pool, copy, l2, gap, other, depthwise;
    conv = op_conv; pool = op_pool; copy = op_copy; l2 = op_l2; gap = op_gap;
    other = !(conv || pool || copy || l2 || gap);     // ADD, SCALE
    depthwise = conv && d.flags[F_DEPTHWISE];
    cls_copy <= copy; cls_gap <= gap; cls_l2 <= l2;
    tap_first_cls <= conv || pool;
    tap_last_cls <= (conv && !d.flags[F_RESIDUAL]) || pool;
    kind_p0 <= conv ? (depthwise ? K_DW : K_MAC) : pool ? K_POOL : copy ? K_COPY : (l2 || gap) ? K_GAP : K_A;
    kind_p1 <= l2 ? K_COPY : conv ? K_RES : K_B;
    beats_res <= nl > 8'(V) ? 24'(nl >> VSH) : 24'd1;
    beats_wi <= depthwise ? 24'd1 : d.in_c == d.in_c_stride ? 24'(row_beats) : 24'(cin_beats);
    beats_p0 <= (conv && !depthwise) || copy || l2 ? 24'(cin_beats) : 24'd1;
    beats_p1 <= l2 ? 24'(cin_beats) : conv ? (nl > 8'(V) ? 24'(nl >> VSH) : 24'd1) : 24'd1;
    fill_p0 <= conv ? d.in_zero : pool ? (d.flags[F_POOL_PAD_ZERO] ? 8'h00 : 8'h80) : 8'h00;
    geo_p1 <= l2 ? 2'd0 : conv ? 2'd1 : op_add ? 2'd2 : 2'd3;
    gate_p1 <= !(l2 || conv || op_add);
    in2_p1 <= !l2;
    wide_p0 <= gap;
    wide_p1 <= !l2;
    cv_p0 <= pool || other;
    cv_p1 <= !conv && !l2;
    sel_dw_q <= depthwise; sel_dw_gap_q <= depthwise || gap; sel_conv_q <= conv; sel_conv_gap_q <= conv || gap;
    sel_l2_q <= l2;
    // the tile's channel offsets: c0 (set with ag_start, a cycle before the nest's first run) plus a per-layer
    // offset, picked by per-layer registers, so each is an AND and an add
    off_a_wr <= 32'(d.in2_c_offset) + 32'(c0);
    off_a_wi <= 32'(d.in_c_offset) + (sel_dw_q ? 32'(c0) : 32'd0);
    off_a_p0 <= 32'(d.in_c_offset) + (sel_dw_gap_q ? 32'(c0) : 32'd0);
    off_a_p1 <= sel_l2_q ? 32'(d.in_c_offset) : 32'(d.in2_c_offset) + (sel_conv_q ? 32'(c0) : 32'd0);
    off_b_p0 <= 32'(d.out_c_offset) + (sel_conv_gap_q ? 32'(c0) : 32'd0);
    off_b_p1 <= 32'(d.out_c_offset) + (sel_conv_q ? 32'(c0) : 32'd0);
    step2 <= d.out_step == 8'd2;
    wb_layer <= d.out_step == 8'd2 ? {d.out_w[14:0], 1'b0} : d.out_w;
  end

  // P1: the run's tag, beats and fill; the operands of its read address (A) and of its result's address (B)
  engine_pkg::tag_t tag1;
  logic [23:0] beats1;
  logic [7:0] fill1;
  logic pad_check1, from_tap1;       // the read is an input tap (padding checked; y, x from iy, ix)
  logic [15:0] waddr1;               // the tap's weight row (a conv's taps; else 0)
  logic [15:0] wa, sa, wb, sb;
  logic [31:0] nh_a, nh_b;
  logic [31:0] base_a, add_a, ya, xa, base_b, add_b, yb, xb;
  logic wide_a, align_a, zero_b;
  logic signed [31:0] iy_d, ix_d;
  always_comb begin
    logic wr, wi, p0, p1, in2, gate_b;
    logic [1:0] geo;
    logic [31:0] off_a_tap, off_b_tap;
    wr = win_q && res_due;
    wi = win_q && !res_due;
    p0 = !win_q && !ag_ph;
    p1 = !win_q && ag_ph;
    iy_d = y_org + ky_off;
    ix_d = x_org + kx_off;
    tag1 = '0;
    tag1.kind = wr ? K_RES : wi ? K_MAC : p1 ? kind_p1 : kind_p0;
    tag1.n = ag_n;
    tag1.y = wr ? res_row : ag_y;
    tag1.x = wr ? res_x : ag_x;
    tag1.first = p0 && ((tap_first_cls && ag_ky == 8'd0 && ag_kx == 8'd0) || cls_l2
                        || (cls_gap && ag_y == 16'd0 && ag_x == 16'd0));
    tag1.last = wi ? wx_end
                : p1 || (p0 && ((tap_last_cls && last_tap) || cls_copy
                                || (cls_gap && ag_y == in_h_last && ag_x == in_w_last)));
    beats1 = wr ? beats_res : wi ? beats_wi : p1 ? beats_p1 : beats_p0;
    fill1 = p0 ? fill_p0 : 8'd0;
    pad_check1 = p0 && !cls_gap;
    from_tap1 = p0 ? !cls_gap : p1 && cls_l2;
    waddr1 = p0 && is_conv ? tap_row : 16'd0;
    // A: the input pixel (tap coordinates, the input's geometry), a residual's, an operand's or a gate vector's
    in2 = win_q ? res_due : ag_ph && in2_p1;
    base_a = in2 ? d.in2_addr : d.in_addr;
    sa = in2 ? d.in2_c_stride : d.in_c_stride;
    geo = wr ? 2'd1 : p1 ? geo_p1 : 2'd0;
    case (geo)
      2'd0: begin nh_a = n_in_h; wa = d.in_w; end
      2'd1: begin nh_a = n_conv_h; wa = d.conv_w; end
      2'd2: begin nh_a = n_out_h; wa = d.out_w; end
      default: begin nh_a = 32'(ag_n); wa = 16'd1; end
    endcase
    ya = win_q ? (res_due ? 32'(res_row) : 32'(ag_y)) : ag_ph && gate_p1 ? 32'd0 : 32'(ag_y);
    xa = win_q ? (res_due ? 32'(res_x) : contiguous ? 32'd0 : 32'(ag_x)) : ag_ph && gate_p1 ? 32'd0 : 32'(ag_x);
    // each phase's offset summed apart, the phase picked after the adds (its flag is at a load of 25); the taps'
    // offsets serve the nest alone (!win_q), so the window's flag is left to the pick after them
    off_a_tap = ag_ph ? off_a_p1 + (cv_p1 ? cv : 32'd0) : off_a_p0 + (cv_p0 ? cv : 32'd0);
    add_a = !win_q ? off_a_tap : res_due ? off_a_wr : off_a_wi;
    wide_a = win_q || (ag_ph ? wide_p1 : wide_p0);
    align_a = wr || (p1 && is_conv);
    // B: the output pixel (a transposed conv's phase: a pixel of the twice-as-large output), or GAP's image
    gate_b = p0 && cls_gap;
    base_b = d.out_addr; sb = d.out_c_stride;
    off_b_tap = ag_ph ? off_b_p1 + (cv_p1 ? cv : 32'd0) : off_b_p0 + (cv_p0 ? cv : 32'd0);
    add_b = win_q ? 32'(d.out_c_offset) : off_b_tap;
    zero_b = win_q || (p0 && cls_l2);
    if (gate_b) begin
      nh_b = 32'(ag_n); wb = 16'd1; yb = 32'd0; xb = 32'd0;
    end else if (step2) begin
      nh_b = n_out_h << 1; wb = wb_layer;
      yb = {15'd0, ag_y, d.out_phase_y[0]}; xb = {15'd0, ag_x, d.out_phase_x[0]};
    end else begin
      nh_b = n_out_h; wb = wb_layer; yb = 32'(ag_y); xb = 32'(ag_x);
    end
  end

  // P1 registers
  localparam int TW = engine_pkg::TAG_BITS;
  localparam int LAST = AG_LATENCY - 1;
  logic [AG_LATENCY*TW-1:0] tag_q;         // stage k's at [TW*k +: TW]; beats, fill and pad alike
  logic [AG_LATENCY*24-1:0] beats_q;
  logic [AG_LATENCY*8-1:0] fill_q;
  logic [AG_LATENCY-1:0] pad_q;
  logic pad_check_q, from_tap_q;
  logic [15:0] waddr_q, wa_q, sa_q, wb_q, sb_q;
  logic [31:0] nha_q, nhb_q, ya_q, xa_q, yb_q, xb_q, base_a_q, add_a_q, base_b_q, add_b_q;
  logic wide_a_q, align_a_q, zero_b_q;
  logic signed [31:0] iy_q, ix_q;
  always_ff @(posedge clk) begin
    engine_pkg::tag_t t;
    if (!rst_n) v_q <= '0;
    else if (en) v_q <= {v_q[AG_LATENCY-2:0], issue && !(win_q && res_due && res_skip)};
    if (en) begin
      tag_q[0 +: TW] <= tag1; beats_q[0 +: 24] <= beats1; fill_q[0 +: 8] <= fill1; pad_q[0] <= 1'b0;
      pad_check_q <= pad_check1; from_tap_q <= from_tap1; waddr_q <= waddr1;
      iy_q <= iy_d; ix_q <= ix_d;
      nha_q <= nh_a; ya_q <= ya; xa_q <= xa; wa_q <= wa; sa_q <= sa;
      base_a_q <= base_a; add_a_q <= add_a; wide_a_q <= wide_a; align_a_q <= align_a;
      nhb_q <= nh_b; yb_q <= yb; xb_q <= xb; wb_q <= wb; sb_q <= sb;
      base_b_q <= base_b; add_b_q <= add_b; zero_b_q <= zero_b;
      // P2: the weight row and the padding check, from P1's registers
      t = tag_q[0 +: TW];
      t.waddr = waddr_q;
      tag_q[TW +: TW] <= t;
      beats_q[24 +: 24] <= beats_q[0 +: 24]; fill_q[8 +: 8] <= fill_q[0 +: 8];
      pad_q[1] <= pad_check_q && !(iy_q >= 0 && ix_q >= 0 && iy_q < (32'(d.in_h) << up) && ix_q < (32'(d.in_w) << up));
      tag_q[AG_LATENCY*TW-1:2*TW] <= tag_q[(AG_LATENCY-1)*TW-1:TW];
      beats_q[AG_LATENCY*24-1:2*24] <= beats_q[(AG_LATENCY-1)*24-1:24];
      fill_q[AG_LATENCY*8-1:2*8] <= fill_q[(AG_LATENCY-1)*8-1:8];
      pad_q[AG_LATENCY-1:2] <= pad_q[AG_LATENCY-2:1];
    end
  end
  wire [31:0] tap_y = 32'(iy_q) >> up, tap_x = 32'(ix_q) >> up;
  logic [63:0] oaddr64, raddr64;
  pixel_address #(.B(B), .PRIMITIVE(PRIMITIVE)) read_address (
    .clk_i(clk), .en_i(en), .nh_i(nha_q), .y_i(from_tap_q ? tap_y : ya_q), .x_i(from_tap_q ? tap_x : xa_q),
    .w_i(wa_q), .stride_i(sa_q), .base_i(base_a_q), .add_i(add_a_q), .wide_i(wide_a_q), .align_i(align_a_q),
    .zero_i(1'b0), .addr_o(raddr64));
  pixel_address #(.B(B), .PRIMITIVE(PRIMITIVE)) result_address (
    .clk_i(clk), .en_i(en), .nh_i(nhb_q), .y_i(yb_q), .x_i(xb_q), .w_i(wb_q), .stride_i(sb_q), .base_i(base_b_q),
    .add_i(add_b_q), .wide_i(1'b0), .align_i(1'b0), .zero_i(zero_b_q), .addr_o(oaddr64));
  localparam int OW = 64 + 24 + 8 + 1 + TW;
  logic [OW-1:0] last_run, out_q, sk_q;
  always_comb begin
    engine_pkg::tag_t t;
    t = tag_q[LAST*TW +: TW];
    t.oaddr = oaddr64[31:0];
    last_run = {raddr64, beats_q[LAST*24 +: 24], fill_q[LAST*8 +: 8], pad_q[LAST], TW'(t)};
  end
  wire out_move = !out_v_q || a_run_ready;       // the offered register takes the next run
  wire leaving = en && v_q[LAST];                // a run leaves the pipeline
  always_ff @(posedge clk) begin
    if (!rst_n) begin
      out_v_q <= 1'b0; sk_v_q <= 1'b0; nest_en_q <= 1'b1;
    end else if (out_move) begin
      out_v_q <= sk_v_q || leaving;
      sk_v_q <= 1'b0; nest_en_q <= 1'b1;
    end else if (leaving) begin
      sk_v_q <= 1'b1; nest_en_q <= 1'b0;
    end
    if (out_move) out_q <= sk_v_q ? sk_q : last_run;
    else if (leaving) sk_q <= last_run;
  end
  assign {a_run_addr, a_run_beats, a_run_fill, a_run_pad, a_tag_bits} = out_q;

  // the nest has runs left: the one register of the nest the reset clears (the rest move only while it is set,
  // so the reset is not among their enables)
  always_ff @(posedge clk)
    if (!rst_n) begin
      nest_active <= 1'b0; nest_on_q <= 1'b0; win_on_q <= 1'b0;
    end else if (ag_start) begin
      nest_active <= 1'b1; nest_on_q <= !win; win_on_q <= win;
    end else if (nest_done) begin
      nest_active <= 1'b0; nest_on_q <= 1'b0; win_on_q <= 1'b0;
    end
  // the nest's step, in three blocks by what moves each register: the window path's runs and the counters both
  // paths share (ag_n, ag_y, ag_x) here; the tap loop and the pixel loops' flags and origins below, which only the
  // nest's steps move (on nest_on_q, which excludes the window path's go_image, go_res and go_row: nest_on_q and
  // win_on_q are set apart by ag_start), so the window path's conditions are not among their enables
  always_ff @(posedge clk) begin
    row_step_q <= 1'b0;
    room_fresh_q <= ag_start;
    if (ag_start) begin
      wx_end <= wx_one; wx_pen <= in_w_two;
      ag_n <= '0; ag_y <= '0; ag_x <= '0; ag_row <= '0; ag_row_p1 <= 33'd1; y_last <= in_h_one;
      n_end <= n_one;
      n_in_h <= '0; n_conv_h <= '0; n_out_h <= '0;
      res_y <= '0; res_x <= '0; res_x_end <= res_x_top; res_row <= '0;
      rows_left <= d.conv_h; row1_in <= d.conv_h > 16'd1;
      lead_q <= lead_top; w_loaded <= d.in_h == 16'd0;
      res_end <= d.conv_h == 16'd0; res_due <= due_top;
    end else if (go_image) begin
      // the image is issued: the next one (nothing issues meanwhile: want is low, so this is tested before issue)
      ag_y <= '0; y_last <= in_h_one;
      res_y <= '0; res_x <= '0; res_x_end <= res_x_top; res_row <= '0;
      rows_left <= d.conv_h; row1_in <= d.conv_h > 16'd1;
      lead_q <= lead_top; w_loaded <= d.in_h == 16'd0;
      res_end <= d.conv_h == 16'd0; res_due <= due_top;
      if (!n_end) begin
        ag_n <= ag_n + 16'd1; n_end <= ag_n == n_pen;
        n_in_h <= n_in_h + 32'(d.in_h); n_conv_h <= n_conv_h + 32'(d.conv_h); n_out_h <= n_out_h + 32'(d.out_h);
      end
    end else if (go_res) begin
      // one flag (res_x_end) says the position is the output row's last, or a Winograd layer's pair of rows': what
      // moves the rows' registers is that flag and the step, as on a direct layer
      if (!res_x_end) begin
        if (!wres) begin
          res_x <= res_x + 16'd1;
          res_x_end <= res_x == conv_w_pen;
        end else if (res_grp_q) begin      // the group's last position: the next group of the pair
          res_x <= res_t2_nx;
          res_row <= res_y;
        end else if (res_set_q) begin      // a set's last: the next set (i, j) of the group
          res_x <= res_q[0] ? res_t2 : res_t2_p1;
          res_row <= res_q[1] || res_q[0] ? res_y_p1 : res_y;
        end else begin
          res_x <= res_x + 16'd2;
          res_x_end <= 32'(res_p) == P - 2 && res_q == 2'd3 && grp_last;
        end
      end else begin                       // the row's (pair's) last position: the next row (pair)
        res_x <= '0;
        res_x_end <= res_x_top;
        res_y <= res_y + res_rows_q; res_row <= res_y + res_rows_q;
        rows_left <= rows_left - res_rows_q; row1_in <= rows_left > 16'd3;
        res_end <= wres ? rows_left <= 16'd2 : res_y == conv_h_last;
        lead_q <= lead_q - res_lead_q;
        res_due <= due_res;
      end
    end else if (go_row) begin
      if (!wx_end) begin
        ag_x <= ag_x + 16'd1;
        wx_end <= wx_pen; wx_pen <= ag_x == in_w_pen2;
      end else begin
        ag_x <= '0;
        wx_end <= wx_one; wx_pen <= in_w_two;
        ag_row <= ag_row + 32'd1; ag_row_p1 <= ag_row_p1 + 33'd1;
        row_step_q <= 1'b1;
        ag_y <= ag_y + 16'd1; y_last <= ag_y == in_h_pen;
        w_loaded <= y_last;
        lead_q <= lead_q + 18'sd1;
        res_due <= due_row;
      end
    end else if (go_pixel) begin
      // which loops step: a counter's end flag implies the ones inside it (cxy_end -> cx_end -> c_end)
      if (c_end && !cx_end) ag_x <= ag_x + 16'd1;
      if (cx_end) ag_x <= '0;
      if (cx_end && !cxy_end) begin
        ag_y <= ag_y + 16'd1; y_last <= ag_y == in_h_pen;
      end
      if (cxy_end) begin
        ag_y <= '0; y_last <= in_h_one;
      end
      if (cxy_end && !n_end) begin
        ag_n <= ag_n + 16'd1; n_end <= ag_n == n_pen;
        n_in_h <= n_in_h + 32'(d.in_h); n_conv_h <= n_conv_h + 32'(d.conv_h);
        n_out_h <= n_out_h + 32'(d.out_h);
      end
    end
  end
  // the window path takes an input row's run next (less the room and the step): its own register, set where
  // win_on_q, res_due and w_loaded are, so the row's step decodes three flags fewer
  always_ff @(posedge clk)
    if (!rst_n) open_q <= 1'b0;
    else if (ag_start) open_q <= win && !due_top && d.in_h != 16'd0;
    else if (go_image) open_q <= !n_end && !due_top && d.in_h != 16'd0;
    else if (go_res && res_x_end) open_q <= !w_loaded && !due_res;
    else if (go_row && wx_end) open_q <= !y_last && !due_row;
  // A Winograd layer's walk over a pair's positions, in a block of its own: each register moves on a row's start
  // or end, or on a step within the pair, and what the step does is told by flags kept a step ahead (res_set_q,
  // res_grp_q: the position ends a set, a group) and sums kept beside the counters (each used no sooner than two
  // steps after its counter moves: a set has two or more positions), so the step's condition reaches the registers'
  // enables and not their data
  logic walk_en_q;                       // nest_en_q, a copy of the walk's own (no reset: it follows nest_en_q a
                                         // cycle after reset, long before a residual's run)
  always_ff @(posedge clk)
    if (out_move) walk_en_q <= 1'b1;
    else if (leaving) walk_en_q <= 1'b0;
  wire w_reset = ag_start || go_image || (win_on_q && walk_en_q && res_due && res_x_end);
  wire w_step = win_on_q && walk_en_q && res_due && !res_x_end && wres;
  always_ff @(posedge clk) begin
    res_t2_nx <= res_t2 + 16'(2 * P); res_t2_p1 <= res_t2 + 16'd1; res_y_p1 <= res_y + 16'd1;
    grp_left_nx <= grp_left - 17'(2 * P);
    grp_last_nx <= grp_left <= 17'(4 * P); grp_narrow_nx <= grp_left < 17'(4 * P);
  end
  always_ff @(posedge clk)
    if (w_reset) begin
      res_q <= '0; res_p <= '0; res_set_q <= 1'b0; res_grp_q <= 1'b0; res_t2 <= '0;
      grp_left <= 17'(d.conv_w); grp_last <= w_last_top; grp_narrow <= w_narrow_top;
    end else if (w_step) begin
      if (res_grp_q) begin
        res_q <= '0; res_p <= '0; res_set_q <= 1'b0; res_grp_q <= 1'b0;
        res_t2 <= res_t2_nx;
        grp_left <= grp_left_nx; grp_last <= grp_last_nx; grp_narrow <= grp_narrow_nx;
      end else if (res_set_q) begin
        res_q <= res_q + 2'd1;
        res_p <= '0; res_set_q <= 1'b0; res_grp_q <= 1'b0;
      end else begin
        res_p <= res_p + 1'b1;
        res_set_q <= 32'(res_p) == P - 2 && res_q != 2'd3;
        res_grp_q <= 32'(res_p) == P - 2 && res_q == 2'd3 && !grp_last;
      end
    end
  // the tap loop: the next tap, or the second phase (go_tap); back to the first tap past a pixel (go_pixel) or as
  // a tile starts. Its registers move on one enable (the nest steps, or the tile starts) and their next values
  // do not depend on it, so the pipeline's enable (nest_en_q, fanned out) is a clock enable one LUT deep; the
  // first tap's flags are per-layer registers
  logic tap_end0_q, tap_done0_q, kx_one_np_q;    // kx_one && ky_one; ... && !has_ph1; kx_one && !has_ph1
  always_ff @(posedge clk) begin
    tap_end0_q <= kx_one && ky_one;
    tap_done0_q <= kx_one && ky_one && !has_ph1;
    kx_one_np_q <= kx_one && !has_ph1;
  end
  // the tap loop's four moves, each a flat AND of registers (they exclude each other), so each register's next
  // value is one pick among them and not a chain of its block's branches
  wire nest_go = nest_on_q && nest_en_q;
  wire tap_first = nest_start || (nest_go && tap_done_q);                 // the first tap: the tile's or a pixel's
  wire tap_kx = !nest_start && nest_go && !tap_done_q && !last_tap && !kx_end;   // the next tap in the row
  wire tap_ky = !nest_start && nest_go && !tap_done_q && !last_tap && kx_end;    // the next kernel row
  wire tap_ph = !nest_start && nest_go && !tap_done_q && last_tap;               // the second phase
  always_ff @(posedge clk) begin
    if (tap_first) begin
      ag_ph <= 1'b0; ag_ky <= '0; ag_kx <= '0; ky_off <= '0; kx_off <= '0; tap_row <= '0;
      kx_end <= kx_one; ky_end <= ky_one; tap_end <= tap_end0_q;
      kx_at_pen <= kx_two; ky_at_pen <= ky_two;
      tap_done_q <= tap_done0_q;
    end
    if (tap_ky) begin
      ag_kx <= '0; kx_off <= '0; kx_end <= kx_one;
      kx_at_pen <= kx_two;
      ag_ky <= ag_ky + 8'd1; ky_off <= ky_off + 32'(dil_y); ky_end <= ky_at_pen; ky_at_pen <= ag_ky == ky_pen2;
      tap_end <= kx_one && ky_at_pen;
      tap_done_q <= kx_one_np_q && ky_at_pen;
    end
    if (tap_kx) begin
      ag_kx <= ag_kx + 8'd1; kx_off <= kx_off + 32'(dil_x); kx_end <= kx_at_pen; kx_at_pen <= ag_kx == kx_pen2;
      tap_end <= kx_at_pen && ky_end;
      tap_done_q <= kx_at_pen && ky_end && !has_ph1;
    end
    if (tap_ky || tap_kx) tap_row <= tap_row + tap_rows;
    if (tap_ph) begin
      ag_ph <= 1'b1;
      tap_done_q <= 1'b1;
    end
  end
  // the pixel loops' flags and the tap geometry's origins, past a pixel's taps
  always_ff @(posedge clk) begin
    if (pix_start || (nest_go && tap_done_q)) begin
      if (pix_start) begin
        ag_c <= '0;
        c_end <= c_one; x_end <= x_one; y_end <= y_one;
        c_at_pen <= c_two; x_at_pen <= x_two; y_at_pen <= y_two;
        cx_end <= c_one && x_one; cxy_end <= c_one && x_one && y_one;
        y_org <= 32'sd0 - 32'(pad_y); x_org <= 32'sd0 - 32'(pad_x);
      end else begin                                   // go_pixel
        if (!c_end) begin
          ag_c <= ag_c + 16'd1; c_end <= c_at_pen; c_at_pen <= ag_c == c_pen2;
          cx_end <= c_at_pen && x_end; cxy_end <= c_at_pen && x_end && y_end;
        end else begin
          ag_c <= '0; c_end <= c_one; c_at_pen <= c_two;
        end
        if (c_end && !cx_end) begin
          x_org <= x_org + 32'(step_x); x_end <= x_at_pen; x_at_pen <= ag_x == x_pen2;
          cx_end <= c_one && x_at_pen; cxy_end <= c_one && x_at_pen && y_end;
        end
        if (cx_end) begin
          x_org <= 32'sd0 - 32'(pad_x); x_end <= x_one; x_at_pen <= x_two;
          cx_end <= c_one && x_one;
        end
        if (cx_end && !cxy_end) begin
          y_org <= y_org + 32'(step_y); y_end <= y_at_pen; y_at_pen <= ag_y == y_pen2;
          cxy_end <= c_one && x_one && y_at_pen;
        end
        if (cxy_end) begin
          y_org <= 32'sd0 - 32'(pad_y); y_end <= y_one; y_at_pen <= y_two;
          cxy_end <= c_one && x_one && y_one;
        end
      end
    end
  end
endmodule
