// A layer descriptor: its 128 little-endian bytes as the fields of engine_pkg::desc_t, whether this
// engine (its kernel, weight RAM and pool-ring sizes) can run it, and whether a standard conv takes the
// window path (P pixels per step from the on-chip input window) and with which window geometry, and whether
// how many output-channel tiles it takes over one load of its input (up to P, as many as the weight RAM holds).
// Its three products are in the fabric (lut_mult, three cycles each). The layer's kind flags
// are registered a cycle after the descriptor, `fits` takes seven cycles (kh x kw, then times the channel beats,
// then itself), the window path's geometry six and its choice seven: the controller reads the flags and `fits` in
// S_CHECK's sixth cycle, after S_DECODE and S_SIZE, the window path from S_TILE on (after S_LUT1 and S_LUT2).
import engine_pkg::*;

module layer_descriptor #(
  parameter int V = 16,
  parameter int R = 16,
  parameter int MAXK = 7,
  parameter int MAX_W = 64,
  parameter int WROWS = 1024,
  parameter int P = 1,             // pixels per step of the window path (1: no window path)
  parameter int WDEPTH = 2,        // window words per bank
  parameter int RESQ = 512,        // residual beats the window path queues (a row of them)
  parameter bit DWW = 1,           // the depthwise kernel-row logic is built
  parameter bit WINO = 0           // the window path's Winograd unit: WINOGRAD layers take it (16 weight taps)
) (
  input  logic clk,
  input  logic rst_n,
  input  logic [1023:0] raw,
  output logic [engine_pkg::DESC_BITS-1:0] desc,
  output logic fits,
  output logic is_conv, dw, has_pool, is_gap,   // the layer's kind (dw, has_pool: a conv's flags)
  output logic need_lut1, need_lut2,            // its activations take lookup tables 1 and 2
  output logic win,                // the layer runs on the window path
  output logic win_items,          // ... a copy for the picks between the two paths' results (hundreds of bits)
  output logic win_operands,       // ... and one for the pick of the array's operands (hundreds more)
  output logic win_rows,           // a depthwise layer there takes a kernel row per step (else a tap, diagonally)
  output logic [7:0] group_max,    // output-channel tiles a window layer takes over one load of its input
  output logic [4:0] win_slots,    // input rows the window holds
  output logic [31:0] win_phase_words,  // words of one stride phase of a row in each bank
  output logic [31:0] win_row_words,    // words of a row in each bank
  output logic [31:0] tile_rows,        // weight RAM rows of a standard conv's output-channel tile
  output logic [15:0] taps              // kh x kw (4 x 4 for a Winograd layer), three cycles after the descriptor
);
  `include "engine_functions.svh"
  localparam int LP = P > 1 ? $clog2(P) : 0;
  localparam int VSH = $clog2(V);
  localparam int RINGK = MAXK + 1;
  engine_pkg::desc_t d;
  assign desc = d;
  always_comb begin
    d.op = raw[0*8 +: 8];            d.flags = raw[1*8 +: 8];          d.act1 = raw[2*8 +: 8];
    d.act2 = raw[3*8 +: 8];          d.batch = raw[4*8 +: 16];         d.in_h = raw[6*8 +: 16];
    d.in_w = raw[8*8 +: 16];         d.in_c = raw[10*8 +: 16];         d.in_c_stride = raw[12*8 +: 16];
    d.in_c_offset = raw[14*8 +: 16]; d.out_h = raw[16*8 +: 16];        d.out_w = raw[18*8 +: 16];
    d.out_c = raw[20*8 +: 16];       d.out_c_stride = raw[22*8 +: 16]; d.out_c_offset = raw[24*8 +: 16];
    d.conv_h = raw[26*8 +: 16];      d.conv_w = raw[28*8 +: 16];
    d.kh = raw[30*8 +: 8];           d.kw = raw[31*8 +: 8];            d.stride_h = raw[32*8 +: 8];
    d.stride_w = raw[33*8 +: 8];     d.dil_h = raw[34*8 +: 8];         d.dil_w = raw[35*8 +: 8];
    d.pad_t = raw[36*8 +: 8];        d.pad_l = raw[37*8 +: 8];         d.pad_b = raw[38*8 +: 8];
    d.pad_r = raw[39*8 +: 8];        d.pool_kh = raw[40*8 +: 8];       d.pool_kw = raw[41*8 +: 8];
    d.pool_sh = raw[42*8 +: 8];      d.pool_sw = raw[43*8 +: 8];       d.pool_pad_t = raw[44*8 +: 8];
    d.pool_pad_l = raw[45*8 +: 8];   d.pool_pad_b = raw[46*8 +: 8];    d.pool_pad_r = raw[47*8 +: 8];
    d.act_lo = raw[48*8 +: 8];       d.act_hi = raw[49*8 +: 8];        d.res_shift = raw[50*8 +: 8];
    d.in_zero = raw[51*8 +: 8];
    d.in2_c_stride = raw[52*8 +: 16]; d.in2_c_offset = raw[54*8 +: 16];
    d.in_addr = raw[56*8 +: 32];     d.in2_addr = raw[60*8 +: 32];     d.weight_addr = raw[64*8 +: 32];
    d.bias_addr = raw[68*8 +: 32];   d.requant_addr = raw[72*8 +: 32]; d.lut1_addr = raw[76*8 +: 32];
    d.lut2_addr = raw[80*8 +: 32];   d.out_addr = raw[84*8 +: 32];     d.res_mult_a = raw[88*8 +: 32];
    d.res_mult_b = raw[92*8 +: 32];  d.layer_id = raw[96*8 +: 32];
    d.out_step = raw[100*8 +: 8];    d.out_phase_y = raw[101*8 +: 8];  d.out_phase_x = raw[102*8 +: 8];
  end

  // a program built for a bigger engine is refused, never run past a buffer: its tests in four registers (what
  // every layer needs, its output's interleave, a conv's and the other ops' geometry), picked by the layer's kind
  logic ok_op_q, ok_range_q, ok_step_q, ok_conv_q, ok_other_q, ok_kernel_q, ok_chan_q, ok_pool_k_q, ok_pool_w_q;
  logic ok_kind_q, ok_pool_s_q, ok_other_c_q;   // parts of ok_op_q, ok_pool_k_q, ok_other_q (first cycle)
  logic [15:0] taps_p;                   // kh x kw
  logic [31:0] tile_rows_p;              // ... times the input's channel beats
  logic ahead_fits_q, least_fits_q;      // the window holds rows to load ahead, the kernel's (sixth cycle)
  logic wino_ok_q;                       // a WINOGRAD layer the Winograd unit takes
  logic win_ok_q, rows_ok_q, group_ok_q; // the window path's conditions apart from its geometry
  logic win_kind_q, win_res_q, win_step_q;
  wire wino_q = d.flags[F_WINOGRAD];
  logic is_l2_q, l2_chan_q, l2_shift_q;  // an L2NORM's, in three parts: its kind, channels and shift (first cycle)
  always_ff @(posedge clk) begin
    // each test a few LUTs deep: its own register, their conjunction a cycle later (the checks wait five)
    ok_kind_q <= d.op >= OP_CONV && d.op <= OP_L2NORM && d.batch != 0;
    is_l2_q <= d.op == OP_L2NORM;
    l2_chan_q <= d.in_c == d.out_c;
    l2_shift_q <= d.res_shift >= 8'd2 && d.res_shift <= 8'd26;
    ok_op_q <= ok_kind_q && (!is_l2_q || (l2_chan_q && l2_shift_q));
    ok_range_q <= d.res_mult_a >= 0 && d.res_mult_a < 32'sd131072 && d.res_mult_b >= 0 && d.res_mult_b < 32'sd131072
                  && (d.in_c[VSH-1:0] == 0 || VSH == 0) && d.in_c != 0;
    // interleaved output: a transposed conv's phase, nothing fused after the act
    ok_step_q <= d.out_step == 8'd2 ? d.op == OP_CONV && !d.flags[F_POOL] && !d.flags[F_RESIDUAL]
                                      && d.out_phase_y <= 8'd1 && d.out_phase_x <= 8'd1
                                    : d.out_step <= 8'd1;
    // a conv's, over two stages (its kernel and steps; its channels and fused pool)
    ok_kernel_q <= d.kh != 0 && d.kw != 0 && 32'(d.kh) <= MAXK && 32'(d.kw) <= MAXK && d.stride_h != 0
                   && d.stride_w != 0 && d.dil_h != 0 && d.dil_w != 0;
    ok_chan_q <= d.flags[F_DEPTHWISE] ? d.out_c == d.in_c : (d.out_c & 16'(R - 1)) == 0;
    // (a fused pool of one tap is refused: the pool's pixel loop takes a step a cycle old, pool_unit.sv)
    ok_pool_k_q <= d.pool_kh != 0 && d.pool_kw != 0 && 32'(d.pool_kh) <= MAXK && (d.pool_kh > 8'd1 || d.pool_kw > 8'd1);
    ok_pool_s_q <= d.pool_sh != 0 && d.pool_sw != 0 && 32'(d.pool_sh) <= RINGK;
    ok_pool_w_q <= 32'(d.conv_w) <= MAX_W;
    ok_conv_q <= ok_kernel_q && ok_chan_q && (!d.flags[F_POOL] || (ok_pool_k_q && ok_pool_s_q && ok_pool_w_q));
    ok_other_c_q <= (d.out_c & 16'(V - 1)) == 0;
    ok_other_q <= ok_other_c_q
                  && (d.op != OP_MAXPOOL || (d.pool_kh != 0 && d.pool_kw != 0 && d.pool_sh != 0 && d.pool_sw != 0));
  end
  wire fits_parts = ok_op_q && ok_range_q && ok_step_q && (is_conv ? ok_conv_q : ok_other_q);
  // the weight rows it needs, from the products, in a register the seventh cycle
  always_ff @(posedge clk)
    fits <= fits_parts && (!is_conv || (dw ? 32'(taps_p) <= WROWS : 32'(tile_rows_p) <= 32'(WROWS)))
            && (!wino_q || (wino_ok_q && win_ok_q && (ahead_fits_q || least_fits_q)));

  // first cycle: a tile's weight rows, the window row's columns and channel beats, the window's row counts
  // to try, and the window path's conditions that do not depend on its geometry
  assign tile_rows = tile_rows_p;
  logic [15:0] cols_q;                  // at most in_w, so below 2^16: a 16-bit operand for each product
  logic [15:0] cbs_q, cin_beats_q;
  logic s2_q;
  logic [4:0] ahead_q, least_q;
  logic [7:0] ahead_rows_q;             // kh + stride + 1 (7 for a Winograd layer), what ahead_q rounds a cycle later
  always_ff @(posedge clk) begin
    logic s2;
    s2 = d.stride_w == 8'd2;
    s2_q <= s2;
    cols_q <= 16'((((32'(d.in_w) + 32'(s2)) >> s2) + 32'(P - 1)) >> LP);
    // a depthwise layer's window holds the tile's VEC channels of each pixel only
    cbs_q <= d.flags[F_DEPTHWISE] ? 16'd1 : d.in_c >> VSH;
    cin_beats_q <= d.in_c >> VSH;
    // a Winograd layer reads four rows per two output rows: a kernel of 4, stride 2, for the window
    ahead_rows_q <= wino_q ? 8'd7 : d.kh + d.stride_h + 8'd1;
    ahead_q <= pow2_at_least(ahead_rows_q);
    least_q <= pow2_at_least(wino_q ? 8'd4 : d.kh);
    // in three parts, combined a cycle later (the sixth cycle reads it)
    win_kind_q <= P > 1 && d.op == OP_CONV && !d.flags[F_UPSAMPLE2]
                  && (!d.flags[F_DEPTHWISE] || (R >= V && !d.flags[F_RESIDUAL] && !d.flags[F_POOL]));
    win_res_q <= !d.flags[F_RESIDUAL] || 32'(d.conv_w) * 32'(R > V ? R / V : 1) <= 32'(RESQ);
    win_step_q <= d.dil_h == 8'd1 && d.dil_w == 8'd1 && d.stride_h == d.stride_w && (d.stride_w == 8'd1 || s2);
    win_ok_q <= win_kind_q && win_res_q && win_step_q;
    rows_ok_q <= DWW && d.flags[F_DEPTHWISE] && 32'(d.kw) <= 32'(R) && (32'(d.kw) - 32'd1) >> s2 <= 32'(P);
    group_ok_q <= R >= V && !d.flags[F_DEPTHWISE] && !d.flags[F_RESIDUAL] && !d.flags[F_POOL];
    // the unit's layers: a 3x3 stride-1 conv written directly; its residual read in the order the tiles leave
    // (address_generator.sv), its fused pool's ring filled so (pool_unit.sv)
    wino_ok_q <= WINO && P > 1 && d.op == OP_CONV && d.kh == 8'd3 && d.kw == 8'd3 && d.stride_h == 8'd1
                 && d.stride_w == 8'd1 && d.dil_h == 8'd1 && d.dil_w == 8'd1
                 && (d.flags & 8'(1 << F_DEPTHWISE | 1 << F_UPSAMPLE2)) == 8'd0
                 && d.out_step <= 8'd1;
  end
  lut_mult #(.AW(8), .BW(8), .PW(16)) taps_product (
    .clk_i(clk), .en_i(1'b1), .a_i(d.flags[F_WINOGRAD] ? 8'd4 : d.kh), .b_i(d.flags[F_WINOGRAD] ? 8'd4 : d.kw),
    .p_o(taps_p));
  assign taps = taps_p;
  lut_mult #(.AW(16), .BW(16), .PW(32)) tile_rows_product (
    .clk_i(clk), .en_i(1'b1), .a_i(cin_beats_q), .b_i(taps_p), .p_o(tile_rows_p));
  logic [31:0] row_words_p;              // a window row's words per bank and stride phase: columns x channel beats
  lut_mult #(.AW(16), .BW(16), .PW(32)) row_words_product (
    .clk_i(clk), .en_i(1'b1), .a_i(cols_q), .b_i(cbs_q), .p_o(row_words_p));

  always_ff @(posedge clk) begin
    is_conv <= d.op == OP_CONV;
    dw <= d.op == OP_CONV && d.flags[F_DEPTHWISE];
    has_pool <= d.op == OP_CONV && d.flags[F_POOL];
    is_gap <= d.op == OP_GAP;
    need_lut1 <= d.act1 == ACT_LUT && (d.op == OP_CONV || d.op == OP_ADD);
    need_lut2 <= d.act2 == ACT_LUT && ((d.op == OP_CONV && d.flags[F_RESIDUAL]) || d.op == OP_ADD);
  end

  // a row's words per bank and stride phase (the fifth cycle), and whether 1, 2, 4, 8 or 16 rows of them fit the
  // window (fit_q[k]: 2^k rows), each a compare of the product with a constant (x2 at stride 2: half the constant)
  logic [4:0] fit_q;
  always_ff @(posedge clk) begin
    win_phase_words <= row_words_p;
    win_row_words <= row_words_p << s2_q;
    for (int k = 0; k < 5; k++)
      fit_q[k] <= 36'(row_words_p) <= (s2_q ? 36'(WDEPTH) >> (k + 1) : 36'(WDEPTH) >> k);
  end

  // sixth cycle: whether the window holds kh + stride + 1 rows (`ahead`, rounded up to a power of two, at most 8),
  // so the next rows load, latency hidden, while the array reads these; else whether it holds kh rows (`least`,
  // rounded up); and the most output-channel tiles the weight RAM holds at once (the seventh). Seventh: the window path's choice
  // (neither fits: the layer takes the per-tap path)
  logic [7:0] group_fit_q;
  always_ff @(posedge clk) begin
    ahead_fits_q <= ahead_q <= 5'd8 && fit_q[pow2_log(ahead_q)];
    least_fits_q <= least_q <= 5'd8 && fit_q[pow2_log(least_q)];
    // (m tiles fit where tile_rows <= WROWS / m: compares with constants side by side, no product before them)
    group_fit_q <= 8'd1;
    for (int m = 2; m <= P; m *= 2)
      if (tile_rows <= 32'(WROWS / m)) group_fit_q <= 8'(m);
  end
  logic win_d;
  logic [4:0] win_slots_d;
  always_comb begin
    win_slots_d = ahead_fits_q ? ahead_q : least_fits_q ? least_q : 5'd0;
    win_d = win_ok_q && (ahead_fits_q || least_fits_q);
  end
  always_ff @(posedge clk) begin
    win <= win_d;
    win_rows <= win_d && rows_ok_q;
    win_slots <= win_slots_d;
    group_max <= win_d && group_ok_q ? group_fit_q : 8'd1;
  end
  // the copies' resets (0 and 1), which `win` has not, keep synthesis from merging the three
  always_ff @(posedge clk)
    if (!rst_n) win_items <= 1'b0;
    else win_items <= win_d;
  always_ff @(posedge clk)
    if (!rst_n) win_operands <= 1'b1;
    else win_operands <= win_d;
endmodule
