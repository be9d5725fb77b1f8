// The window path of a standard conv (docs/kernel-abi.md, "Window path"): the activation stream fills an
// on-chip window of input rows, each input byte once per output-channel tile, and the P x R x V array
// (mac_array.sv) computes P neighbouring output pixels of one row per step, all from one weight-RAM row (R x V bytes) and P window
// banks. Steps walk (ky, kx, input-channel beat) for each group of P pixels, groups along the row, rows down
// the image. The address generator issues a row's load only once the row it replaces in the window is no
// longer read (`load_limit`); a row is computed only once the input rows it reads are in (`rows_loaded`).
// Finished groups go to the epilogue one pixel per cycle while the array goes on with the next group. A fused
// residual's operands come down the same stream after the input rows their output row reads, and wait in a
// queue of RESQ beats (a row of them) until their pixels leave. A layer without residual or pool takes as many
// output-channel tiles at once as the weight RAM holds (`group_tiles`, up to P, their weights one after
// another): each group of pixels is computed for every tile in turn, so an input row loads once for all.
// A depthwise layer takes a whole kernel row per step: the weight RAM keeps kernel row ky in its row ky, tap
// kx in bank kx; array row e gets the tap that reaches e columns of the step's stride phase further (engine_core),
// all rows multiply the same P input columns, and the array's `taps` sum each output's products. Outputs near the group's right edge also need the
// next group's columns: that part of the sums is added into the previous group, which is finished one group
// late; a row ends with a group that only finishes its last (`flush`).
import engine_pkg::*;

