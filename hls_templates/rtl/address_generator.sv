// Address generator: the loop nest of one layer (one output-channel tile of it) as a stream of read runs,
// each tagged with what its beats are for (engine_pkg::tag_t), one run per cycle. The MAC stage walks the
// same nest by the tags alone. On the window path (`win`) the runs are the layer's input rows in order
// instead (a whole row where its channels are contiguous, else a pixel at a time), each issued only once
// the window has room for it (`win_limit`).
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
  wire is_conv = d.op == OP_CONV;
  wire dw = is_conv && d.flags[F_DEPTHWISE];
  wire has_res = is_conv && d.flags[F_RESIDUAL];
  wire up = d.flags[F_UPSAMPLE2];
  engine_pkg::tag_t a_tag;
  assign a_tag_bits = a_tag;

  logic [15:0] ag_n, ag_y, ag_x, ag_c;
  logic [7:0]  ag_ky, ag_kx;
  logic        ag_ph;
  logic [15:0] lim_y, lim_x, lim_c;
  logic [7:0]  lim_ky, lim_kx;
  logic        has_ph1;
  always_comb begin
    lim_c = 16'd1; lim_ky = 8'd1; lim_kx = 8'd1;
    has_ph1 = has_res || d.op == OP_ADD || d.op == OP_SCALE || d.op == OP_L2NORM;
    case (d.op)
      OP_CONV: begin lim_y = d.conv_h; lim_x = d.conv_w; lim_ky = d.kh; lim_kx = d.kw; end
      OP_GAP:  begin lim_y = d.in_h; lim_x = d.in_w; end
      OP_MAXPOOL: begin lim_y = d.out_h; lim_x = d.out_w; lim_c = d.out_c >> VSH; lim_ky = d.pool_kh;
                        lim_kx = d.pool_kw; end
      OP_COPY, OP_L2NORM: begin lim_y = d.out_h; lim_x = d.out_w; end
      default: begin lim_y = d.out_h; lim_x = d.out_w; lim_c = d.out_c >> VSH; end
    endcase
  end

  logic signed [31:0] iy, ix;
  logic inb;
  logic [63:0] w_run_addr;               // the window path's run (below): declared before the selection reads it
  logic [23:0] w_run_beats;
  engine_pkg::tag_t w_tag;
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
    out_pix = out_pixel(d, ag_n, 32'(ag_y), 32'(ag_x));
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
          a_run_fill = d.in_zero;                                   // padding taps: the input's zero point
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
          a_run_fill = d.flags[F_POOL_PAD_ZERO] ? 8'h00 : 8'h80;   // padding taps: 0, or -128 that never wins
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
        OP_L2NORM: begin       // the pixel's channels, summed as squares (mac_stage)
          a_tag.kind = K_GAP;
          a_tag.first = 1'b1;
          a_run_addr = 64'(in_pix);
          a_run_beats = 24'(d.in_c >> VSH);
        end
        OP_GAP: begin
          a_tag.kind = K_GAP;
          a_tag.first = ag_y == 0 && ag_x == 0;
          a_tag.last = ag_y == d.in_h - 16'd1 && ag_x == d.in_w - 16'd1;
          a_run_pad = 1'b0;
          a_run_addr = 64'(pixel(d.in_addr, ag_n, 32'(ag_y), 32'(ag_x), d.in_h, d.in_w, d.in_c_stride))
                            + 64'(d.in_c_offset) + 64'(c0);
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
      if (d.op == OP_L2NORM) begin     // the pixel's channels again, each beat scaled and written
        a_tag.kind = K_COPY;
        a_tag.oaddr = out_pix;
        a_run_addr = 64'(in_pix);
        a_run_beats = 24'(d.in_c >> VSH);
      end else if (is_conv) begin
        a_tag.kind = K_RES;
        a_run_addr = (64'(pixel(d.in2_addr, ag_n, 32'(ag_y), 32'(ag_x), d.conv_h, d.conv_w, d.in2_c_stride))
                          + 64'(d.in2_c_offset) + 64'(c0)) & ~64'(B - 1);
        a_run_beats = nl > 8'(V) ? 24'(nl >> VSH) : 24'd1;
      end else if (d.op == OP_ADD) begin
        a_tag.kind = K_B;
        a_run_addr = 64'(pixel(d.in2_addr, ag_n, 32'(ag_y), 32'(ag_x), d.out_h, d.out_w, d.in2_c_stride))
                          + 64'(d.in2_c_offset) + 64'(cv);
      end else begin
        a_tag.kind = K_B;
        a_run_addr = 64'(pixel(d.in2_addr, ag_n, 32'd0, 32'd0, 16'd1, 16'd1, d.in2_c_stride))
                          + 64'(d.in2_c_offset) + 64'(cv);
      end
    end
    if (win) begin
      a_run_pad = 1'b0;
      a_run_fill = 8'd0;
      a_run_addr = w_run_addr;
      a_run_beats = w_run_beats;
      a_tag = w_tag;
    end
  end

  // the window path's runs: rows of the input, image after image; with a fused residual, an output row's
  // residual operands right after the last input row it reads, so they wait in the window's queue while the
  // next rows load
  logic [31:0] ag_row;                   // input rows issued so far, over the batch
  logic [15:0] res_y, res_x;
  logic signed [31:0] res_last;          // the last input row output row res_y reads
  wire contiguous = !dw && d.in_c == d.in_c_stride;     // a depthwise tile reads VEC channels of each pixel
  wire w_loaded = ag_y == d.in_h;        // every row of image ag_n is issued
  wire res_due = has_res && res_y != d.conv_h && (w_loaded || res_last < $signed({16'd0, ag_y}));
  always_comb begin
    w_tag = '0;
    if (res_due) begin
      w_run_addr = (64'(pixel(d.in2_addr, ag_n, 32'(res_y), 32'(res_x), d.conv_h, d.conv_w, d.in2_c_stride))
                       + 64'(d.in2_c_offset) + 64'(c0)) & ~64'(B - 1);
      w_run_beats = nl > 8'(V) ? 24'(nl >> VSH) : 24'd1;
      w_tag.kind = K_RES;
      w_tag.n = ag_n; w_tag.y = res_y; w_tag.x = res_x;
    end else begin
      w_run_addr = 64'(pixel(d.in_addr, ag_n, 32'(ag_y), contiguous ? 32'd0 : 32'(ag_x), d.in_h, d.in_w,
                             d.in_c_stride)) + 64'(d.in_c_offset) + (dw ? 64'(c0) : 64'd0);
      w_run_beats = dw ? 24'd1 : contiguous ? 24'(32'(d.in_w) * 32'(d.in_c >> VSH)) : 24'(d.in_c >> VSH);
      w_tag.kind = K_MAC;
      w_tag.last = contiguous || ag_x == d.in_w - 16'd1;
      w_tag.n = ag_n; w_tag.y = ag_y; w_tag.x = ag_x;
    end
  end

  assign a_run_valid = ag_active && (!win || res_due || (!w_loaded && ag_row < win_limit));
  always_ff @(posedge clk) begin
    if (!rst_n) begin
      ag_active <= 1'b0;
    end else if (ag_start) begin
      ag_active <= 1'b1;
      ag_n <= '0; ag_y <= '0; ag_x <= '0; ag_c <= '0; ag_ky <= '0; ag_kx <= '0; ag_ph <= 1'b0; ag_row <= '0;
      res_y <= '0; res_x <= '0; res_last <= 32'(d.kh) - 32'(d.pad_t) - 32'sd1;
    end else if (win && a_run_valid && a_run_ready && res_due) begin
      if (res_x != d.conv_w - 16'd1) res_x <= res_x + 16'd1;
      else begin
        res_x <= '0;
        res_y <= res_y + 16'd1;
        res_last <= res_last + 32'(d.stride_h);
      end
    end else if (win && a_run_valid && a_run_ready) begin
      if (!contiguous && ag_x != d.in_w - 16'd1) ag_x <= ag_x + 16'd1;
      else begin
        ag_x <= '0;
        ag_row <= ag_row + 32'd1;
        ag_y <= ag_y + 16'd1;
      end
    end else if (win && ag_active && w_loaded && !res_due) begin     // the image is issued: the next one
      ag_y <= '0;
      res_y <= '0; res_x <= '0; res_last <= 32'(d.kh) - 32'(d.pad_t) - 32'sd1;
      if (ag_n != d.batch - 16'd1) ag_n <= ag_n + 16'd1;
      else ag_active <= 1'b0;
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
endmodule
