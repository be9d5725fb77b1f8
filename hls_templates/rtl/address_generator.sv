// Address generator: the loop nest of one layer (one output-channel tile of it) as a stream of read runs,
// each tagged with what its beats are for (engine_pkg::tag_t), one run per cycle, AG_LATENCY cycles after the
// nest reaches it: P1 decodes the run (its tag, the operands of its two pixel addresses, the input tap's
// coordinates), then pixel_address.sv takes engine_pkg::ADDRESS_LATENCY stages for each address, an add or a
// multiply each. The MAC stage walks the same nest by the tags alone. On the window path (`win`) the runs are
// the layer's input rows in order instead (a whole row where its channels are contiguous, else a pixel at a
// time), each issued only once the window has room for it (`win_limit`).
import engine_pkg::*;

module address_generator #(
  parameter int V = 16,
  parameter int B = 16             // bytes per activation beat
) (
  input  logic clk,
  input  logic rst_n,
  input  logic [engine_pkg::DESC_BITS-1:0] desc,
  input  logic        ag_start,    // begin the tile's nest
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

  // the layer's kind and the nest's loop ends (each bound less one), in registers: the descriptor is steady for
  // cycles before a tile starts, and the nest's step tests equalities of registers
  logic is_conv, dw, has_res, up, has_ph1, contiguous;
  logic [15:0] y_last, x_last, c_last, n_last, conv_w_last, in_w_last, in_h_last, conv_h_last;
  logic signed [31:0] lead_top;          // what lead_q starts an image at: -(kh - pad_t - 1)
  logic [7:0]  ky_last, kx_last;
  always_ff @(posedge clk) begin
    logic [15:0] lim_y, lim_x, lim_c;
    logic [7:0]  lim_ky, lim_kx;
    lim_c = 16'd1; lim_ky = 8'd1; lim_kx = 8'd1;
    case (d.op)
      OP_CONV: begin lim_y = d.conv_h; lim_x = d.conv_w; lim_ky = d.kh; lim_kx = d.kw; end
      OP_GAP:  begin lim_y = d.in_h; lim_x = d.in_w; end
      OP_MAXPOOL: begin lim_y = d.out_h; lim_x = d.out_w; lim_c = d.out_c >> VSH; lim_ky = d.pool_kh;
                        lim_kx = d.pool_kw; end
      OP_COPY, OP_L2NORM: begin lim_y = d.out_h; lim_x = d.out_w; end
      default: begin lim_y = d.out_h; lim_x = d.out_w; lim_c = d.out_c >> VSH; end
    endcase
    y_last <= lim_y - 16'd1; x_last <= lim_x - 16'd1; c_last <= lim_c - 16'd1;
    ky_last <= lim_ky - 8'd1; kx_last <= lim_kx - 8'd1;
    n_last <= d.batch - 16'd1; conv_w_last <= d.conv_w - 16'd1;
    in_w_last <= d.in_w - 16'd1; in_h_last <= d.in_h - 16'd1; conv_h_last <= d.conv_h - 16'd1;
    lead_top <= 32'(d.pad_t) + 32'sd1 - 32'(d.kh);
    is_conv <= d.op == OP_CONV;
    dw <= d.op == OP_CONV && d.flags[F_DEPTHWISE];
    has_res <= d.op == OP_CONV && d.flags[F_RESIDUAL];
    up <= d.flags[F_UPSAMPLE2];
    has_ph1 <= (d.op == OP_CONV && d.flags[F_RESIDUAL]) || d.op == OP_ADD || d.op == OP_SCALE || d.op == OP_L2NORM;
    contiguous <= !(d.op == OP_CONV && d.flags[F_DEPTHWISE]) && d.in_c == d.in_c_stride;   // depthwise: VEC channels
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
    conv = d.op == OP_CONV;
    pool = d.op == OP_MAXPOOL;
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
  logic [15:0] res_y, res_x;
  // the residual's turn, from flags kept beside the counters (each set by the step that makes it true), so no
  // comparison against the descriptor sits behind the nest's step: every row of image ag_n is issued
  // (ag_y == in_h), every output row's residual is (res_y == conv_h), and ag_y less the last input row output
  // row res_y reads (positive: that row is in)
  logic w_loaded, res_end;
  logic signed [31:0] lead_q;
  wire res_due = has_res && !res_end && (w_loaded || (!lead_q[31] && lead_q != 32'sd0));
  // the nest's position, decoded (P1) and carried beside the two pixel_address pipelines (P2 on)
  localparam int AG_LATENCY = 1 + ADDRESS_LATENCY;
  logic nest_active;
  logic [AG_LATENCY-1:0] v_q;
  wire en = !v_q[AG_LATENCY-1] || a_run_ready;
  assign a_run_valid = v_q[AG_LATENCY-1];
  assign ag_active = nest_active || |v_q;
  // a run enters the pipeline (the nest moves on) when the nest has one and the pipeline moves
  wire want = nest_active && (!win || res_due || (!w_loaded && ag_row < win_limit));
  wire issue = want && en;
  wire [31:0] cv = 32'(ag_c) << VSH;
  wire [15:0] cin_beats = d.in_c >> VSH;
  wire last_tap = ag_ky == ky_last && ag_kx == kx_last;

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
    iy_d = y_org + ky_off;
    ix_d = x_org + kx_off;
    tag1 = '0;
    tag1.n = ag_n; tag1.y = ag_y; tag1.x = ag_x;
    beats1 = 24'd1;
    fill1 = 8'd0;
    pad_check1 = 1'b0;
    waddr1 = 16'd0;
    // A: the input pixel by default (tap coordinates, the input's geometry)
    from_tap1 = 1'b1;
    base_a = d.in_addr; nh_a = n_in_h; wa = d.in_w; sa = d.in_c_stride; ya = 32'(ag_y); xa = 32'(ag_x);
    add_a = 32'(d.in_c_offset); wide_a = 1'b0; align_a = 1'b0;
    // B: the output pixel (a transposed conv's phase: a pixel of the twice-as-large output)
    base_b = d.out_addr; sb = d.out_c_stride; add_b = 32'(d.out_c_offset); zero_b = 1'b0;
    if (d.out_step == 8'd2) begin
      yb = {15'd0, ag_y, d.out_phase_y[0]}; xb = {15'd0, ag_x, d.out_phase_x[0]};
      nh_b = n_out_h << 1; wb = {d.out_w[14:0], 1'b0};
    end else begin
      yb = 32'(ag_y); xb = 32'(ag_x); nh_b = n_out_h; wb = d.out_w;
    end
    if (win) begin
      from_tap1 = 1'b0; zero_b = 1'b1; wide_a = 1'b1;
      if (res_due) begin
        base_a = d.in2_addr; nh_a = n_conv_h; wa = d.conv_w; sa = d.in2_c_stride; ya = 32'(res_y); xa = 32'(res_x);
        add_a = 32'(d.in2_c_offset) + 32'(c0); align_a = 1'b1;
        beats1 = nl > 8'(V) ? 24'(nl >> VSH) : 24'd1;
        tag1.kind = K_RES;
        tag1.y = res_y; tag1.x = res_x;
      end else begin
        xa = contiguous ? 32'd0 : 32'(ag_x);
        add_a = 32'(d.in_c_offset) + (dw ? 32'(c0) : 32'd0);
        beats1 = dw ? 24'd1 : contiguous ? 24'(32'(d.in_w) * 32'(cin_beats)) : 24'(cin_beats);
        tag1.kind = K_MAC;
        tag1.last = contiguous || ag_x == in_w_last;
      end
    end else if (!ag_ph) begin
      pad_check1 = 1'b1;
      case (d.op)
        OP_CONV: begin
          fill1 = d.in_zero;                                        // padding taps: the input's zero point
          tag1.first = ag_ky == 0 && ag_kx == 0;
          tag1.last = last_tap && !has_res;
          add_b = add_b + 32'(c0);
          if (dw) begin
            tag1.kind = K_DW;
            add_a = add_a + 32'(c0);
            waddr1 = tap_row;
          end else begin
            tag1.kind = K_MAC;
            beats1 = 24'(cin_beats);
            waddr1 = tap_row;
          end
        end
        OP_MAXPOOL: begin
          tag1.kind = K_POOL;
          tag1.first = ag_ky == 0 && ag_kx == 0;
          tag1.last = last_tap;
          fill1 = d.flags[F_POOL_PAD_ZERO] ? 8'h00 : 8'h80;        // padding taps: 0, or -128 that never wins
          add_a = add_a + cv;
          add_b = add_b + cv;
        end
        OP_COPY: begin
          tag1.kind = K_COPY;
          tag1.last = 1'b1;
          beats1 = 24'(cin_beats);
        end
        OP_L2NORM: begin       // the pixel's channels, summed as squares (mac_stage)
          tag1.kind = K_GAP;
          tag1.first = 1'b1;
          beats1 = 24'(cin_beats);
          zero_b = 1'b1;
        end
        OP_GAP: begin
          tag1.kind = K_GAP;
          tag1.first = ag_y == 0 && ag_x == 0;
          tag1.last = ag_y == in_h_last && ag_x == in_w_last;
          pad_check1 = 1'b0;
          from_tap1 = 1'b0;
          add_a = add_a + 32'(c0); wide_a = 1'b1;
          base_b = d.out_addr; nh_b = 32'(ag_n); wb = 16'd1; yb = 32'd0; xb = 32'd0;
          add_b = 32'(d.out_c_offset) + 32'(c0);
        end
        default: begin        // ADD, SCALE: the first operand
          tag1.kind = K_A;
          add_a = add_a + cv;
          add_b = add_b + cv;
        end
      endcase
    end else begin
      tag1.last = 1'b1;
      add_b = add_b + (is_conv ? 32'(c0) : cv);
      if (d.op == OP_L2NORM) begin     // the pixel's channels again, each beat scaled and written
        tag1.kind = K_COPY;
        add_b = 32'(d.out_c_offset);
        beats1 = 24'(cin_beats);
      end else begin
        from_tap1 = 1'b0; wide_a = 1'b1;
        base_a = d.in2_addr; sa = d.in2_c_stride;
        if (is_conv) begin
          tag1.kind = K_RES;
          nh_a = n_conv_h; wa = d.conv_w;
          add_a = 32'(d.in2_c_offset) + 32'(c0); align_a = 1'b1;
          beats1 = nl > 8'(V) ? 24'(nl >> VSH) : 24'd1;
        end else begin
          tag1.kind = K_B;
          nh_a = n_out_h; wa = d.out_w;
          add_a = 32'(d.in2_c_offset) + cv;
          if (d.op != OP_ADD) begin    // SCALE: the image's gate vector
            nh_a = 32'(ag_n); wa = 16'd1; ya = 32'd0; xa = 32'd0;
          end
        end
      end
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
    else if (en) v_q <= {v_q[AG_LATENCY-2:0], issue};
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
  logic [63:0] oaddr64;
  pixel_address #(.B(B)) read_address (
    .clk_i(clk), .en_i(en), .nh_i(nha_q), .y_i(from_tap_q ? tap_y : ya_q), .x_i(from_tap_q ? tap_x : xa_q),
    .w_i(wa_q), .stride_i(sa_q), .base_i(base_a_q), .add_i(add_a_q), .wide_i(wide_a_q), .align_i(align_a_q),
    .zero_i(1'b0), .addr_o(a_run_addr));
  pixel_address #(.B(B)) result_address (
    .clk_i(clk), .en_i(en), .nh_i(nhb_q), .y_i(yb_q), .x_i(xb_q), .w_i(wb_q), .stride_i(sb_q), .base_i(base_b_q),
    .add_i(add_b_q), .wide_i(1'b0), .align_i(1'b0), .zero_i(zero_b_q), .addr_o(oaddr64));
  always_comb begin
    engine_pkg::tag_t t;
    t = tag_q[LAST*TW +: TW];
    t.oaddr = oaddr64[31:0];
    a_tag_bits = t;
  end
  assign a_run_beats = beats_q[LAST*24 +: 24];
  assign a_run_fill = fill_q[LAST*8 +: 8];
  assign a_run_pad = pad_q[LAST];

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      nest_active <= 1'b0;
    end else if (ag_start) begin
      nest_active <= 1'b1;
      ag_n <= '0; ag_y <= '0; ag_x <= '0; ag_c <= '0; ag_ky <= '0; ag_kx <= '0; ag_ph <= 1'b0; ag_row <= '0;
      y_org <= 32'sd0 - 32'(pad_y); x_org <= 32'sd0 - 32'(pad_x); ky_off <= '0; kx_off <= '0; tap_row <= '0;
      n_in_h <= '0; n_conv_h <= '0; n_out_h <= '0;
      res_y <= '0; res_x <= '0; lead_q <= lead_top; w_loaded <= d.in_h == 16'd0; res_end <= d.conv_h == 16'd0;
    end else if (win && issue && res_due) begin
      if (res_x != conv_w_last) res_x <= res_x + 16'd1;
      else begin
        res_x <= '0;
        res_y <= res_y + 16'd1;
        res_end <= res_y == conv_h_last;
        lead_q <= lead_q - 32'(d.stride_h);
      end
    end else if (win && issue) begin
      if (!contiguous && ag_x != in_w_last) ag_x <= ag_x + 16'd1;
      else begin
        ag_x <= '0;
        ag_row <= ag_row + 32'd1;
        ag_y <= ag_y + 16'd1;
        w_loaded <= ag_y == in_h_last;
        lead_q <= lead_q + 32'sd1;
      end
    end else if (win && nest_active && w_loaded && !res_due) begin     // the image is issued: the next one
      ag_y <= '0;
      res_y <= '0; res_x <= '0; lead_q <= lead_top; w_loaded <= d.in_h == 16'd0; res_end <= d.conv_h == 16'd0;
      if (ag_n != n_last) begin
        ag_n <= ag_n + 16'd1;
        n_in_h <= n_in_h + 32'(d.in_h); n_conv_h <= n_conv_h + 32'(d.conv_h); n_out_h <= n_out_h + 32'(d.out_h);
      end else nest_active <= 1'b0;
    end else if (issue) begin
      if (!ag_ph && !last_tap) begin
        if (ag_kx == kx_last) begin
          ag_kx <= '0; kx_off <= '0;
          ag_ky <= ag_ky + 8'd1; ky_off <= ky_off + 32'(dil_y);
        end else begin
          ag_kx <= ag_kx + 8'd1; kx_off <= kx_off + 32'(dil_x);
        end
        tap_row <= tap_row + tap_rows;
      end else if (!ag_ph && has_ph1) begin
        ag_ph <= 1'b1;
      end else begin
        ag_ph <= 1'b0; ag_ky <= '0; ag_kx <= '0; ky_off <= '0; kx_off <= '0; tap_row <= '0;
        if (ag_c != c_last) ag_c <= ag_c + 16'd1;
        else begin
          ag_c <= '0;
          if (ag_x != x_last) begin
            ag_x <= ag_x + 16'd1; x_org <= x_org + 32'(step_x);
          end else begin
            ag_x <= '0; x_org <= 32'sd0 - 32'(pad_x);
            if (ag_y != y_last) begin
              ag_y <= ag_y + 16'd1; y_org <= y_org + 32'(step_y);
            end else begin
              ag_y <= '0; y_org <= 32'sd0 - 32'(pad_y);
              if (ag_n != n_last) begin
                ag_n <= ag_n + 16'd1;
                n_in_h <= n_in_h + 32'(d.in_h); n_conv_h <= n_conv_h + 32'(d.conv_h);
                n_out_h <= n_out_h + 32'(d.out_h);
              end else nest_active <= 1'b0;
            end
          end
        end
      end
    end
  end
endmodule
