// The engine: runs a program of ABI v1 layer descriptors (docs/kernel-abi.md) over the activation port
// (reads and writes) and the constant port (program, weights, biases, requantisation tables, LUTs).
//
// Decoupled access and execute: the controller walks layers and output-channel tiles and fills the weight
// RAM; the address generator walks a layer's loop nest and emits read runs (a pixel's input channels at a
// kernel tap, a residual operand, ...) tagged with what they are for; the reader turns runs into AXI bursts
// and returns tagged beats in order; the MAC stage consumes one beat per cycle (R x V products for a
// standard conv); the epilogue requantises, applies activations and residuals; results go to the writer or,
// with a fused max pool, to a ring of conv rows that the pool emitter reduces.
module engine_core
  import engine_pkg::*;
#(
  parameter int V = 16,            // input-channel lanes; the activation port is 8*V bits
  parameter int R = 16,            // output channels in parallel
  parameter int MAXK = 7,          // largest kernel (conv and fused pool)
  parameter int MAX_W = 64,        // widest conv output row with a fused pool
  parameter int WROWS = 1024,      // weight RAM rows (R x V bytes each)
  parameter bit PACK = 1           // two int8 products per multiplier (DSP48E2)
) (
  input  logic clk,
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
  localparam int RINGK = MAXK + 1;             // conv rows kept for the fused pool
  localparam int CB = (8 * G > 256 ? 8 * G : 256) + B;    // bytes collected from the constant port
  localparam int VSH = $clog2(V);
  localparam int RSH = $clog2(R);

  desc_t d;
  wire is_conv = d.op == OP_CONV;
  wire dw = is_conv && d.flags[F_DEPTHWISE];
  wire has_res = is_conv && d.flags[F_RESIDUAL];
  wire has_pool = is_conv && d.flags[F_POOL];
  wire up = d.flags[F_UPSAMPLE2];

  // =====================================================================================================
  // controller
  // =====================================================================================================
  typedef enum logic [3:0] {S_IDLE, S_DESC, S_TAKE, S_CHECK, S_LUT1, S_LUT2, S_TILE, S_BIAS, S_RQ, S_WEIGHTS,
                            S_RUN, S_DRAIN, S_NEXT, S_FINISH} state_t;
  state_t st;
  logic [31:0] layer, layers;
  logic [15:0] tile, tiles;
  logic [15:0] c0;                             // first output channel of the tile
  logic [7:0]  nl;                             // channels a pixel result holds: R (standard conv) or V
  logic        run_error;
  logic [63:0] cycle_count;
  logic signed [31:0] bias[G], mult[G];
  logic [7:0] shift[G];
  logic [7:0] lut1[256], lut2[256];

  // ---- constant-port reads: one run at a time, collected into cbuf or written to the weight RAM -------
  logic        c_run_valid, c_run_ready, c_issued;
  logic [63:0] c_run_addr;
  logic [23:0] c_run_beats;
  logic        cb_valid, cb_last;
  logic [DW-1:0] cb_data;
  logic [23:0] cb_idx;
  logic        c_idle;
  logic [63:0] const_bytes;
  logic [8*CB-1:0] cbuf;
  logic [7:0]  c_off;                          // byte offset of the wanted data in cbuf

  axi_run_reader #(.DW(DW), .TAGW(1), .QDEPTH(4), .MAX_OUT(4)) creader (
    .clk, .rst_n, .run_valid(c_run_valid), .run_ready(c_run_ready), .run_addr(c_run_addr),
    .run_beats(c_run_beats), .run_pad(1'b0), .run_fill(8'd0), .run_tag(1'b0),
    .beat_valid(cb_valid), .beat_ready(1'b1), .beat_data(cb_data), .beat_tag(), .beat_idx(cb_idx),
    .beat_last(cb_last), .idle(c_idle), .bytes_read(const_bytes),
    .m_arvalid(m_const_arvalid), .m_arready(m_const_arready), .m_araddr(m_const_araddr),
    .m_arlen(m_const_arlen), .m_arsize(m_const_arsize), .m_arburst(m_const_arburst),
    .m_rvalid(m_const_rvalid), .m_rready(m_const_rready), .m_rdata(m_const_rdata), .m_rlast(m_const_rlast));

  // byte range [addr, addr + len) of the constant region as whole beats
  function automatic logic [63:0] beat_floor(input logic [63:0] a);
    return a & ~64'(B - 1);
  endfunction
  function automatic logic [23:0] beats_for(input logic [63:0] a, input logic [31:0] len);
    return 24'((64'(a[VSH-1:0]) + 64'(len) + 64'(B - 1)) >> VSH);
  endfunction

  logic [63:0] c_want_addr;
  logic [31:0] c_want_len;
  always_comb begin
    c_want_addr = '0;
    c_want_len = 32'd0;
    case (st)
      S_DESC: begin c_want_addr = program_addr + 64'd16 + 64'(layer) * 64'd128; c_want_len = 32'd128; end
      S_LUT1: begin c_want_addr = const_base + 64'(d.lut1_addr); c_want_len = 32'd256; end
      S_LUT2: begin c_want_addr = const_base + 64'(d.lut2_addr); c_want_len = 32'd256; end
      S_BIAS: begin c_want_addr = const_base + 64'(d.bias_addr) + 64'(c0) * 64'd4; c_want_len = 32'(nl) * 32'd4; end
      S_RQ:   begin c_want_addr = const_base + 64'(d.requant_addr) + 64'(c0) * 64'd8; c_want_len = 32'(nl) * 32'd8; end
      S_WEIGHTS: begin
        if (dw) begin
          c_want_addr = const_base + 64'(d.weight_addr) + 64'(tile) * 64'(d.kh) * 64'(d.kw) * 64'(V);
          c_want_len = 32'(d.kh) * 32'(d.kw) * 32'(V);
        end else begin
          c_want_addr = const_base + 64'(d.weight_addr) + 64'(tile) * 64'(d.kh) * 64'(d.kw) * 64'(d.in_c) * 64'(R);
          c_want_len = 32'(d.kh) * 32'(d.kw) * 32'(d.in_c) * 32'(R);
        end
      end
      default: ;
    endcase
  end
  wire need_lut1 = d.act1 == ACT_LUT && (d.op == OP_CONV || d.op == OP_ADD);
  wire need_lut2 = d.act2 == ACT_LUT && (has_res || d.op == OP_ADD);
  wire collecting = st == S_DESC || (st == S_LUT1 && need_lut1) || (st == S_LUT2 && need_lut2) || st == S_BIAS
                    || st == S_RQ || (st == S_WEIGHTS && d.op != OP_GAP);
  assign c_run_valid = collecting && !c_issued;
  assign c_run_addr = beat_floor(c_want_addr);
  assign c_run_beats = beats_for(c_want_addr, c_want_len);
  wire c_done = cb_valid && cb_last;          // the last beat of the current collection arrives

  // ---- weight RAM: R banks of V bytes, one row per (tap, input-channel tile) ---------------------------
  localparam int WAW = $clog2(WROWS);
  logic          w_we;
  logic [WAW-1:0] w_wrow, w_raddr;
  logic [RSH > 0 ? RSH-1 : 0:0] w_wbank;
  logic [DW-1:0] w_rdata[R];
  assign w_we = st == S_WEIGHTS && cb_valid;
  assign w_wrow = dw ? WAW'(cb_idx) : WAW'(cb_idx >> RSH);
  assign w_wbank = dw ? '0 : cb_idx[RSH > 0 ? RSH-1 : 0:0];
  for (genvar r = 0; r < R; r++) begin : g_wbank
    logic [DW-1:0] bank[WROWS];
    always_ff @(posedge clk) begin
      if (w_we && (R == 1 || w_wbank == r)) bank[w_wrow] <= cb_data;
      w_rdata[r] <= bank[w_raddr];
    end
  end

  // ---- layer checks: a program built for a bigger engine is refused, never run past a buffer ----------
  function automatic logic fits(input desc_t x);
    logic ok;
    ok = x.op >= OP_CONV && x.op <= OP_SCALE && x.batch != 0;
    ok = ok && (x.in_c[VSH-1:0] == 0 || VSH == 0) && x.in_c != 0;
    if (x.op == OP_CONV) begin
      ok = ok && x.kh != 0 && x.kw != 0 && x.kh <= MAXK && x.kw <= MAXK && x.stride_h != 0 && x.stride_w != 0
              && x.dil_h != 0 && x.dil_w != 0;
      if (x.flags[F_DEPTHWISE])
        ok = ok && x.out_c == x.in_c && 32'(x.kh) * 32'(x.kw) <= WROWS;
      else
        ok = ok && (x.out_c & 16'(R - 1)) == 0 && 32'(x.kh) * 32'(x.kw) * 32'(x.in_c >> VSH) <= WROWS;
      if (x.flags[F_POOL])
        ok = ok && x.pool_kh != 0 && x.pool_kw != 0 && x.pool_kh <= MAXK && x.pool_sh != 0 && x.pool_sw != 0
                && x.conv_w <= MAX_W && x.pool_sh <= RINGK;
    end else begin
      ok = ok && (x.out_c & 16'(V - 1)) == 0;
      if (x.op == OP_MAXPOOL) ok = ok && x.pool_kh != 0 && x.pool_kw != 0 && x.pool_sh != 0 && x.pool_sw != 0;
    end
    return ok;
  endfunction

  // =====================================================================================================
  // address generator: a layer's (tile's) loop nest as tagged read runs
  // =====================================================================================================
  typedef struct packed {
    kind_t       kind;
    logic        first, last;
    logic [15:0] waddr;
    logic [31:0] oaddr;
    logic [15:0] n, y, x;
  } tag_t;
  localparam int TAGW = $bits(tag_t);

  logic ag_active, ag_start;
  logic [15:0] ag_n, ag_y, ag_x, ag_c;
  logic [7:0]  ag_ky, ag_kx;
  logic        ag_ph;
  logic [15:0] lim_y, lim_x, lim_c;
  logic [7:0]  lim_ky, lim_kx;
  logic        has_ph1;
  always_comb begin
    lim_c = 16'd1; lim_ky = 8'd1; lim_kx = 8'd1;
    has_ph1 = has_res || d.op == OP_ADD || d.op == OP_SCALE;
    case (d.op)
      OP_CONV: begin lim_y = d.conv_h; lim_x = d.conv_w; lim_ky = d.kh; lim_kx = d.kw; end
      OP_GAP:  begin lim_y = d.in_h; lim_x = d.in_w; end
      OP_MAXPOOL: begin lim_y = d.out_h; lim_x = d.out_w; lim_c = d.out_c >> VSH; lim_ky = d.pool_kh;
                        lim_kx = d.pool_kw; end
      OP_COPY: begin lim_y = d.out_h; lim_x = d.out_w; end
      default: begin lim_y = d.out_h; lim_x = d.out_w; lim_c = d.out_c >> VSH; end
    endcase
  end

  logic signed [31:0] iy, ix;
  logic inb;
  logic [63:0] a_run_addr;
  logic [23:0] a_run_beats;
  logic a_run_pad;
  logic [7:0] a_run_fill;
  tag_t a_tag;
  function automatic logic [31:0] pixel(input logic [31:0] base, input logic [15:0] n, input logic [31:0] y,
                                        input logic [31:0] x, input logic [15:0] h, input logic [15:0] w,
                                        input logic [15:0] stride);
    return base + ((32'(n) * 32'(h) + y) * 32'(w) + x) * 32'(stride);
  endfunction
  always_comb begin
    logic last_tap;
    logic [31:0] cv, in_pix, out_pix;
    last_tap = ag_ky == lim_ky - 8'd1 && ag_kx == lim_kx - 8'd1;
    cv = 32'(ag_c) << VSH;
    if (is_conv) begin
      iy = 32'(ag_y) * 32'(d.stride_h) - 32'(d.pad_t) + 32'(ag_ky) * 32'(d.dil_h);
      ix = 32'(ag_x) * 32'(d.stride_w) - 32'(d.pad_l) + 32'(ag_kx) * 32'(d.dil_w);
    end else if (d.op == OP_MAXPOOL) begin
      iy = 32'(ag_y) * 32'(d.pool_sh) - 32'(d.pool_pad_t) + 32'(ag_ky);
      ix = 32'(ag_x) * 32'(d.pool_sw) - 32'(d.pool_pad_l) + 32'(ag_kx);
    end else begin
      iy = 32'(ag_y);
      ix = 32'(ag_x);
    end
    inb = iy >= 0 && ix >= 0 && iy < (32'(d.in_h) << up) && ix < (32'(d.in_w) << up);
    in_pix = pixel(d.in_addr, ag_n, 32'(iy) >> up, 32'(ix) >> up, d.in_h, d.in_w, d.in_c_stride) + 32'(d.in_c_offset);
    out_pix = pixel(d.out_addr, ag_n, 32'(ag_y), 32'(ag_x), d.out_h, d.out_w, d.out_c_stride) + 32'(d.out_c_offset);
    a_tag = '0;
    a_tag.n = ag_n; a_tag.y = ag_y; a_tag.x = ag_x;
    a_run_pad = 1'b0;
    a_run_fill = 8'd0;
    a_run_beats = 24'd1;
    a_run_addr = '0;
    if (!ag_ph) begin
      a_run_pad = !inb;
      case (d.op)
        OP_CONV: begin
          a_tag.first = ag_ky == 0 && ag_kx == 0;
          a_tag.last = last_tap && !has_res;
          a_tag.oaddr = out_pix + 32'(c0);
          if (dw) begin
            a_tag.kind = K_DW;
            a_run_addr = 64'(in_pix + 32'(c0));
            a_tag.waddr = 16'(ag_ky) * 16'(d.kw) + 16'(ag_kx);
          end else begin
            a_tag.kind = K_MAC;
            a_run_addr = 64'(in_pix);
            a_run_beats = 24'(d.in_c >> VSH);
            a_tag.waddr = (16'(ag_ky) * 16'(d.kw) + 16'(ag_kx)) * (d.in_c >> VSH);
          end
        end
        OP_MAXPOOL: begin
          a_tag.kind = K_POOL;
          a_tag.first = ag_ky == 0 && ag_kx == 0;
          a_tag.last = last_tap;
          a_run_fill = 8'h80;
          a_run_addr = 64'(in_pix + cv);
          a_tag.oaddr = out_pix + cv;
        end
        OP_COPY: begin
          a_tag.kind = K_COPY;
          a_tag.last = 1'b1;
          a_run_addr = 64'(in_pix);
          a_run_beats = 24'(d.in_c >> VSH);
          a_tag.oaddr = out_pix;
        end
        OP_GAP: begin
          a_tag.kind = K_GAP;
          a_tag.first = ag_y == 0 && ag_x == 0;
          a_tag.last = ag_y == d.in_h - 16'd1 && ag_x == d.in_w - 16'd1;
          a_run_pad = 1'b0;
          a_run_addr = 64'(pixel(d.in_addr, ag_n, 32'(ag_y), 32'(ag_x), d.in_h, d.in_w, d.in_c_stride)
                            + 32'(d.in_c_offset) + 32'(c0));
          a_tag.oaddr = d.out_addr + 32'(ag_n) * 32'(d.out_c_stride) + 32'(d.out_c_offset) + 32'(c0);
        end
        default: begin        // ADD, SCALE: the first operand
          a_tag.kind = K_A;
          a_run_addr = 64'(in_pix + cv);
          a_tag.oaddr = out_pix + cv;
        end
      endcase
    end else begin
      a_tag.last = 1'b1;
      a_tag.oaddr = out_pix + (is_conv ? 32'(c0) : cv);
      if (is_conv) begin
        a_tag.kind = K_RES;
        a_run_addr = 64'(pixel(d.in2_addr, ag_n, 32'(ag_y), 32'(ag_x), d.conv_h, d.conv_w, d.in2_c_stride)
                          + 32'(d.in2_c_offset) + 32'(c0)) & ~64'(B - 1);
        a_run_beats = nl > 8'(V) ? 24'(nl >> VSH) : 24'd1;
      end else if (d.op == OP_ADD) begin
        a_tag.kind = K_B;
        a_run_addr = 64'(pixel(d.in2_addr, ag_n, 32'(ag_y), 32'(ag_x), d.out_h, d.out_w, d.in2_c_stride)
                          + 32'(d.in2_c_offset) + cv);
      end else begin
        a_tag.kind = K_B;
        a_run_addr = 64'(pixel(d.in2_addr, ag_n, 32'd0, 32'd0, 16'd1, 16'd1, d.in2_c_stride)
                          + 32'(d.in2_c_offset) + cv);
      end
    end
  end

  logic a_run_ready;
  wire a_run_valid = ag_active;
  always_ff @(posedge clk) begin
    if (!rst_n) begin
      ag_active <= 1'b0;
    end else if (ag_start) begin
      ag_active <= 1'b1;
      ag_n <= '0; ag_y <= '0; ag_x <= '0; ag_c <= '0; ag_ky <= '0; ag_kx <= '0; ag_ph <= 1'b0;
    end else if (a_run_valid && a_run_ready) begin
      if (!ag_ph && !(ag_ky == lim_ky - 8'd1 && ag_kx == lim_kx - 8'd1)) begin
        if (ag_kx == lim_kx - 8'd1) begin ag_kx <= '0; ag_ky <= ag_ky + 8'd1; end
        else ag_kx <= ag_kx + 8'd1;
      end else if (!ag_ph && has_ph1) begin
        ag_ph <= 1'b1;
      end else begin
        ag_ph <= 1'b0; ag_ky <= '0; ag_kx <= '0;
        if (ag_c != lim_c - 16'd1) ag_c <= ag_c + 16'd1;
        else begin
          ag_c <= '0;
          if (ag_x != lim_x - 16'd1) ag_x <= ag_x + 16'd1;
          else begin
            ag_x <= '0;
            if (ag_y != lim_y - 16'd1) ag_y <= ag_y + 16'd1;
            else begin
              ag_y <= '0;
              if (ag_n != d.batch - 16'd1) ag_n <= ag_n + 16'd1;
              else ag_active <= 1'b0;
            end
          end
        end
      end
    end
  end

  // ---- activation reads ----------------------------------------------------------------------------
  logic          ab_valid, ab_ready, ab_last;
  logic [DW-1:0] ab_data;
  logic [TAGW-1:0] ab_tag_bits;
  logic [23:0]   ab_idx;
  logic          a_idle;
  logic [63:0]   act_bytes_read;
  axi_run_reader #(.DW(DW), .TAGW(TAGW), .QDEPTH(128), .MAX_OUT(64)) areader (
    .clk, .rst_n, .run_valid(a_run_valid), .run_ready(a_run_ready), .run_addr(act_base + a_run_addr),
    .run_beats(a_run_beats), .run_pad(a_run_pad), .run_fill(a_run_fill), .run_tag(a_tag),
    .beat_valid(ab_valid), .beat_ready(ab_ready), .beat_data(ab_data), .beat_tag(ab_tag_bits),
    .beat_idx(ab_idx), .beat_last(ab_last), .idle(a_idle), .bytes_read(act_bytes_read),
    .m_arvalid(m_act_arvalid), .m_arready(m_act_arready), .m_araddr(m_act_araddr), .m_arlen(m_act_arlen),
    .m_arsize(m_act_arsize), .m_arburst(m_act_arburst), .m_rvalid(m_act_rvalid), .m_rready(m_act_rready),
    .m_rdata(m_act_rdata), .m_rlast(m_act_rlast));
  tag_t ab_tag;
  assign ab_tag = tag_t'(ab_tag_bits);

  // =====================================================================================================
  // MAC stage: C1 (weight row read, products summed per output channel), C2 (accumulate, hand over)
  // =====================================================================================================
  typedef struct packed {
    logic [G*32-1:0] acc;       // accumulators (conv, global average pool)
    logic [G*8-1:0]  b;         // residual operand, or the second operand of ADD / SCALE
    logic [DW-1:0]   a;         // first operand, copied beat or max-pool result
    logic [31:0]     oaddr;
    logic [15:0]     n, y, x;
  } item_t;
  localparam int ITEMW = $bits(item_t);

  logic epi_push;
  item_t epi_din;
  logic epi_pop, epi_empty;
  logic [ITEMW-1:0] epi_dout_bits;
  logic [4:0] epi_count;
  sync_fifo #(.W(ITEMW), .DEPTH(16)) epi_fifo (
    .clk, .rst_n, .push(epi_push), .din(epi_din), .pop(epi_pop), .dout(epi_dout_bits), .empty(epi_empty),
    .count(epi_count));

  assign ab_ready = epi_count <= 5'd12;          // room for everything in C1 and C2
  wire ab_fire = ab_valid && ab_ready;
  assign w_raddr = WAW'(ab_tag.waddr) + WAW'(ab_idx);

  logic c1_valid, c1_last;
  logic [DW-1:0] c1_data;
  tag_t c1_tag;
  logic [23:0] c1_idx;
  logic c2_valid, c2_last;
  tag_t c2_tag;
  logic [23:0] c2_idx;
  logic [DW-1:0] c2_data;
  logic signed [31:0] c2_sum[G];
  logic signed [31:0] acc[G];
  logic [G*8-1:0] res;
  logic [DW-1:0] abuf;

  // products of one beat: standard conv sums V products per output channel; depthwise one per lane
  logic signed [15:0] prod[R][V];
  for (genvar r = 0; r < R; r += 2) begin : g_rows
    for (genvar v = 0; v < V; v++) begin : g_lanes
      if (r + 1 < R) begin : g_pair
        mac_pair #(.PACK(PACK)) mp (.x(c1_data[8*v +: 8]), .w_hi(w_rdata[r + 1][8*v +: 8]),
                                    .w_lo(w_rdata[r][8*v +: 8]), .p_hi(prod[r + 1][v]), .p_lo(prod[r][v]));
      end else begin : g_single
        assign prod[r][v] = $signed(c1_data[8*v +: 8]) * $signed(w_rdata[r][8*v +: 8]);
      end
    end
  end

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      c1_valid <= 1'b0; c2_valid <= 1'b0;
    end else begin
      c1_valid <= ab_fire;
      c1_data <= ab_data; c1_tag <= ab_tag; c1_idx <= ab_idx; c1_last <= ab_last;
      c2_valid <= c1_valid;
      c2_data <= c1_data; c2_tag <= c1_tag; c2_idx <= c1_idx; c2_last <= c1_last;
      for (int i = 0; i < G; i++) begin
        logic signed [31:0] s;
        s = '0;
        if (c1_tag.kind == K_MAC) begin
          if (i < R) for (int v = 0; v < V; v++) s = s + 32'(prod[i][v]);
        end else if (c1_tag.kind == K_DW) begin
          if (i < V) s = 32'($signed(c1_data[8*i +: 8])) * 32'($signed(w_rdata[0][8*i +: 8]));
        end else if (i < V) begin
          s = 32'($signed(c1_data[8*i +: 8]));
        end
        c2_sum[i] <= s;
      end
    end
  end

  // C2: accumulate and hand the finished pixel to the epilogue
  logic signed [31:0] acc_next[G];
  logic [G*8-1:0] res_next;
  logic [DW-1:0] abuf_next;
  always_comb begin
    logic start;
    start = c2_tag.first && c2_idx == 0;
    res_next = res;
    abuf_next = abuf;
    for (int i = 0; i < G; i++) begin
      acc_next[i] = acc[i];
      case (c2_tag.kind)
        K_MAC, K_DW: acc_next[i] = (start ? bias[i] : acc[i]) + c2_sum[i];
        K_GAP:       acc_next[i] = (start ? 32'sd0 : acc[i]) + c2_sum[i];
        default: ;
      endcase
    end
    case (c2_tag.kind)
      K_POOL: for (int v = 0; v < V; v++)
                abuf_next[8*v +: 8] = (start || $signed(c2_data[8*v +: 8]) > $signed(abuf[8*v +: 8]))
                                      ? c2_data[8*v +: 8] : abuf[8*v +: 8];
      K_A, K_COPY: abuf_next = c2_data;
      K_RES: begin
        if (nl >= 8'(V)) res_next[c2_idx[7:0] * DW +: DW] = c2_data;
        else res_next[DW-1:0] = c2_data >> (8 * (c0 & 16'(V - 1)));
      end
      K_B: res_next[DW-1:0] = c2_data;
      default: ;
    endcase
  end
  always_ff @(posedge clk) begin
    if (c2_valid) begin
      for (int i = 0; i < G; i++) acc[i] <= acc_next[i];
      res <= res_next;
      abuf <= abuf_next;
    end
  end
  always_comb begin
    epi_push = c2_valid && (c2_tag.kind == K_COPY || (c2_tag.last && c2_last));
    for (int i = 0; i < G; i++) epi_din.acc[32*i +: 32] = acc_next[i];
    epi_din.b = res_next;
    epi_din.a = abuf_next;
    epi_din.oaddr = c2_tag.kind == K_COPY ? c2_tag.oaddr + 32'(c2_idx) * 32'(V) : c2_tag.oaddr;
    epi_din.n = c2_tag.n;
    epi_din.y = c2_tag.y;
    epi_din.x = c2_tag.x;
  end

  // =====================================================================================================
  // epilogue: E1 requantise / rescale / act1, E2 residual and act2
  // =====================================================================================================
  typedef struct packed {
    logic [G*8-1:0] q;
    logic [31:0]    oaddr;
    logic [15:0]    n, y, x;
  } out_t;
  localparam int OUTW = $bits(out_t);

  function automatic logic signed [7:0] activate(input logic [7:0] kind, input logic signed [7:0] q,
                                                 input logic [7:0] table_[256]);
    if (kind == ACT_CLAMP) return clamp8(q, d.act_lo, d.act_hi);
    if (kind == ACT_LUT) return table_[lut_index(q)];
    return q;
  endfunction

  item_t e_in;
  assign e_in = item_t'(epi_dout_bits);
  logic e1_valid, e2_valid;
  logic [G*8-1:0] e1_q, e1_b;
  item_t e1_item;
  out_t e2_out;
  logic dest_room;
  assign epi_pop = !epi_empty && dest_room;

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      e1_valid <= 1'b0; e2_valid <= 1'b0;
    end else begin
      e1_valid <= epi_pop;
      e1_item <= e_in;
      for (int i = 0; i < G; i++) begin
        logic signed [7:0] q, a8, b8;
        a8 = i < V ? e_in.a[8*i +: 8] : 8'sd0;
        b8 = e_in.b[8*i +: 8];
        case (d.op)
          OP_CONV: q = activate(d.act1, requantize(e_in.acc[32*i +: 32], mult[i], shift[i]), lut1);
          OP_GAP: q = requantize(e_in.acc[32*i +: 32], mult[i], shift[i]);
          OP_ADD: q = activate(d.act1, rescale2(a8, b8, d.res_mult_a, d.res_mult_b, d.res_shift), lut1);
          OP_SCALE: q = gate(a8, b8, d.res_mult_a, d.res_shift);
          default: q = a8;
        endcase
        e1_q[8*i +: 8] <= q;
      end
      e2_valid <= e1_valid;
      e2_out.oaddr <= e1_item.oaddr;
      e2_out.n <= e1_item.n; e2_out.y <= e1_item.y; e2_out.x <= e1_item.x;
      for (int i = 0; i < G; i++) begin
        logic signed [7:0] q;
        q = e1_q[8*i +: 8];
        if (has_res) q = activate(d.act2, rescale2(q, e1_item.b[8*i +: 8], d.res_mult_a, d.res_mult_b,
                                                   d.res_shift), lut2);
        else if (d.op == OP_ADD) q = activate(d.act2, q, lut2);
        e2_out.q[8*i +: 8] <= q;
      end
    end
  end

  // =====================================================================================================
  // results: to the writer, or (fused pool) into the ring of conv rows
  // =====================================================================================================
  typedef struct packed {
    logic [G*8-1:0] q;
    logic [31:0]    oaddr;
  } witem_t;
  localparam int WITEMW = $bits(witem_t);

  logic wq_push, wq_pop, wq_empty;
  witem_t wq_din, wq_dout;
  logic [WITEMW-1:0] wq_dout_bits;
  logic [4:0] wq_count;
  sync_fifo #(.W(WITEMW), .DEPTH(16)) wq (
    .clk, .rst_n, .push(wq_push), .din(wq_din), .pop(wq_pop), .dout(wq_dout_bits), .empty(wq_empty),
    .count(wq_count));
  assign wq_dout = witem_t'(wq_dout_bits);

  logic rq_pop, rq_empty;
  logic [OUTW-1:0] rq_dout_bits;
  logic [4:0] rq_count;
  out_t rq_dout;
  sync_fifo #(.W(OUTW), .DEPTH(16)) rq (
    .clk, .rst_n, .push(e2_valid && has_pool), .din(e2_out), .pop(rq_pop), .dout(rq_dout_bits),
    .empty(rq_empty), .count(rq_count));
  assign rq_dout = out_t'(rq_dout_bits);
  assign dest_room = has_pool ? rq_count <= 5'd12 : wq_count <= 5'd11;

  // pool emitter state
  logic [15:0] em_n, em_py, em_px;
  logic [7:0]  em_ky, em_kx;
  logic [15:0] rows_done;
  logic        em_busy, em_done;
  logic signed [31:0] em_first;                  // first conv row of pooled row em_py
  logic signed [31:0] ring_low;
  assign ring_low = em_first;

  // ring RAM: RINGK rows x MAX_W pixels x G bytes
  localparam int RAW = $clog2(RINGK * MAX_W);
  logic [G*8-1:0] ring[RINGK * MAX_W];
  logic ring_we;
  logic [RAW-1:0] ring_waddr, ring_raddr;
  logic [G*8-1:0] ring_rdata;
  always_ff @(posedge clk) begin
    if (ring_we) ring[ring_waddr] <= rq_dout.q;
    ring_rdata <= ring[ring_raddr];
  end
  wire rq_ok = !rq_empty && rq_dout.n == em_n && $signed({16'd0, rq_dout.y}) < ring_low + RINGK;
  assign rq_pop = rq_ok;
  assign ring_we = rq_ok;
  assign ring_waddr = RAW'((32'(rq_dout.y) % RINGK) * MAX_W + 32'(rq_dout.x));

  // emitter: for each pooled pixel, read its window's taps from the ring (one per cycle), then emit
  logic signed [31:0] er_y, er_x;
  logic er_in;
  logic tap_valid, tap_in, tap_last, tap_first;
  logic [31:0] tap_oaddr;
  logic [G*8-1:0] best;
  wire [31:0] need_rows = (em_first + 32'(d.pool_kh) > 32'(d.conv_h)) ? 32'(d.conv_h) : 32'(em_first + 32'(d.pool_kh));
  wire em_can_row = em_busy || (has_pool && !em_done && 32'(rows_done) >= need_rows);
  wire em_step = has_pool && !em_done && em_can_row && wq_count <= 5'd10;
  always_comb begin
    er_y = em_first + 32'(em_ky);
    er_x = 32'(em_px) * 32'(d.pool_sw) - 32'(d.pool_pad_l) + 32'(em_kx);
    er_in = er_y >= 0 && er_x >= 0 && er_y < 32'(d.conv_h) && er_x < 32'(d.conv_w);
    ring_raddr = RAW'((32'(er_y) % RINGK) * MAX_W + 32'(er_x));
  end

  always_ff @(posedge clk) begin
    if (!rst_n || ag_start) begin
      em_n <= '0; em_py <= '0; em_px <= '0; em_ky <= '0; em_kx <= '0; rows_done <= '0; em_busy <= 1'b0;
      em_done <= !has_pool; tap_valid <= 1'b0;
      em_first <= -32'(d.pool_pad_t);
    end else begin
      if (ring_we && rq_dout.x == d.conv_w - 16'd1) rows_done <= rq_dout.y + 16'd1;
      tap_valid <= em_step;
      tap_in <= er_in;
      tap_first <= em_ky == 0 && em_kx == 0;
      tap_last <= em_ky == d.pool_kh - 8'd1 && em_kx == d.pool_kw - 8'd1;
      tap_oaddr <= pixel(d.out_addr, em_n, 32'(em_py), 32'(em_px), d.out_h, d.out_w, d.out_c_stride)
                   + 32'(d.out_c_offset) + 32'(c0);
      if (em_step) begin
        em_busy <= 1'b1;
        if (em_kx != d.pool_kw - 8'd1) em_kx <= em_kx + 8'd1;
        else begin
          em_kx <= '0;
          if (em_ky != d.pool_kh - 8'd1) em_ky <= em_ky + 8'd1;
          else begin
            em_ky <= '0;
            if (em_px != d.out_w - 16'd1) em_px <= em_px + 16'd1;
            else begin
              em_px <= '0;
              em_busy <= 1'b0;
              if (em_py != d.out_h - 16'd1) begin
                em_py <= em_py + 16'd1;
                em_first <= em_first + 32'(d.pool_sh);
              end else begin
                em_py <= '0;
                em_first <= -32'(d.pool_pad_t);
                rows_done <= '0;
                if (em_n != d.batch - 16'd1) em_n <= em_n + 16'd1;
                else em_done <= 1'b1;
              end
            end
          end
        end
      end
    end
  end
  // tap results, one cycle after the ring read
  logic [G*8-1:0] best_next;
  always_comb begin
    for (int i = 0; i < G; i++) begin
      logic signed [7:0] cur, v;
      cur = tap_first ? -8'sd128 : best[8*i +: 8];
      v = ring_rdata[8*i +: 8];
      best_next[8*i +: 8] = (tap_in && v > cur) ? v : cur;
    end
  end
  always_ff @(posedge clk) if (tap_valid) best <= best_next;

  always_comb begin
    if (has_pool) begin
      wq_push = tap_valid && tap_last;
      wq_din.q = best_next;
      wq_din.oaddr = tap_oaddr;
    end else begin
      wq_push = e2_valid;
      wq_din.q = e2_out.q;
      wq_din.oaddr = e2_out.oaddr;
    end
  end

  // ---- serialiser: a result of nl channels becomes nl / V beats, or one beat with byte strobes -------
  logic [7:0] ser_k;
  logic          w_valid, w_ready;
  logic [63:0]   w_addr;
  logic [DW-1:0] w_data;
  logic [V-1:0]  w_strb;
  wire [7:0] ser_beats = nl > 8'(V) ? 8'(nl >> VSH) : 8'd1;
  always_comb begin
    logic [31:0] lane;
    lane = wq_dout.oaddr & 32'(V - 1);
    w_valid = !wq_empty;
    if (nl >= 8'(V)) begin
      w_addr = act_base + 64'(wq_dout.oaddr) + 64'(ser_k) * 64'(V);
      w_data = wq_dout.q[32'(ser_k) * DW +: DW];
      w_strb = '1;
    end else begin
      w_addr = act_base + 64'(wq_dout.oaddr & ~32'(V - 1));
      w_data = DW'(wq_dout.q) << (8 * lane);
      w_strb = V'(((128'(1) << nl) - 128'(1)) << lane);
    end
  end
  assign wq_pop = w_valid && w_ready && ser_k == ser_beats - 8'd1;
  always_ff @(posedge clk) begin
    if (!rst_n) ser_k <= '0;
    else if (w_valid && w_ready) ser_k <= (ser_k == ser_beats - 8'd1) ? 8'd0 : ser_k + 8'd1;
  end

  logic wr_idle;
  logic [63:0] act_bytes_written;
  axi_beat_writer #(.DW(DW), .MAX_BURST(16), .MAX_OUT(16)) writer (
    .clk, .rst_n, .in_valid(w_valid), .in_ready(w_ready), .in_addr(w_addr), .in_data(w_data), .in_strb(w_strb),
    .idle(wr_idle), .bytes_written(act_bytes_written),
    .m_awvalid(m_act_awvalid), .m_awready(m_act_awready), .m_awaddr(m_act_awaddr), .m_awlen(m_act_awlen),
    .m_awsize(m_act_awsize), .m_awburst(m_act_awburst), .m_wvalid(m_act_wvalid), .m_wready(m_act_wready),
    .m_wdata(m_act_wdata), .m_wstrb(m_act_wstrb), .m_wlast(m_act_wlast), .m_bvalid(m_act_bvalid),
    .m_bready(m_act_bready));

  wire drained = !ag_active && a_idle && !c1_valid && !c2_valid && epi_empty && !e1_valid && !e2_valid
                 && wq_empty && rq_empty && em_done && !tap_valid && wr_idle;

  // =====================================================================================================
  // controller sequence
  // =====================================================================================================
  logic [63:0] base_act_rd, base_act_wr, base_const;
  logic [63:0] n_mac, n_in, n_wt, n_out, n_drain;
  logic [63:0] clock;
  state_t taken_from;
  wire streaming = (st == S_RUN || st == S_DRAIN) && (ag_active || !a_idle);
  assign ap_idle = st == S_IDLE;
  assign ap_ready = st == S_IDLE && ap_start;
  assign cycles = cycle_count;
  assign layer_index = layer;

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      st <= S_IDLE; c_issued <= 1'b0; ap_done <= 1'b0; ag_start <= 1'b0; cycle_count <= '0; status <= '0;
      error_layer <= '0; layer <= '0; clock <= '0; c_off <= '0;
      n_mac <= '0; n_in <= '0; n_wt <= '0; n_out <= '0; n_drain <= '0;
      base_act_rd <= '0; base_act_wr <= '0; base_const <= '0;
    end else begin
      clock <= clock + 64'd1;
      ap_done <= 1'b0;
      ag_start <= 1'b0;
      if (st != S_IDLE) cycle_count <= cycle_count + 64'd1;
      if (c2_valid && (c2_tag.kind == K_MAC || c2_tag.kind == K_DW)) n_mac <= n_mac + 64'd1;
      if (collecting || st == S_TAKE) n_wt <= n_wt + 64'd1;
      // why the array is not taking a beat: no input yet, results backing up, or the tile's tail
      if (streaming && ab_ready && !ab_valid) n_in <= n_in + 64'd1;
      if (streaming && ab_valid && !ab_ready) n_out <= n_out + 64'd1;
      if ((st == S_RUN || st == S_DRAIN) && !streaming) n_drain <= n_drain + 64'd1;
      if (c_run_valid && c_run_ready) begin
        c_issued <= 1'b1;
        c_off <= 8'(c_want_addr[VSH-1:0]);
      end
      if (collecting && st != S_WEIGHTS && cb_valid) cbuf[32'(cb_idx) * DW +: DW] <= cb_data;
      if (collecting && c_done) begin         // every beat is in: take them next cycle
        c_issued <= 1'b0;
        taken_from <= st;
        st <= S_TAKE;
      end else case (st)
        S_IDLE: if (ap_start) begin
          layers <= layer_count;
          layer <= '0;
          cycle_count <= '0;
          status <= '0;
          n_mac <= '0; n_in <= '0; n_wt <= '0; n_out <= '0; n_drain <= '0;
          base_act_rd <= act_bytes_read; base_act_wr <= act_bytes_written; base_const <= const_bytes;
          st <= layer_count == 0 ? S_FINISH : S_DESC;
        end
        S_TAKE: case (taken_from)
          S_DESC: begin
            d <= parse_descriptor(cbuf[1023:0]);
            st <= S_CHECK;
          end
          S_LUT1: begin
            for (int i = 0; i < 256; i++) lut1[i] <= cbuf[8*i +: 8];
            st <= S_LUT2;
          end
          S_LUT2: begin
            for (int i = 0; i < 256; i++) lut2[i] <= cbuf[8*i +: 8];
            st <= S_TILE;
          end
          S_BIAS: begin
            for (int i = 0; i < G; i++) bias[i] <= cbuf[(32'(c_off) + 4 * i) * 8 +: 32];
            st <= S_RQ;
          end
          S_RQ: begin
            for (int i = 0; i < G; i++) begin
              mult[i] <= cbuf[(32'(c_off) + 8 * i) * 8 +: 32];
              shift[i] <= cbuf[(32'(c_off) + 8 * i + 4) * 8 +: 8];
            end
            st <= S_WEIGHTS;
          end
          default: begin          // S_WEIGHTS: the weight RAM is full
            st <= S_RUN;
            ag_start <= 1'b1;
          end
        endcase
        S_CHECK: begin
          tile <= '0;
          tiles <= is_conv ? (dw ? d.out_c >> VSH : d.out_c >> RSH) : (d.op == OP_GAP ? d.out_c >> VSH : 16'd1);
          nl <= (is_conv && !dw) ? 8'(R) : 8'(V);
          if (!fits(d)) begin
            status <= 32'd1;
            error_layer <= layer;
            st <= S_FINISH;
          end else begin
            st <= S_LUT1;
          end
        end
        S_LUT1: if (!need_lut1) st <= S_LUT2;
        S_LUT2: if (!need_lut2) st <= S_TILE;
        S_TILE: begin
          c0 <= is_conv && !dw ? tile << RSH : tile << VSH;
          if (is_conv) st <= S_BIAS;
          else if (d.op == OP_GAP) begin
            for (int i = 0; i < G; i++) bias[i] <= '0;
            st <= S_RQ;
          end else begin
            st <= S_RUN;
            ag_start <= 1'b1;
          end
        end
        S_WEIGHTS: if (d.op == OP_GAP) begin
          st <= S_RUN;
          ag_start <= 1'b1;
        end
        S_RUN: if (!ag_start && !ag_active) st <= S_DRAIN;
        S_DRAIN: if (drained) st <= S_NEXT;
        S_NEXT: begin
          if (tile + 16'd1 < tiles) begin
            tile <= tile + 16'd1;
            st <= S_TILE;
          end else if (layer + 32'd1 < layers) begin
            layer <= layer + 32'd1;
            st <= S_DESC;
          end else begin
            st <= S_FINISH;
          end
        end
        S_FINISH: begin
          ap_done <= 1'b1;
          st <= S_IDLE;
        end
        default: ;
      endcase
    end
  end

  assign counters = {act_bytes_written - base_act_wr, const_bytes - base_const, act_bytes_read - base_act_rd,
                     n_drain, n_out, n_wt, n_in, n_mac, clock};
endmodule