module window_conv #(
  parameter int V = 16,
  parameter int R = 16,
  parameter int P = 4,
  parameter int WDEPTH = 2048,     // window words per bank
  parameter int WAW = 10,          // weight RAM address bits
  parameter int RESQ = 512,       // residual beats queued
  parameter bit DWW = 1,           // the depthwise kernel-row logic is built
  parameter bit PRIMITIVE = 1'b1,  // dsp_mult's: the DSP48E2 primitive in synthesis (UltraScale+)
  parameter bit DOUBLE = 0,        // the array's DSPs at twice the clock (a cycle more)
  parameter bit WINO = 0,          // the Winograd unit (winograd_patch.sv): WINOGRAD layers run here
  parameter int XW = WINO ? 10 : 8 // the array's input operand bits
) (
  input  logic clk,
  input  logic rst_n,
  input  logic [engine_pkg::DESC_BITS-1:0] desc,
  input  logic        rows_mode,         // a depthwise layer taking a kernel row per step (layer_descriptor)
  input  logic [4:0]  slots,             // input rows the window holds (a power of two)
  input  logic [31:0] phase_words,       // words of a row's stride phase in each bank
  input  logic [31:0] row_words,
  input  logic        start,             // a tile (group) of a window layer begins
  input  logic [7:0]  group_tiles,       // output-channel tiles in the group (up to P)
  input  logic [15:0] c0,                // first output channel of the group
  input  logic [P*(R > V ? R : V)*ACC_W-1:0] bias,   // G lanes for each tile of the group
  // the activation stream: the layer's input rows in order
  input  logic        ab_valid,
  input  logic [8*V-1:0] ab_data,
  input  logic [engine_pkg::TAG_BITS-1:0] ab_tag_bits,
  input  logic        ab_last,
  output logic        res_room,          // the residual queue can take a beat: a residual beat is taken then,
                                         // any other always (engine_core makes the stream's ready)
  output logic [31:0] load_limit,        // input rows (counted over the batch) below this may be loaded
  // weight RAM read port
  output logic           w_re,
  output logic [WAW-1:0] w_raddr,
  // the shared MAC array: the P pixels' input bytes out, their P x R sums in
  output logic [P*XW*V-1:0] array_x,
  output logic array_en,                    // the array's pipeline moves with this one
  input  logic [P*R*ACC_W-1:0] array_sums,  // AL steps after array_x
  input  logic [2*P*V*20-1:0] array_taps,   // depthwise: the sums per output -P .. P-1 of the group and lane
  output logic dw_phase_next,               // depthwise: the stride phase of the step entering the array
  // finished pixels
  input  logic        room,
  output logic        item_valid,
  output logic [(R > V ? R : V)*ACC_W-1:0] item_acc,
  output logic [(R > V ? R : V)*8-1:0]  item_b,
  output logic [31:0] item_oaddr,
  output logic [(P > 1 ? $clog2(P) : 1)-1:0] item_tile,   // the item's tile in the group
  output logic [15:0] item_n, item_y, item_x,
  output logic        busy,
  output logic        mac_beat,          // a step went through the array
  output logic        wait_input,        // the next step's rows are not in yet
  output logic        wait_output        // a finished group waits for the epilogue
);
  `include "engine_functions.svh"
  localparam int DW = 8 * V;
  localparam int G = R > V ? R : V;
  localparam int VSH = $clog2(V);
  localparam int PB = P > 1 ? $clog2(P) : 1;     // bank index bits
  localparam int WA = $clog2(WDEPTH);
  localparam int TW = P > 1 ? $clog2(P) : 1;
  localparam int DL = R < V ? R : V;             // depthwise lanes (the path needs R >= V)
  engine_pkg::desc_t d;
  assign d = desc;
  engine_pkg::tag_t ab_tag;
  assign ab_tag = ab_tag_bits;
  // per layer, in registers: the descriptor is steady for cycles before a tile starts
  logic s2;
  logic [15:0] cbs;                              // channel beats of a pixel in the window
  logic [15:0] cb_pen_q, cb_pen3_q;             // ... less two, less three
  logic cb_one_q, cb_two_q, cb_three_q;          // ... is one, two, three
  wire [15:0] cbs_d = d.flags[F_DEPTHWISE] ? 16'd1 : d.in_c >> VSH;
  always_ff @(posedge clk) begin
    s2 <= d.stride_w == 8'd2;
    cbs <= cbs_d;
  end
  logic wino_q;
  always_ff @(posedge clk) wino_q <= d.flags[F_WINOGRAD];
  wire wino = WINO && wino_q;
  // its copy for T0's kernel offsets alone (the flag's load is near a thousand; through it, the offset's add and
  // the pixels' bounds were a 4- and 8-pixel Winograd design's second-worst path). A reset of its own keeps
  // synthesis from merging it with wino_q
  logic wino_t0_q;
  always_ff @(posedge clk)
    if (!rst_n) wino_t0_q <= 1'b0;
    else wino_t0_q <= d.flags[F_WINOGRAD];
  wire wino_t0 = WINO && wino_t0_q;
  // a group's steps per tap (a Winograd layer's one more), a register: its add and pick are not behind the bound's
  // compares. Per layer, read by a tile's start, cycles after the descriptor
  logic [15:0] cb_count_q;
  always_ff @(posedge clk) cb_count_q <= wino ? cbs + 16'd1 : cbs;
  // the output row's and the group's moves of their input origins, per layer
  logic [1:0] row_step_q;
  logic [31:0] col_step_q;
  always_ff @(posedge clk) begin
    row_step_q <= wino || s2 ? 2'd2 : 2'd1;
    col_step_q <= 32'(P) << (s2 || wino);
  end
  loop_bound #(.W(16)) cb_bound (.clk_i(clk), .count_i(cb_count_q), .less2_o(cb_pen_q), .less3_o(cb_pen3_q),
    .is1_o(cb_one_q), .is2_o(cb_two_q), .is3_o(cb_three_q));
  logic [15:0] wr_cb_pen;                        // the window's channel beats for its writer
  logic wr_cb_one;
  if (WINO) begin : g_writer_beats
    loop_bound #(.W(16)) wr_bound (.clk_i(clk), .count_i(cbs_d), .less2_o(wr_cb_pen), .less3_o(), .is1_o(wr_cb_one),
      .is2_o(), .is3_o());
    logic unused_cb_pen;                         // the step loop's own bound less two: its flags are kept from less three
    assign unused_cb_pen = ^cb_pen_q;
  end else begin : g_writer_beats_shared
    assign wr_cb_pen = cb_pen_q;
    assign wr_cb_one = cb_one_q;
  end
  // a Winograd layer (WINO): a group is P 2x2 tiles, two output rows by 2P columns; its steps walk the input's
  // channel beats (wcb, one more than there are: loading beat k overlaps computing beat k - 1) and, in each, the 16
  // positions (wpos) it computes, the first twelve also loading (wload_pos)
  wire dw = DWW && rows_mode;                  // the kernel-row schedule; a diagonal depthwise layer steps as a conv
  logic [31:0] slot_mask;                        // slots - 1, per layer in a register: no subtract behind its uses
  always_ff @(posedge clk) slot_mask <= 32'(slots) - 32'd1;

  // ---- window writes ----------------------------------------------------------------------------------
  logic [31:0] rows_loaded;
  logic win_we;
  logic [PB-1:0] w_bank;
  logic [WA-1:0] win_waddr;
  logic [DW-1:0] win_wdata;
  wire is_res = ab_tag.kind == K_RES;
  wire has_res = d.flags[F_RESIDUAL];
  window_writer #(.V(V), .P(P), .WA(WA)) writer (
    .clk_i(clk), .rst_ni(rst_n), .start_i(start), .beat_valid_i(ab_valid && !is_res),
    .beat_last_i(ab_tag.last && ab_last), .beat_data_i(ab_data), .slot_mask_i(slot_mask), .row_words_i(row_words),
    .phase_words_i(phase_words), .stride2_i(s2), .cbs_i(cbs), .cb_pen_i(wr_cb_pen), .cb_one_i(wr_cb_one),
    .we_o(win_we), .bank_o(w_bank), .addr_o(win_waddr), .data_o(win_wdata), .rows_loaded_o(rows_loaded));

  // ---- the step sequencer (stage T0) ---------------------------------------------------------------
  // A step is issued at T0, its window address formed over TA (the slot, phase and column), TA2 and TB (the
  // column times the channel beats, on a DSP48E2 from T0 to TB), the RAMs read at TB's end; its words are out at T1.
  logic active;
  logic [15:0] n, y, x0;
  logic [7:0] ky, kx;
  logic [15:0] cb;
  logic [TW-1:0] m;                              // the tile of the group being computed
  logic flush;                                   // depthwise: the group past a row's end
  logic [WAW-1:0] wrow;
  logic signed [31:0] img_base, row0, col0;     // first input row of the image; y * S - pad_t; x0 * S - pad_l
  logic signed [31:0] last_q;                    // row0 + kh - 1: the last input row the output row reads
  logic signed [31:0] near_q;                    // min(last_q, in_h - 1)
  logic signed [31:0] need_q;                    // img_base + near_q: loaded before the row starts
  logic [31:0] nh_q;                             // the image times the output's rows (the group's address)
  logic signed [31:0] first_last_q, in_h_last_q; // per layer: kh - 1 - pad_t; in_h - 1
  logic adv;                                     // the pipeline moves this cycle (a register)
  logic adv_d;                                   // ... and next cycle

  logic signed [31:0] iy, ix0;
  logic [3:0] wpos;                              // Winograd: the step's position (a, b)
  logic [15:0] wcb;                              // ... and channel beat loaded (computed: one less)
  logic last_wcb;                                // wcb is the last (the input's channel beats: nothing loads)
  logic [3:0] wload_pos;                         // ... the patch row and strip segment it loads (positions < 12)
  // Winograd: a beat's twelve loads at its first twelve positions (wload_pos counts them beside wpos), so its strip
  // is whole before the patch forms at position 13, two steps ahead of where the next beat's first row of it is
  // picked (winograd_patch.sv: the row at TB, V at T1, each into a register, for the array at TX)
  localparam int LP = P > 1 ? $clog2(P) : 0;
  // the lowest input row the step reads (its image's base plus the first row its output row reads), and the rows
  // the window may hold from it, in registers a cycle and two after row0 and img_base: a step fires at least
  // three cycles after either moves (settle_q, image_end_q)
  logic signed [31:0] lowest_q;
  logic [31:0] limit_q;
  logic ready_q;
  logic t0_fire;                                 // a step enters the pipeline (ready_q && adv), a register of its own
  logic [1:0] settle_q;                          // cycles until need_q holds the current row's need
  logic [P-1:0] t0_x_in;                         // pixel p's x0 + p is in the output row (or need not be)
  logic [PB-1:0] t0_rot;
  logic [2:0] t0_slot;
  logic [15:0] t0_jc;
  // pixel p's column ix0 + p * stride is in the input, and its x0 + p in the output row, as bounds on ix0 and x0
  // per layer (registers): no add before the compares
  logic signed [31:0] col_lo_q[P], col_hi_q[P], x_hi_q[P];
  always_ff @(posedge clk)
    for (int p = 0; p < P; p++) begin
      col_lo_q[p] <= 32'sd0 - (32'(p) << s2);
      col_hi_q[p] <= 32'(d.in_w) - (32'(p) << s2);
      x_hi_q[p] <= 32'(d.conv_w) - 32'(p);
    end
  always_comb begin
    logic signed [31:0] j0, g;
    iy = row0 + 32'(wino_t0 ? 8'(wload_pos[3:2]) : ky);
    ix0 = col0 + (wino_t0 ? 32'(wload_pos[1:0]) << LP : 32'(kx));
    j0 = ix0 >>> s2;
    g = img_base + iy;
    t0_slot = 3'(32'(g) & slot_mask);
    t0_jc = 16'(j0 >>> PB);
    t0_rot = PB'($unsigned(j0));
    for (int p = 0; p < P; p++) t0_x_in[p] = dw || wino_t0 || $signed({16'd0, x0}) < x_hi_q[p];
  end
  // which of the P columns are in the input: compared at TA from the step's row and column in registers (after
  // the offset's add in T0, the compares made the Winograd designs' worst path)
  logic signed [31:0] ta_iy, ta_ix0;
  logic [P-1:0] ta_x_in, ta_mask, ta2_mask, tb_mask;
  always_ff @(posedge clk)
    if (adv) begin
      ta_iy <= iy; ta_ix0 <= ix0; ta_x_in <= t0_x_in;
    end
  always_comb
    for (int p = 0; p < P; p++)
      ta_mask[p] = ta_iy >= 0 && ta_iy < 32'(d.in_h) && ta_ix0 >= col_lo_q[p] && ta_ix0 < col_hi_q[p] && ta_x_in[p];
  always_ff @(posedge clk) begin
    lowest_q <= img_base + (row0[31] ? 32'sd0 : row0);        // max(row0, 0) from its sign: no compare's carry
    limit_q <= 32'(lowest_q) + 32'(slots);
  end
  // ready_q implies active: it is set from active, and cleared with row_change, which precedes active's fall (an
  // image's last row) by three cycles of settle_q. The fire is a register set with ready_q from its next value and
  // the pipeline's, so the step loops, and ready_q's clear (row_change), start from a register of small load and not
  // from the pipeline's move (its load is the whole array's)
  assign wait_input = active && !ready_q;
  wire [7:0] phases = s2 && d.kw > 8'd1 ? 8'd2 : 8'd1;    // depthwise: a step per stride phase of a kernel row
  logic [WAW-1:0] wwrow;                         // Winograd: the step's weight row
  wire [WAW-1:0] t0_wraddr = dw ? (phases == 8'd2 ? WAW'({ky, kx[0]}) : WAW'(ky)) : wino ? wwrow : wrow;

  // the loop bounds, per layer and tile in registers, so the step's end tests are equalities of registers: the
  // step's loops (kx, ky, tile) as their last less two (`_pen3_q`) and whether the last is zero, one or two
  logic [15:0] n_last_q, x_more_q;
  logic [15:0] y_pen_q;                          // the output rows less two; y's last is zero, or one
  logic y_zero_q, y_one_q;
  logic [7:0] kx_pen3_q, ky_pen3_q, m_pen3_q;    // less three: the `_nx_pen` flags' compares
  logic kx_zero_q, kx_one_q, ky_zero_q, ky_one_q, m_zero_q, m_one_q;
  logic kx_two_q, ky_two_q, m_two_q;
  logic single_q;                                // a group is one step: every step loop's last is zero
  // a Winograd layer's group counts 4 x 4 x (beats + 1) steps on these loops (its own counters say what each does)
  wire [7:0] kx_count = wino ? 8'd4 : dw ? phases : d.kw;
  wire [15:0] tiles_w = 16'((32'(d.conv_w) + 32'd1) >> 1);
  logic [15:0] x_groups_q;                       // a row's pixels, or a Winograd layer's tiles
  // output rows, or rows of tiles: a register, so its add is not behind loop_bound's compares
  logic [15:0] y_count;
  always_ff @(posedge clk) y_count <= wino ? 16'((32'(d.conv_h) + 32'd1) >> 1) : d.conv_h;
  loop_bound #(.W(8)) kx_bound (.clk_i(clk), .count_i(kx_count), .less2_o(), .less3_o(kx_pen3_q),
    .is1_o(kx_zero_q), .is2_o(kx_one_q), .is3_o(kx_two_q));
  loop_bound #(.W(8)) ky_bound (.clk_i(clk), .count_i(wino ? 8'd4 : d.kh), .less2_o(), .less3_o(ky_pen3_q),
    .is1_o(ky_zero_q), .is2_o(ky_one_q), .is3_o(ky_two_q));
  loop_bound #(.W(8)) m_bound (.clk_i(clk), .count_i(group_tiles), .less2_o(), .less3_o(m_pen3_q),
    .is1_o(m_zero_q), .is2_o(m_one_q), .is3_o(m_two_q));
  loop_bound #(.W(16)) y_bound (.clk_i(clk), .count_i(y_count), .less2_o(y_pen_q), .less3_o(),
    .is1_o(y_zero_q), .is2_o(y_one_q), .is3_o());
  always_ff @(posedge clk) begin
    first_last_q <= (wino ? 32'sd3 : 32'(d.kh) - 32'sd1) - 32'(d.pad_t);
    in_h_last_q <= 32'(d.in_h) - 32'sd1;
    n_last_q <= d.batch - 16'd1;
    // x0 below this: a group follows in the row (x0 counts tiles on a Winograd layer)
    // (from the row's groups in a register of its own: its add is not behind the compare and the subtract)
    x_groups_q <= wino ? tiles_w : d.conv_w;
    x_more_q <= 32'(x_groups_q) > 32'(P) ? x_groups_q - 16'(P) : 16'd0;
    single_q <= cbs_d == 16'd1 && kx_count == 8'd1 && d.kh == 8'd1 && group_tiles == 8'd1;
  end
  // where the step is in its loops, as flags kept beside the counters, each set by comparing the counter's
  // next value, itself a register (`_nx`, the counter plus one), so the step's advance decides from registers
  // what it resets and what it counts
  logic last_cb, last_kx, last_ky, last_tile, last_y, last_n, more_groups;
  // and two decisions of the step, in registers a step ahead: the group's last step (every loop at its last, the
  // group's last tile), and that the row ends with this group (no group follows in the row, no depthwise flush)
  logic group_last, row_end;
  // and, per step loop, that its next value is its last (`_nx` equals the last), so those decisions are one flag
  // deep: each steps to the `_nx_pen` flag below as the loop steps
  logic cb_nx_last, kx_nx_last, ky_nx_last, m_nx_last;
  // and, a step further ahead, that `_nx` is the last less one (what `_nx_last` steps to), kept the same way from
  // a compare of `_nx` with the last less two: the step sets `_nx_last` from a flag, no compare behind it
  logic cb_nx_pen, kx_nx_pen, ky_nx_pen, m_nx_pen;
  logic [15:0] cb_nx, y_nx, n_nx, x0_nx;
  logic [7:0] kx_nx, ky_nx;
  logic [TW-1:0] m_nx;
  // the step is its tap's last (last_cb && last_kx && last_ky): a register of its own, set from the flags' next
  // values as they are (its load is near forty: the tile and Winograd loops' enables)
  logic last_step;
  wire first_step = cb == 0 && kx == 0 && ky == 0;
  logic [31:0] oh_step;                          // an image's output rows (per layer, a register)
  always_ff @(posedge clk) oh_step <= d.out_step == 8'd2 ? 32'({d.out_h[14:0], 1'b0}) : 32'(d.out_h);
  // a new output row: the rows it needs are known two cycles later (near_q, need_q), so no step is issued
  // before then; the first of its steps waits three cycles
  wire row_change = t0_fire && group_last && row_end;   // one LUT: the fire's three registers and the two flags
  logic group_last_d;                     // group_last after a step within the group, from the flags' next values
  logic last_step_d;                      // ... and last_step
  always_comb begin
    logic lt, lc, lkx, lky;
    lt = last_step ? m_nx_last : last_tile;
    lc = !last_cb ? cb_nx_last : cb_one_q;
    lkx = !last_cb ? last_kx : !last_kx ? kx_nx_last : kx_zero_q;
    lky = !last_cb || !last_kx ? last_ky : last_ky ? ky_zero_q : ky_nx_last;
    group_last_d = lt && lc && lkx && lky;
    last_step_d = lc && lkx && lky;
  end
  always_ff @(posedge clk)                // (a group's end sets what its last step's wraps give: no group_last)
    if (start) last_step <= cb_one_q && kx_zero_q && ky_zero_q;
    else if (t0_fire) last_step <= last_step_d;
  logic image_end_q;
  always_ff @(posedge clk) begin
    near_q <= last_q < in_h_last_q ? last_q : in_h_last_q;
    need_q <= img_base + near_q;
    if (!rst_n || start || row_change) begin
      ready_q <= 1'b0; t0_fire <= 1'b0;
      settle_q <= 2'd2;
    end else begin
      ready_q <= active && settle_q == 2'd0 && $signed({1'b0, rows_loaded}) > 33'(need_q);
      t0_fire <= active && settle_q == 2'd0 && $signed({1'b0, rows_loaded}) > 33'(need_q) && adv_d;
      if (settle_q != 2'd0) settle_q <= settle_q - 2'd1;
    end
  end
  // `active` alone takes the reset: the loops' counters need none (a tile's start sets them all, and no step fires
  // or image ends without a start), so the reset's load stays out of their enables (through it, 4-pixel designs'
  // worst path)
  always_ff @(posedge clk)
    if (!rst_n) active <= 1'b0;
    else if (start) active <= 1'b1;
    else if (!t0_fire && image_end_q && last_n) active <= 1'b0;
  // the tap loops (cb, kx, ky) in a block of their own, on the start and the fire alone: a group's last step has
  // every one of them at its last, so the step's own wraps give what the group's end would set, and the group-last
  // flag (a load near fifty) is not among their decisions
  always_ff @(posedge clk)
    if (start) begin
      ky <= '0; kx <= '0; cb <= '0;
      ky_nx <= 8'd1; kx_nx <= 8'd1; cb_nx <= 16'd1;
      last_cb <= cb_one_q; last_kx <= kx_zero_q; last_ky <= ky_zero_q;
      cb_nx_last <= cb_two_q; kx_nx_last <= kx_one_q; ky_nx_last <= ky_one_q;
      cb_nx_pen <= cb_three_q; kx_nx_pen <= kx_two_q; ky_nx_pen <= ky_two_q;
    end else if (t0_fire) begin
      if (!last_cb) begin
        cb <= cb_nx; cb_nx <= cb_nx + 16'd1;
        last_cb <= cb_nx_last; cb_nx_last <= cb_nx_pen; cb_nx_pen <= cb_nx == cb_pen3_q;
      end else begin
        cb <= '0; cb_nx <= 16'd1;
        last_cb <= cb_one_q; cb_nx_last <= cb_two_q; cb_nx_pen <= cb_three_q;
        if (!last_kx) begin
          kx <= kx_nx; kx_nx <= kx_nx + 8'd1;
          last_kx <= kx_nx_last; kx_nx_last <= kx_nx_pen; kx_nx_pen <= kx_nx == kx_pen3_q;
        end else begin
          kx <= '0; kx_nx <= 8'd1;
          last_kx <= kx_zero_q; kx_nx_last <= kx_one_q; kx_nx_pen <= kx_two_q;
          if (last_ky) begin
            ky <= '0; ky_nx <= 8'd1;
            last_ky <= ky_zero_q; ky_nx_last <= ky_one_q; ky_nx_pen <= ky_two_q;
          end else begin
            ky <= ky_nx; ky_nx <= ky_nx + 8'd1;
            last_ky <= ky_nx_last; ky_nx_last <= ky_nx_pen; ky_nx_pen <= ky_nx == ky_pen3_q;
          end
        end
      end
    end
  always_ff @(posedge clk) begin
    if (start) begin
      n <= '0; x0 <= '0; wrow <= '0; m <= '0; flush <= 1'b0;
      n_nx <= 16'd1; x0_nx <= 16'(P); m_nx <= TW'(1);
      last_tile <= m_zero_q; m_nx_last <= m_one_q; m_nx_pen <= m_two_q;
      last_n <= n_last_q == 0; more_groups <= x_more_q != 0;
      group_last <= single_q; row_end <= x_more_q == 0 && !dw;
      img_base <= '0; nh_q <= '0; col0 <= 32'sd0 - 32'(d.pad_l);
    end else if (t0_fire) begin
      if (!group_last) begin
        group_last <= group_last_d;
        wrow <= wrow + WAW'(1);
        if (last_step) begin
          m <= m_nx; m_nx <= m_nx + TW'(1);
          last_tile <= m_nx_last; m_nx_last <= m_nx_pen; m_nx_pen <= 8'(m_nx) == m_pen3_q;
        end
      end else begin                       // the group is issued: the next group, row or image
        wrow <= '0; m <= '0; m_nx <= TW'(1);
        last_tile <= m_zero_q; m_nx_last <= m_one_q; m_nx_pen <= m_two_q;
        group_last <= single_q;
        if (!row_end) begin
          if (!more_groups) flush <= 1'b1;
          x0 <= x0_nx; x0_nx <= x0_nx + 16'(P);
          more_groups <= 32'(x0_nx) < 32'(x_more_q);
          row_end <= !(32'(x0_nx) < 32'(x_more_q) || (dw && more_groups && !flush));
          col0 <= col0 + col_step_q;
        end else begin
          flush <= 1'b0;
          x0 <= '0; x0_nx <= 16'(P);
          more_groups <= x_more_q != 0;
          row_end <= x_more_q == 0 && !dw;
          col0 <= 32'sd0 - 32'(d.pad_l);
        end
      end
    end else if (image_end_q) begin
      img_base <= img_base + 32'(d.in_h);
      nh_q <= nh_q + oh_step;
      if (!last_n) begin
        n <= n_nx; n_nx <= n_nx + 16'd1;
        last_n <= n_nx == n_last_q;
      end
    end
  end
  // the output row, in a block of its own: it moves on row_change alone, a register and the pipeline's fire; its
  // last is a flag set from y_nx_last (y_nx is the last), itself set as y steps from a compare in a register of
  // its own: y_nx moves on row_change and start only, and no row changes within three cycles of either (settle_q)
  logic y_nx_last, y_nx_pen_q;
  always_ff @(posedge clk) y_nx_pen_q <= y_nx == y_pen_q;
  always_ff @(posedge clk) begin
    if (start) begin
      y <= '0; y_nx <= 16'd1; last_y <= y_zero_q; y_nx_last <= y_one_q;
      row0 <= 32'sd0 - 32'(d.pad_t); last_q <= first_last_q;
    end else if (row_change) begin
      if (!last_y) begin
        y <= y_nx; y_nx <= y_nx + 16'd1;
        last_y <= y_nx_last;
        y_nx_last <= y_nx_pen_q;
        row0 <= row0 + 32'(row_step_q);
        last_q <= last_q + 32'(row_step_q);
      end else begin
        y <= '0; y_nx <= 16'd1;
        last_y <= y_zero_q; y_nx_last <= y_one_q;
        row0 <= 32'sd0 - 32'(d.pad_t);
        last_q <= first_last_q;
      end
    end
  end
  // Winograd: the step's position (wpos, inner) and beat (wcb) and its weight row, beside the loops above, which
  // count each of the group's tiles' 16 (beats + 1) steps; weights [tile][4][4][in_c / V]: position (a, b) of beat k
  // at row (4a + b) cbs + k past the tile's first (wbase), computed a beat late
  if (WINO) begin : g_wino_steps
    logic [WAW-1:0] wbase, wtile_rows;
    logic [15:0] cbs_less1_q;                    // per layer: wcb's last is a compare, no add behind it
    always_ff @(posedge clk) begin
      wtile_rows <= WAW'(cbs) << 4;
      cbs_less1_q <= cbs - 16'd1;
    end
    always_ff @(posedge clk)
      if (start || (t0_fire && last_step)) begin
        wpos <= '0; wcb <= '0; last_wcb <= 1'b0; wwrow <= '0; wload_pos <= '0;
        wbase <= start || group_last ? '0 : wbase + wtile_rows;
      end else if (t0_fire) begin
        wpos <= wpos + 4'd1;
        wload_pos <= wpos == 4'd15 ? 4'd0 : wload_pos[1:0] == 2'd2 ? {wload_pos[3:2] + 2'd1, 2'd0} : wload_pos + 4'd1;
        if (wpos == 4'd15) begin
          wcb <= wcb + 16'd1;
          last_wcb <= wcb == cbs_less1_q;
          wwrow <= wbase + WAW'(wcb);
        end else wwrow <= wwrow + WAW'(cbs);
      end
  end else begin : g_no_wino_steps
    assign wpos = '0;
    assign wcb = '0;
    assign last_wcb = 1'b0;
    assign wload_pos = '0;
    assign wwrow = '0;
  end
  // an image's last row issued: the next image's counters a cycle later, from this register, which is safe as a
  // new row issues no step for three cycles, and only cautious for `lowest_q` (the old image's base) meanwhile
  always_ff @(posedge clk)
    image_end_q <= rst_n && !start && row_change && last_y;

  // ---- TA, TA2, TB: the step's window address ----------------------------------------------------------
  localparam int FW = 4 + TW + PB + 3 * 16 + WAW + 11;  // the step's fields carried to T1
  // a Winograd step's: it loads (a patch row's segment), computes (a beat late), ends the beat (position 15)
  wire t0_wload = !last_wcb && wpos < 4'd12;
  // the step whose sums take the tile's bias: a group's first; a Winograd group's first computing beat's position
  // (1, 1), the one whose sum goes into all four outputs, each with a plus
  wire t0_bias = wino ? wcb == 16'd1 && wpos == 4'd5 : first_step;
  logic ta_valid, ta2_valid, tb_valid;
  logic [FW-1:0] ta_f, ta2_f, tb_f;
  logic [2:0] ta_slot;
  logic ta_phase;
  logic [WA-1:0] ta2_base;                       // the slot's and phase's first word: TB's sum is of two
  logic [15:0] ta_cb, ta2_cb;
  logic [31:0] ta_limit, ta2_limit, tb_limit;
  logic [WA-1:0] tb_part, tb_cols;               // slot, phase and channel beat; column times channel beats
  // the same sums a channel-beat row (cbs) on, for the banks the step's rotation moves to the next column
  logic [WA-1:0] ta2_base_c, tb_part_c;
  logic [WA-1:0] cbs_q;
  always_ff @(posedge clk) cbs_q <= WA'(cbs);
  // each window slot's first word (slot x row words), per layer
  logic [WA-1:0] slot_base_q[8];
  logic [WA-1:0] slot_base_c_q[8];
  always_ff @(posedge clk)
    for (int k = 0; k < 8; k++) begin
      slot_base_q[k] <= WA'((k % 2 == 1 ? row_words : 32'd0) + ((k / 2) % 2 == 1 ? row_words << 1 : 32'd0)
                            + (k / 4 == 1 ? row_words << 2 : 32'd0));
      slot_base_c_q[k] <= slot_base_q[k] + cbs_q;
    end
  // the column times the channel beats (its low WA bits): operands at TA, product at TA2, out at TB
  logic signed [WA-1:0] cols_p;
  dsp_mult #(.AW(17), .BW(17), .PW(WA), .PRIMITIVE(PRIMITIVE)) cols_product (
    .clk_i(clk), .en_i(adv), .a_i({1'b0, t0_jc}), .b_i({1'b0, cbs}), .c_i('0), .p_o(cols_p));
  assign tb_cols = cols_p;
  always_ff @(posedge clk) begin
    if (!rst_n || start) begin
      ta_valid <= 1'b0; ta2_valid <= 1'b0; tb_valid <= 1'b0;
    end else if (adv) begin
      ta_valid <= t0_fire; ta2_valid <= ta_valid; tb_valid <= ta2_valid;
    end
    if (adv) begin
      ta_f <= {t0_wload, wload_pos, wcb != 16'd0, wpos == 4'd13, wpos, t0_bias, last_step, flush, kx[0], m, t0_rot, n, y,
               x0, t0_wraddr};
      ta_slot <= t0_slot; ta_phase <= s2 && ix0[0]; ta_cb <= wino ? wcb : cb; ta_limit <= limit_q;
      ta2_f <= ta_f; ta2_cb <= ta_cb; ta2_limit <= ta_limit;
      ta2_base <= slot_base_q[ta_slot] + (ta_phase ? WA'(phase_words) : WA'(0));
      ta2_base_c <= slot_base_c_q[ta_slot] + (ta_phase ? WA'(phase_words) : WA'(0));
      tb_f <= ta2_f;
      ta2_mask <= ta_mask; tb_mask <= ta2_mask;
      tb_part <= WA'(32'(ta2_base) + 32'(ta2_cb));
      tb_part_c <= WA'(32'(ta2_base_c) + 32'(ta2_cb));
      tb_limit <= ta2_limit;
    end
  end
  logic tb_bias, tb_last, tb_flush, tb_phase, tb_wload, tb_wcomp, tb_wsnap;
  logic [3:0] tb_wload_pos;
  logic [3:0] tb_wpos;                          // Winograd: position (a, b), for the patch at T1
  logic [TW-1:0] tb_m;
  logic [PB-1:0] tb_rot;
  logic [15:0] tb_n, tb_y, tb_x;
  logic [WAW-1:0] tb_wraddr;
  logic t1_phase;
  logic [WAW-1:0] t1_wraddr;
  assign {tb_wload, tb_wload_pos, tb_wcomp, tb_wsnap, tb_wpos, tb_bias, tb_last, tb_flush, tb_phase, tb_m, tb_rot, tb_n, tb_y,
          tb_x, tb_wraddr} = tb_f;
  logic [P*WA-1:0] win_raddr;
  always_comb
    for (int b = 0; b < P; b++)
      win_raddr[b*WA +: WA] = tb_cols + ((P > 1 && 32'(b) < 32'(tb_rot)) ? tb_part_c : tb_part);
  assign w_re = adv;
  assign w_raddr = t1_wraddr;                    // read at T1, out with the operands at TX
  // registered, so the address generator's issue does not wait on this sum; the oldest step in flight reads the
  // lowest row, and rows only grow within a tile (cleared at its start), so a cycle late is only a cycle cautious;
  // limit_q is a new tile's two cycles after its start, so the limit stays 0 until then
  logic [1:0] fresh_q;
  always_ff @(posedge clk) begin
    fresh_q <= {fresh_q[0], start};
    if (!rst_n || start || |fresh_q) load_limit <= '0;
    else load_limit <= tb_valid ? tb_limit : ta2_valid ? ta2_limit : ta_valid ? ta_limit
                      : active ? limit_q : 32'hffff_ffff;
  end

  logic [P*DW-1:0] win_rdata;
  window_ram #(.V(V), .P(P), .WDEPTH(WDEPTH)) wram (
    .clk, .we(win_we), .wbank(w_bank), .waddr(win_waddr), .wdata(win_wdata), .re(adv), .raddr(win_raddr),
    .rdata(win_rdata));

  // ---- T1: the RAMs' words are out; rotate banks to pixels, multiply, sum over the lanes ------------
  logic t1_valid, t1_bias, t1_last, t1_flush, t1_wload, t1_wcomp, t1_wsnap;
  logic [3:0] t1_wload_pos;
  logic [3:0] t1_wpos;
  logic [P-1:0] t1_mask;
  logic [PB-1:0] t1_rot;
  logic [15:0] t1_n, t1_y, t1_x;
  logic out2;                                    // a transposed conv's phase: on the twice-as-large output
  always_ff @(posedge clk) out2 <= d.out_step == 8'd2;
  logic [TW-1:0] t1_m, t2_m;
  always_ff @(posedge clk) begin
    if (!rst_n) t1_valid <= 1'b0;
    else if (adv) t1_valid <= tb_valid;
    if (adv) begin
      t1_m <= tb_m;
      t1_bias <= tb_bias; t1_last <= tb_last; t1_mask <= tb_mask; t1_rot <= tb_rot;
      t1_flush <= tb_flush; t1_phase <= tb_phase; t1_wraddr <= tb_wraddr;
      t1_n <= tb_n; t1_y <= tb_y; t1_x <= tb_x;
      t1_wload <= tb_wload; t1_wload_pos <= tb_wload_pos; t1_wcomp <= tb_wcomp; t1_wsnap <= tb_wsnap; t1_wpos <= tb_wpos;
    end
  end

  assign dw_phase_next = t1_phase;
  logic [P*DW-1:0] t1_words;                     // the P columns' words, the input's zero point outside it
  always_comb
    for (int p = 0; p < P; p++)
      t1_words[p*DW +: DW] = t1_mask[p] ? win_rdata[32'((32'(t1_rot) + 32'(p)) & 32'(P - 1)) * DW +: DW]
                                        : {(DW / 8){d.in_zero}};
  // ---- T1 -> T2 through TX and the array's pipeline: the step's fields wait AL steps for its sums (stage 0: TX) ----
  localparam int AL = 1 + ARRAY_LATENCY;
  localparam int SW = 4 + TW + 3 * 16 + 5;      // valid, bias, last, flush, tile, n, y, x; Winograd: computes, position
  logic [AL*SW-1:0] a_steps;                    // the step in array stage k at [SW*k +: SW]
  logic a_valid, a_bias, a_last, a_flush, a_wcomp;
  logic [3:0] a_wpos;
  logic [TW-1:0] a_m;
  logic [15:0] a_n, a_y, a_x;
  always_ff @(posedge clk) begin
    if (!rst_n) a_steps <= '0;
    else if (adv) a_steps <= {a_steps[(AL-1)*SW-1:0], t1_valid, t1_bias, t1_last, t1_flush, t1_m, t1_n, t1_y, t1_x,
                              t1_wcomp, t1_wpos};
  end
  assign {a_valid, a_bias, a_last, a_flush, a_m, a_n, a_y, a_x, a_wcomp, a_wpos} = a_steps[(AL-1)*SW +: SW];
  // ---- TX: the rotated words in a register, the array's operands (the P:1 rotate on the RAMs' outputs, with the
  // Winograd select behind it, straight into the DSPs' B input was the 4- and 8-pixel designs' worst path); the
  // weight RAM is read a stage later to match
  logic [P*DW-1:0] tx_words;
  always_ff @(posedge clk)
    if (adv) tx_words <= t1_words;
  if (WINO) begin : g_wino_patch
    logic tx_wload, tx_wsnap;
    logic [3:0] tx_wload_pos;
    always_ff @(posedge clk)
      if (adv) begin
        tx_wload <= t1_wload; tx_wload_pos <= t1_wload_pos; tx_wsnap <= t1_wsnap;
      end
    logic [P*10*V-1:0] wv;
    winograd_patch #(.V(V), .P(P)) patch (
      .clk_i(clk), .en_i(adv), .sel_a_i(tb_wpos[3:2]), .sel_b_i(t1_wpos[1:0]), .step_i(a_steps[SW-1]),
      .load_i(tx_wload), .load_a_i(tx_wload_pos[3:2]), .load_b_i(tx_wload_pos[1:0]), .words_i(tx_words),
      .snap_i(tx_wsnap), .v_o(wv));
    always_comb
      for (int p = 0; p < P; p++)
        for (int l = 0; l < V; l++)
          array_x[(p*V + l)*XW +: XW] = wino ? wv[(p*V + l)*10 +: 10] : XW'($signed(tx_words[(p*V + l)*8 +: 8]));
  end else begin : g_bytes
    assign array_x = tx_words;
  end

  // the group's output pixel address (plus the tile's channels) beside it: pixel_address takes
  // ADDRESS_LATENCY steps from T0's counters (its first stage beside TA, three steps ahead of T1), then it waits
  // out the array's others
  localparam int OD = AL + 4 - ADDRESS_LATENCY;
  logic [63:0] pa_oaddr;
  logic [31:0] a_oaddr, t2_oaddr;
  // per layer: the output coordinates doubled (an interleaved or a Winograd layer's), plus the phase
  logic o_double_q, o_phase_y_q, o_phase_x_q;
  always_ff @(posedge clk) begin
    o_double_q <= out2 || wino;
    o_phase_y_q <= out2 && d.out_phase_y[0];
    o_phase_x_q <= out2 && d.out_phase_x[0];
  end
  pixel_address #(.B(V), .PRIMITIVE(PRIMITIVE)) group_address (
    .clk_i(clk), .en_i(adv), .nh_i(nh_q),
    .y_i(o_double_q ? {15'd0, y, o_phase_y_q} : 32'(y)),
    .x_i(o_double_q ? {15'd0, x0, o_phase_x_q} : 32'(x0)), .w_i(out2 ? {d.out_w[14:0], 1'b0} : d.out_w),
    .stride_i(d.out_c_stride), .base_i(d.out_addr), .add_i(32'(d.out_c_offset) + 32'(c0) + 32'(m) * 32'(R)),
    .wide_i(1'b0), .align_i(1'b0), .zero_i(1'b0), .addr_o(pa_oaddr));
  if (OD > 0) begin : g_oaddr_wait
    logic [31:0] od_q[OD];
    always_ff @(posedge clk)
      if (adv) begin
        od_q[0] <= pa_oaddr[31:0];
        for (int k = 1; k < OD; k++) od_q[k] <= od_q[k - 1];
      end
    assign a_oaddr = od_q[OD-1];
  end else begin : g_oaddr_now
    assign a_oaddr = pa_oaddr[31:0];
  end
  logic [AL-1:0] a_busy;
  always_comb for (int k = 0; k < AL; k++) a_busy[k] = a_steps[k*SW + SW - 1];

  // ---- T2: accumulate; a finished group moves to the output buffer ------------------------------------------
  // A group's end clears the accumulators (their registers' synchronous reset). With the Winograd unit the tile's
  // bias goes into the sums of its bias step (t0_bias) on their way into T2, so each of the four sets adds one term
  // and selects nothing (a bias-or-accumulator select per set was a quarter of the unit's LUTs); without it the
  // bias step starts the one set from the bias, a select its adder absorbs.
  logic t2_valid, t2_bias, t2_last, t2_flush, t2_wcomp;
  logic [15:0] t2_n, t2_y, t2_x;
  logic [16:0] t2_left;                          // conv_w - t2_x (wrapped: from 2^16 on when negative), beside it
  logic signed [ACC_W-1:0] t2_sum[P][R];
  logic signed [19:0] t2_carry[P][DL];           // depthwise: the previous group's share
  // the tile's bias (the tables hold still while a group runs): with the unit the step entering T2's, picked from
  // its tile a stage early; without it the step at T2's
  logic signed [ACC_W-1:0] bias_word[R];
  if (WINO) begin : g_bias_early
    logic [TW-1:0] pre_m;
    assign pre_m = a_steps[(AL-2)*SW + 5 + 3*16 +: TW];   // above x, y, n, computes and position
    always_ff @(posedge clk)
      if (adv)
        for (int r = 0; r < R; r++) bias_word[r] <= bias[ACC_W*(G*32'(pre_m) + r) +: ACC_W];
  end else begin : g_bias_at_t2
    always_ff @(posedge clk)
      if (adv)
        for (int r = 0; r < R; r++) bias_word[r] <= bias[ACC_W*(G*32'(a_m) + r) +: ACC_W];
  end
  wire sum_bias = WINO && a_bias;
  always_ff @(posedge clk) begin
    if (!rst_n) t2_valid <= 1'b0;
    else if (adv) begin
      t2_valid <= a_valid;
      t2_bias <= a_bias; t2_last <= a_last; t2_m <= a_m; t2_n <= a_n; t2_y <= a_y; t2_x <= a_x;
      t2_left <= {1'b0, d.conv_w} - {1'b0, a_x};
      t2_flush <= a_flush;
      t2_oaddr <= a_oaddr;
      t2_wcomp <= a_wcomp;
      for (int p = 0; p < P; p++)
        for (int r = 0; r < R; r++)
          t2_sum[p][r] <= (dw ? ACC_W'(0) : $signed(array_sums[(p*R + r)*ACC_W +: ACC_W]))
                          + (sum_bias ? bias_word[r] : ACC_W'(0));
      if (dw)
        for (int p = 0; p < P; p++)
          for (int v = 0; v < DL; v++)
            t2_sum[p][v] <= ACC_W'($signed(array_taps[((P + p)*V + v)*20 +: 20])) + (sum_bias ? bias_word[v] : ACC_W'(0));
      for (int p = 0; p < P; p++)
        for (int v = 0; v < DL; v++) t2_carry[p][v] <= $signed(array_taps[(p*V + v)*20 +: 20]);
    end
  end

  // Winograd: output (i, j) of a tile takes A^T[i][a] A^T[j][b] of position (a, b)'s sum (Y = A^T M A is linear,
  // so M is never stored), into one of Q accumulator sets
  localparam int Q = WINO ? 4 : 1;
  function automatic logic [1:0] a_t(input logic i, input logic [1:0] a);    // A^T[i][a]: {negative, non-zero}
    a_t = !i ? {1'b0, a != 2'd3} : {a[1], a != 2'd0};
  endfunction
  logic signed [ACC_W-1:0] acc[Q][P][R], acc_next[Q][P][R];
  if (WINO) begin : g_wino_sets
    // per set, whether the step's sum goes in and negated, a stage early
    logic [Q-1:0] t2_on, t2_neg;
    always_ff @(posedge clk)
      if (adv)
        for (int q = 0; q < Q; q++) begin
          logic [1:0] ci, cj;
          ci = a_t(q[1], a_wpos[3:2]);
          cj = a_t(q[0], a_wpos[1:0]);
          t2_on[q] <= !wino || (ci[0] && cj[0]);
          t2_neg[q] <= wino && ci[0] && cj[0] && (ci[1] ^ cj[1]);
        end
    // one adder each: the sum, its complement plus one, or nothing (a carry-in below the sum's bits)
    always_comb
      for (int q = 0; q < Q; q++)
        for (int p = 0; p < P; p++)
          for (int r = 0; r < R; r++) begin
            logic [ACC_W-1:0] term;
            term = t2_on[q] ? (t2_neg[q] ? ~t2_sum[p][r] : t2_sum[p][r]) : ACC_W'(0);
            acc_next[q][p][r] = ACC_W'(({acc[q][p][r], 1'b1} + {term, t2_neg[q]}) >> 1);
          end
  end else begin : g_one_set
    always_comb
      for (int p = 0; p < P; p++)
        for (int r = 0; r < R; r++) acc_next[0][p][r] = (t2_bias ? bias_word[r] : acc[0][p][r]) + t2_sum[p][r];
  end

  // depthwise: the group before this one takes its share of this group's sums here
  logic signed [ACC_W-1:0] prev[P][DL], prev_next[P][DL];   // the depthwise lanes (DL) only
  logic prev_valid;
  logic [15:0] prev_count, prev_n, prev_y, prev_x;
  logic [31:0] prev_oaddr;
  always_comb
    for (int p = 0; p < P; p++)
      for (int v = 0; v < DL; v++) prev_next[p][v] = prev[p][v] + ACC_W'(t2_carry[p][v]);

  logic signed [ACC_W-1:0] ob[P][R];
  // the pixel handed on next: a drain steps it, the buffer's pixels stay put (their enable is the hold's move
  // alone, not move || drain, both at loads near two thousand)
  logic [PB-1:0] ob_rd;
  logic [15:0] ob_count, ob_n, ob_y, ob_x;
  logic ob_empty_q, ob_one_q;                    // ob_count == 0, == 1
  logic [31:0] ob_oaddr;
  logic [TW-1:0] ob_tile;
  // residual operands: a pixel's RB beats, out of a register when its pixel leaves
  localparam int RB = R > V ? R / V : 1;
  logic res_valid;
  logic [RB*DW-1:0] res_pixel;
  wire res_in = !has_res || res_valid;          // the residual operand a drain needs is out (or none is needed)
  wire drain = !ob_empty_q && room && res_in;
  // its pop is drain's but for res_valid (the queue ignores a pop while no pixel is out)
  residual_queue #(.DW(DW), .BEATS(RB), .DEPTH(RESQ)) res_queue (
    .clk_i(clk), .rst_ni(rst_n), .clear_i(start), .push_i(ab_valid && is_res), .data_i(ab_data),
    .ready_o(res_room), .valid_o(res_valid), .shift_i(R >= V ? '0 : $clog2(RB*DW/8)'(c0 & 16'(V - 1))),
    .pixel_o(res_pixel), .pop_i(!ob_empty_q && room && has_res));
  assign item_b = res_pixel;                     // R < V: shifted to the tile's lanes in the queue
  // A finished group goes to a hold register, and from there to the output buffer when that is empty or gives
  // its last pixel now. The pipeline's move (`adv`) fans out to the whole array, so it is a register, set from
  // what the next cycle holds: it stops the pipeline only while a finished group at T2 would find the hold full.
  // (drain's terms written out: one LUT of six registers, not a LUT behind drain's, ahead of the hold's load)
  wire ob_free = ob_empty_q || (ob_one_q && room && res_in);
  logic hold_q;
  logic signed [ACC_W-1:0] hd[Q][P][R];
  logic [1:0] hset;                              // Winograd: the set the hold hands on next (output (i, j))
  wire hold_last = !wino || hset == 2'(Q - 1);
  logic [15:0] hd_count, hd_n, hd_y, hd_x;
  // the hold's sets' output addresses, handed on in order (set 0 first, the others' shifted down as it moves):
  // summed as the group comes in, so a set's move to the output buffer picks no offset by hset (at a load near two
  // thousand) ahead of an add
  logic [31:0] hd_oaddr[Q];
  logic [TW-1:0] hd_tile;
  (* keep *) wire move = hold_q && ob_free;    // kept: a LUT of registers, not re-mapped behind drain's LUT
  // a group's end (T2 holds its last step and the pipeline moves) and its move to the hold (a group to hand on):
  // registers set a cycle ahead from what the next cycle holds, as `adv` is, so the accumulators' clear and the
  // hold's load (thousands of flip-flops each) are a register's net, and the pipeline's move does not decide them
  // through its own load
  logic group_end, to_hold, acc_en;
  wire hold_d = to_hold || (hold_q && !(move && hold_last));
  wire t2_valid_d = adv ? a_valid : t2_valid;
  wire t2_last_d = adv ? a_last : t2_last;
  wire t2_wcomp_d = adv ? a_wcomp : t2_wcomp;
  wire prev_valid_d = start ? 1'b0 : group_end && dw ? !t2_flush : prev_valid;
  wire ends_d = t2_valid_d && t2_last_d;
  wire emit_d = !dw || prev_valid_d;             // a finished group hands a group on
  assign adv_d = !(ends_d && emit_d && hold_d);
  always_ff @(posedge clk) begin
    if (!rst_n) begin
      adv <= 1'b1;
      hold_q <= 1'b0;
      group_end <= 1'b0; to_hold <= 1'b0; acc_en <= 1'b0;
    end else begin
      adv <= adv_d;
      hold_q <= hold_d;
      group_end <= ends_d && adv_d;
      to_hold <= ends_d && emit_d && !hold_d;
      acc_en <= t2_valid_d && adv_d && (!wino || t2_wcomp_d);
    end
  end
  // DOUBLE: the array's DSPs at twice the clock take its move in half a cycle, from a copy of `adv` of their own,
  // so the window path's control does not share their load. Its reset value differs (the array has nothing to move
  // the cycle after reset), which is what keeps synthesis from merging the two: a `keep` did not
  if (DOUBLE) begin : g_array_move
    logic adv_array;
    always_ff @(posedge clk) begin
      if (!rst_n) adv_array <= 1'b0;
      else adv_array <= adv_d;
    end
    assign array_en = adv_array;
  end else begin : g_shared_move
    assign array_en = adv;
  end
  // the group's pixels in the row: a compare of a register with a constant, no subtract behind the hold's count
  wire [15:0] g_count = t2_left < 17'(P) ? 16'(t2_left) : 16'(P);
  wire [31:0] g_oaddr = t2_oaddr;
  logic [31:0] o_step;                           // between pixels
  always_ff @(posedge clk)
    o_step <= d.out_step == 8'd2 || wino ? 32'(d.out_c_stride) << 1 : 32'(d.out_c_stride);
  // Winograd: set (i, j) holds output row 2y + i, columns 2 x0 + j + 2p, written where they are in the output
  logic [31:0] orow;                             // an output row's address step
  logic [15:0] w_count;                          // the set's pixels in the output
  logic w_zero, w_one;                           // ... are none, one
  if (WINO) begin : g_wino_rows
    lut_mult #(.AW(16), .BW(16), .PW(32)) row_step (
      .clk_i(clk), .en_i(1'b1), .a_i(d.out_w), .b_i(d.out_c_stride), .p_o(orow));
    // the hold's sets' pixels in the output (and whether none or one). Set (i, j) of a group at tile column x has
    // (conv_w - 2x - j + 1) >> 1 columns from x on (its pixel pairs), that is a per-layer half width less x: taken
    // with T2's registers (a subtract from registers), and its row 2y + i in the output likewise, so the hold's
    // counts are compares of registers with constants, no carry chain behind them
    logic signed [16:0] t2_half[2];
    logic [1:0] t2_row_in;
    logic [15:0] half_w_q[2];
    logic [4*16-1:0] hd_wcount;
    logic [3:0] hd_wzero, hd_wone;
    always_ff @(posedge clk) begin
      half_w_q[0] <= 16'((32'(d.conv_w) + 32'd1) >> 1);
      half_w_q[1] <= d.conv_w >> 1;
      if (adv)
        for (int k = 0; k < 2; k++) begin
          t2_half[k] <= $signed({1'b0, half_w_q[k]}) - $signed({1'b0, a_x});
          t2_row_in[k] <= (32'(a_y) << 1) + 32'(k) < 32'(d.conv_h);
        end
      if (to_hold)
        for (int i = 0; i < 2; i++)
          for (int j = 0; j < 2; j++) begin
            logic none;
            none = !t2_row_in[i] || t2_half[j] <= 0;
            hd_wcount[16*(2*i + j) +: 16] <= none ? 16'd0 : t2_half[j] < 17'(P) ? 16'(t2_half[j]) : 16'(P);
            hd_wzero[2*i + j] <= none;
            hd_wone[2*i + j] <= !none && t2_half[j] == 17'sd1;
          end
    end
    assign w_count = hd_wcount[16*hset +: 16];
    assign w_zero = hd_wzero[hset];
    assign w_one = hd_wone[hset];
  end else begin : g_no_rows
    assign orow = '0;
    assign w_count = '0;
    assign w_zero = 1'b0;
    assign w_one = 1'b0;
  end
  // Winograd: set (i, j)'s place from its group's, per layer
  logic [31:0] set_off_q[Q];
  always_ff @(posedge clk)
    for (int k = 0; k < Q; k++) set_off_q[k] <= (k >= 2 ? orow : 32'd0) + (k % 2 == 1 ? 32'(d.out_c_stride) : 32'd0);
  assign wait_output = !adv;
  assign mac_beat = t2_valid && adv;

  always_ff @(posedge clk) begin
    if (!rst_n || start) prev_valid <= 1'b0;
    else if (group_end && dw) begin
      prev_valid <= !t2_flush;
      prev_count <= g_count; prev_n <= t2_n; prev_y <= t2_y; prev_x <= t2_x; prev_oaddr <= g_oaddr;
    end
    if (group_end && dw)
      for (int p = 0; p < P; p++)
        for (int v = 0; v < DL; v++) prev[p][v] <= acc_next[0][p][v];
    else if (t2_valid && adv && dw)
      for (int p = 0; p < P; p++)
        for (int v = 0; v < DL; v++) prev[p][v] <= prev_next[p][v];
  end

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      ob_count <= '0; ob_empty_q <= 1'b1; ob_one_q <= 1'b0; ob_rd <= '0;
    end else begin
      if (move) begin
        ob_rd <= '0;
        // the set hset (a direct layer's hold hands on once, from set 0: hset is 0 then)
        for (int q = 0; q < Q; q++)
          if (Q == 1 || 2'(q) == hset)
            for (int p = 0; p < P; p++)
              for (int r = 0; r < R; r++) ob[p][r] <= hd[q][p][r];
        if (wino) begin
          ob_count <= w_count; ob_empty_q <= w_zero; ob_one_q <= w_one;
        end else begin
          ob_count <= hd_count; ob_empty_q <= hd_count == 16'd0; ob_one_q <= hd_count == 16'd1;
        end
      end else if (drain) begin
        if (P > 1) ob_rd <= ob_rd + PB'(1);
        ob_count <= ob_count - 16'd1;
        ob_empty_q <= ob_one_q; ob_one_q <= ob_count == 16'd2;
      end
    end
  end
  // the handed-on pixel's coordinates and address, without the reset (a move sets them before a drain reads them:
  // the buffer is empty until one), so their enable is move || drain, not a term of the reset behind both
  always_ff @(posedge clk)
    if (move) begin
      ob_n <= hd_n; ob_tile <= hd_tile; ob_oaddr <= hd_oaddr[0];
      if (wino) begin
        ob_y <= {hd_y[14:0], hset[1]}; ob_x <= {hd_x[14:0], hset[0]};
      end else begin
        ob_y <= hd_y; ob_x <= hd_x;
      end
    end else if (drain) begin
      ob_x <= ob_x + (wino ? 16'd2 : 16'd1);
      ob_oaddr <= ob_oaddr + o_step;
    end

  // the accumulators: cleared at reset, a tile's start and a group's end (to the hold, or depthwise to `prev`)
  always_ff @(posedge clk)
    for (int q = 0; q < Q; q++)
      for (int p = 0; p < P; p++)
        for (int r = 0; r < R; r++)
          if (!rst_n || start || group_end) acc[q][p][r] <= '0;
          else if (acc_en) acc[q][p][r] <= acc_next[q][p][r];

  always_ff @(posedge clk)
    if (to_hold && dw) begin
      for (int p = 0; p < P; p++) begin
        for (int r = 0; r < R; r++) hd[0][p][r] <= '0;
        for (int v = 0; v < DL; v++) hd[0][p][v] <= prev_next[p][v];
      end
      hd_count <= prev_count;
      hd_n <= prev_n; hd_y <= prev_y; hd_x <= prev_x; hd_tile <= '0;
    end else if (to_hold) begin
      for (int q = 0; q < Q; q++)
        for (int p = 0; p < P; p++)
          for (int r = 0; r < R; r++) hd[q][p][r] <= acc_next[q][p][r];
      hd_count <= g_count;
      hd_n <= t2_n; hd_y <= t2_y; hd_x <= t2_x; hd_tile <= t2_m;
    end
  always_ff @(posedge clk)
    if (to_hold) begin
      hd_oaddr[0] <= dw ? prev_oaddr : g_oaddr;
      for (int k = 1; k < Q; k++) hd_oaddr[k] <= g_oaddr + set_off_q[k];
    end else if (move)
      for (int k = 0; k + 1 < Q; k++) hd_oaddr[k] <= hd_oaddr[k + 1];

  always_ff @(posedge clk)
    if (to_hold || !rst_n) hset <= '0;
    else if (move) hset <= hset + 2'd1;

  assign item_valid = drain;
  always_comb begin
    item_acc = '0;
    for (int r = 0; r < R; r++) item_acc[ACC_W*r +: ACC_W] = ob[P > 1 ? 32'(ob_rd) : 0][r];
  end
  assign item_oaddr = ob_oaddr;
  assign item_tile = ob_tile;
  assign item_n = ob_n;
  assign item_y = ob_y;
  assign item_x = ob_x;
  assign busy = active || ta_valid || ta2_valid || tb_valid || t1_valid || |a_busy || t2_valid || hold_q || !ob_empty_q;
endmodule
