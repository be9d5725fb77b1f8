// Max pool fused behind a conv: conv rows go into a ring of RINGK rows; as soon as every conv row of a
// pooled row's window is in, the emitter reads the window's taps from the ring (one per cycle) and emits
// the pooled pixel. A conv row waits only while the ring holds rows the emitter still needs. A pixel goes where
// its row and column say, so a Winograd layer's pairs of rows, interleaved as its tiles leave, fill the ring
// too; a row is done at its last pixel to arrive: its last column, or on a Winograd layer whose map is of odd
// width and whose last group of tiles is three or more columns wide, the one before (its odd columns come last).
import engine_pkg::*;

module pool_unit #(
  parameter int G = 16,
  parameter int MAXK = 7,
  parameter int MAX_W = 64,
  parameter int P = 2              // the window path's tiles per group (a Winograd layer's order)
) (
  input  logic clk,
  input  logic rst_n,
  input  logic [engine_pkg::DESC_BITS-1:0] desc,
  input  logic        start,             // a tile begins: forget the last one
  input  logic [15:0] c0,
  // conv results (E2) of a pooled layer
  input  logic            in_valid,
  input  logic [G*8-1:0]  in_q,
  input  logic [15:0]     in_n, in_y, in_x,
  output logic            room,          // the input queue can take what the epilogue holds
  // pooled pixels
  output logic            out_valid,
  output logic [G*8-1:0]  out_q,
  output logic [31:0]     out_oaddr,
  input  logic            out_room,
  output logic            done,          // every pooled row of the tile is out
  output logic            busy
);
  `include "engine_functions.svh"
  localparam int RINGK = MAXK + 1;
  localparam int QW = G * 8 + 3 * 16;
  engine_pkg::desc_t d;
  assign d = desc;
  // per layer, in registers (the descriptor is steady for cycles before a tile starts): each emitter loop's
  // bound as loop_bound's registers, so a loop's end and one-before-end are flags its steps set (at_end below)
  logic has_pool;
  logic [15:0] conv_w_last_q;
  logic [7:0] kw_pen2_q, kh_pen2_q;
  logic [15:0] n_pen_q, w_pen2_q, h_pen2_q;
  logic kw_one_q, kh_one_q, w_one_q, h_one_q, n_one_q;
  logic kw_two_q, kh_two_q, w_two_q, h_two_q;
  loop_bound #(.W(8)) kw_bound (.clk_i(clk), .count_i(d.pool_kw), .less2_o(), .less3_o(kw_pen2_q),
    .is1_o(kw_one_q), .is2_o(kw_two_q), .is3_o());
  loop_bound #(.W(8)) kh_bound (.clk_i(clk), .count_i(d.pool_kh), .less2_o(), .less3_o(kh_pen2_q),
    .is1_o(kh_one_q), .is2_o(kh_two_q), .is3_o());
  loop_bound #(.W(16)) w_bound (.clk_i(clk), .count_i(d.out_w), .less2_o(), .less3_o(w_pen2_q),
    .is1_o(w_one_q), .is2_o(w_two_q), .is3_o());
  loop_bound #(.W(16)) h_bound (.clk_i(clk), .count_i(d.out_h), .less2_o(), .less3_o(h_pen2_q),
    .is1_o(h_one_q), .is2_o(h_two_q), .is3_o());
  loop_bound #(.W(16)) n_bound (.clk_i(clk), .count_i(d.batch), .less2_o(n_pen_q), .less3_o(),
    .is1_o(n_one_q), .is2_o(), .is3_o());
  always_ff @(posedge clk) begin
    has_pool <= d.op == OP_CONV && d.flags[F_POOL];
    conv_w_last_q <= d.flags[F_WINOGRAD] && d.conv_w[0] && ((d.conv_w - 16'd1) & 16'(2 * P - 1)) >= 16'd2
                     ? d.conv_w - 16'd2 : d.conv_w - 16'd1;
  end
  wire pad_zero = d.flags[F_POOL_PAD_ZERO];

  logic rq_pop, rq_pop_ctl, rq_valid;
  logic [QW-1:0] rq_dout;
  localparam int RQ_DEPTH = 32;
  logic [5:0] rq_count;
  sync_fifo #(.W(QW), .DEPTH(RQ_DEPTH), .OUT_REG(1'b1)) rq (
    .clk, .rst_n, .push(in_valid && has_pool), .din({in_q, in_n, in_y, in_x}), .pop(rq_pop), .pop_ctl(rq_pop_ctl),
    .dout(rq_dout), .valid(rq_valid), .valid_copy(), .count(rq_count));
  // the queue's head in registers, and whether the ring takes it (hd_ok_q, tested a cycle ahead below): the ring's
  // write, the rows it completes and the queue's pop start from flip-flops
  logic hd_v, hd_ok_q;
  logic [G*8-1:0] rq_q;
  logic [15:0] rq_n, rq_y, rq_x;
  logic ring_take;
  wire hd_load = !hd_v || ring_take;
  assign rq_pop = hd_load;               // the queue ignores a pop while it is empty
  // the pop again, for the queue's pointers, from copies of its three registers (each told apart from its original
  // by a reset the other has not, and equal to it from a reset's second cycle): hd_load loads the queue's head and
  // this one, over two hundred flip-flops
  logic hd_v_c, hd_ok_c, em_moved_c;
  assign rq_pop_ctl = !hd_v_c || (hd_ok_c && !em_moved_c);
  always_ff @(posedge clk) begin
    if (!rst_n) hd_v <= 1'b0;
    else if (hd_load) hd_v <= rq_valid;
    if (hd_load) hd_v_c <= rq_valid;
    if (hd_load) {rq_q, rq_n, rq_y, rq_x} <= rq_dout;
  end
  // what the epilogue's pipeline holds fits: from last cycle's fill, one entry more cautious
  always_ff @(posedge clk) room <= (7'(rq_count) + 7'(hd_v)) <= 7'(RQ_DEPTH - EPI_LATENCY - 5);

  // pool emitter state
  logic [15:0] em_n, em_py, em_px;
  logic [7:0]  em_ky, em_kx;
  logic        kx_end, ky_end, px_end, py_end, n_end;   // each counter is at its loop's last value
  logic        kx_pen, ky_pen, px_pen, py_pen;          // ... at the one before it (what its end flag steps to)
  logic [15:0] rows_done;
  logic        em_busy, em_done;
  logic signed [31:0] em_first;                  // first conv row of pooled row em_py
  logic signed [31:0] em_first_next;             // em_first + pool_sh: the next pooled row's, a register beside it
  logic signed [31:0] em_left;                   // first conv column of pooled pixel em_px
  logic [16:0] em_ring_end;                      // em_first + RINGK within [0, 2^16]: rows from it on wait
  logic [31:0] need_rows;                        // conv rows pooled row em_py needs: min(em_first + kh, conv_h)

  // ring RAM: RINGK rows x MAX_W pixels x G bytes
  localparam int RAW = $clog2(RINGK * MAX_W);
  logic [G*8-1:0] ring[RINGK * MAX_W];
  logic ring_we;
  logic [RAW-1:0] ring_waddr, ring_raddr;
  logic [G*8-1:0] ring_rdata;
  always_ff @(posedge clk) begin
    if (ring_we) ring[ring_waddr] <= rq_q;
    ring_rdata <= ring[ring_raddr];
  end
  assign ring_we = ring_take;
  assign ring_waddr = RAW'((32'(rq_y) % RINGK) * MAX_W + 32'(rq_x));

  // emitter: for each pooled pixel, read its window's taps from the ring (one per cycle), then emit
  logic signed [31:0] er_y, er_x;
  // whether the tap is inside the conv output, as compares of the kernel counters with bounds kept beside em_first
  // and em_left (-first and conv_h - first; -left and conv_w - left), not a sum and then a compare. The rows and
  // columns are within a row's 16 bits and a pad of the output: 18 bits carry the bounds
  logic signed [17:0] in_y_lo_q, in_y_hi_q, in_x_lo_q, in_x_hi_q;
  logic er_in;
  logic tap_valid, tap_in, tap_last, tap_first;
  logic [31:0] tap_oaddr;
  logic [31:0] out_base_q;           // the layer's out_addr + out_c_offset: a start adds c0 to a register alone
  always_ff @(posedge clk) out_base_q <= d.out_addr + 32'(d.out_c_offset);
  logic [31:0] em_oaddr;             // where pooled pixel (em_n, em_py, em_px) goes: dense NHWC, so the next
                                     // pixel, row or image is always one stride on
  logic [G*8-1:0] best;
  // the emitter's next first row, and what depends on it, all kept in registers beside em_first
  // the first row a pooled row's first row keeps out of the ring, clamped to a row's 16 bits: the ring's admission
  // test is then an unsigned 17-bit comparison with the queue's head
  function automatic logic [16:0] ring_clamp(input logic signed [31:0] e);
    ring_clamp = e < 32'sd0 ? 17'd0 : e > 32'sd65536 ? 17'h10000 : 17'(e);
  endfunction
  function automatic logic [31:0] rows_clamp(input logic signed [31:0] e);
    rows_clamp = e > 32'(d.conv_h) ? 32'(d.conv_h) : 32'(e);
  endfunction
  function automatic logic [16:0] ring_end(input logic signed [31:0] first);
    ring_end = ring_clamp(first + RINGK);
  endfunction
  wire signed [31:0] first_top = 32'sd0 - 32'(d.pool_pad_t);
  wire signed [31:0] left_edge = 32'sd0 - 32'(d.pool_pad_l);
  // what the first pooled row's and the next pooled row's first row give, in registers: the first per layer; the
  // next a cycle after em_first moves, in time, as a pooled row ends no sooner than two cycles after the last. The
  // next row's sums with RINGK and with the pool's height step beside em_first_next (top_next_*_q their starts),
  // so only the clamps follow them
  logic [16:0] top_end_q, next_end_q;
  logic [31:0] top_rows_q, next_rows_q;
  logic signed [31:0] top_next_q;                // first_top + sh, a cycle ahead of its sums with RINGK and kh
  logic signed [31:0] top_next_k_q, top_next_h_q, em_next_k, em_next_h;
  logic signed [31:0] top_h_q;                   // first_top + kh, a cycle ahead of its clamp
  always_ff @(posedge clk) begin
    top_end_q <= ring_end(first_top);
    top_h_q <= first_top + 32'(d.pool_kh);
    top_rows_q <= rows_clamp(top_h_q);
    top_next_q <= first_top + 32'(d.pool_sh);
    top_next_k_q <= top_next_q + RINGK;
    top_next_h_q <= top_next_q + 32'(d.pool_kh);
    next_end_q <= ring_clamp(em_next_k);
    next_rows_q <= rows_clamp(em_next_h);
  end
  // the conv rows a pooled row needs are in: a cycle old, and cleared for the cycle its rows change (rows_done
  // only grows in between, so a cycle old is only a cycle cautious)
  logic rows_in_q;
  wire em_step = has_pool && !em_done && (em_busy || rows_in_q) && out_room;
  logic row_last_q;                              // kx_end && ky_end && px_end, a flag set with them
  wire img_last = row_last_q && py_end;          // ... and py_end: an image's last tap
  wire em_row_end = em_step && row_last_q;
  always_ff @(posedge clk)
    if (start || em_row_end) rows_in_q <= 1'b0;         // (no step before a start: em_done)
    else rows_in_q <= 32'(rows_done) >= need_rows;
  // the ring's admission of the head the queue holds next cycle, against the emitter's row of this cycle: exact
  // next cycle unless the emitter moved to another row (or tile) at this edge (em_moved_q), which waits a cycle
  logic em_moved_q;
  always_ff @(posedge clk) begin
    logic ok_new, ok_held;                 // the queue's next item, the head now: both tested, then one picked
    // a conv row no pooled row reads (an odd map's last under a 2x2 stride-2 pool) goes through unused once the
    // emitter has left its image (or the tile): without this it would wait in the queue for ever
    ok_new = rq_valid && ((rq_dout[47:32] == em_n && {1'b0, rq_dout[31:16]} < em_ring_end) || em_done
                          || rq_dout[47:32] < em_n);
    ok_held = hd_v && ((rq_n == em_n && {1'b0, rq_y} < em_ring_end) || em_done || rq_n < em_n);
    hd_ok_q <= hd_load ? ok_new : ok_held;       // (low a cycle after a reset: the queue and the head are empty)
    em_moved_q <= start || em_row_end;
    hd_ok_c <= rst_n && (hd_load ? ok_new : ok_held);
    em_moved_c <= rst_n && (start || em_row_end);
  end
  assign ring_take = hd_ok_q && !em_moved_q;
  always_comb begin
    er_y = em_first + 32'(em_ky);
    er_x = em_left + 32'(em_kx);
    er_in = $signed({10'd0, em_ky}) >= in_y_lo_q && $signed({10'd0, em_ky}) < in_y_hi_q
            && $signed({10'd0, em_kx}) >= in_x_lo_q && $signed({10'd0, em_kx}) < in_x_hi_q;
    ring_raddr = RAW'((32'(er_y) % RINGK) * MAX_W + 32'(er_x));
  end

  // the tile's last pooled pixel is out: one term of the emitter's step, not the end of its nest; the step that
  // sets it, and the step that moves to the next image, are told by a flag kept a step ahead (the end flags the
  // step leaves behind) and the image's, not by the five flags
  // (done after a reset, so nothing steps before a tile starts: the emitter's counters below are set by the start
  // alone, and the reset's fan-out stays off their paths)
  always_ff @(posedge clk)
    if (!rst_n) em_done <= 1'b1;
    else if (start) em_done <= !has_pool;
    else if (em_step && img_last && n_end) em_done <= 1'b1;
  always_ff @(posedge clk)
    if (start) begin
      row_last_q <= kw_one_q && kh_one_q && w_one_q;
    end else if (em_step) begin
      if (!kx_end) begin
        row_last_q <= kx_pen && ky_end && px_end;
      end else if (!ky_end) begin
        row_last_q <= kw_one_q && ky_pen && px_end;
      end else if (!px_end) begin
        row_last_q <= kw_one_q && kh_one_q && px_pen;
      end else begin
        row_last_q <= kw_one_q && kh_one_q && w_one_q;
      end
    end
  // px_pen's next value, em_px == w_pen2_q, a compare a cycle old: em_px never moves on two cycles in a row, nor
  // on the cycle after a start, as a pooled pixel takes kh x kw >= 2 steps (layer_descriptor's check)
  logic px_pen2_q;
  always_ff @(posedge clk) px_pen2_q <= em_px == w_pen2_q;
  // (no reset: a tile's start sets them before anything reads them, and the reset's fan-out stays off their path)
  always_ff @(posedge clk)
    if (start) begin
      em_n <= '0; n_end <= n_one_q;
    end else if (em_step && img_last && !n_end) begin
      em_n <= em_n + 16'd1; n_end <= em_n == n_pen_q;
    end
  // the conv rows of the image in the ring: from the ring's writes, back to none as the emitter leaves the image
  always_ff @(posedge clk)
    if (!rst_n || start || (em_step && img_last)) rows_done <= '0;
    else if (ring_we && rq_x == conv_w_last_q) rows_done <= rq_y + 16'd1;
  always_ff @(posedge clk) begin
    tap_valid <= rst_n && !start && em_step;
    if (start) begin
      em_px <= '0; em_ky <= '0; em_kx <= '0; em_busy <= 1'b0;
      kx_end <= kw_one_q; ky_end <= kh_one_q; px_end <= w_one_q;
      kx_pen <= kw_two_q; ky_pen <= kh_two_q; px_pen <= w_two_q;
      em_left <= left_edge;
      in_x_lo_q <= 18'sd0 - 18'(left_edge); in_x_hi_q <= 18'(d.conv_w) - 18'(left_edge);
      em_oaddr <= out_base_q + 32'(c0);
    end else begin
      tap_in <= er_in;
      tap_first <= em_ky == 0 && em_kx == 0;
      tap_last <= ky_end && kx_end;
      tap_oaddr <= em_oaddr;
      if (em_step) begin
        em_busy <= 1'b1;
        if (!kx_end) begin
          em_kx <= em_kx + 8'd1; kx_end <= kx_pen; kx_pen <= em_kx == kw_pen2_q;
        end else begin
          em_kx <= '0; kx_end <= kw_one_q; kx_pen <= kw_two_q;
          if (!ky_end) begin
            em_ky <= em_ky + 8'd1; ky_end <= ky_pen; ky_pen <= em_ky == kh_pen2_q;
          end else begin
            em_ky <= '0; ky_end <= kh_one_q; ky_pen <= kh_two_q;
            em_oaddr <= em_oaddr + 32'(d.out_c_stride);
            if (!px_end) begin
              em_px <= em_px + 16'd1; px_end <= px_pen; px_pen <= px_pen2_q;
              em_left <= em_left + 32'(d.pool_sw);
              in_x_lo_q <= in_x_lo_q - 18'(d.pool_sw); in_x_hi_q <= in_x_hi_q - 18'(d.pool_sw);
            end else begin
              em_px <= '0; px_end <= w_one_q; px_pen <= w_two_q;
              em_left <= left_edge;
              in_x_lo_q <= 18'sd0 - 18'(left_edge); in_x_hi_q <= 18'(d.conv_w) - 18'(left_edge);
              em_busy <= 1'b0;
            end
          end
        end
      end
    end
  end
  // the pooled row, in a block of its own: it moves on a row's last step, which row_last_q tells in one flag (the
  // three loop ends above, set with them), so its enable is the step and that flag. Its next flags are flags too:
  // py_end's from py_pen, py_pen's from a compare of em_py a cycle old (py_pen2_q), as em_py never moves on two
  // cycles in a row (a row's end clears em_busy and rows_in_q, so no step follows it at once) nor on the cycle
  // after a start
  logic py_pen2_q;                               // em_py == h_pen2_q, a cycle ago
  always_ff @(posedge clk) py_pen2_q <= em_py == h_pen2_q;
  always_ff @(posedge clk)
    if (start) begin
      em_py <= '0; py_end <= h_one_q; py_pen <= h_two_q;
      em_first <= first_top; em_first_next <= first_top + 32'(d.pool_sh);
      in_y_lo_q <= 18'sd0 - 18'(first_top); in_y_hi_q <= 18'(d.conv_h) - 18'(first_top);
      em_next_k <= top_next_k_q; em_next_h <= top_next_h_q;
      em_ring_end <= top_end_q; need_rows <= top_rows_q;
    end else if (em_row_end) begin
      if (!py_end) begin
        em_py <= em_py + 16'd1; py_end <= py_pen; py_pen <= py_pen2_q;
        em_first <= em_first_next; em_first_next <= em_first_next + 32'(d.pool_sh);
        in_y_lo_q <= 18'sd0 - 18'(em_first_next); in_y_hi_q <= 18'(d.conv_h) - 18'(em_first_next);
        em_next_k <= em_next_k + 32'(d.pool_sh); em_next_h <= em_next_h + 32'(d.pool_sh);
        em_ring_end <= next_end_q; need_rows <= next_rows_q;
      end else begin
        em_py <= '0; py_end <= h_one_q; py_pen <= h_two_q;
        em_first <= first_top; em_first_next <= first_top + 32'(d.pool_sh);
        in_y_lo_q <= 18'sd0 - 18'(first_top); in_y_hi_q <= 18'(d.conv_h) - 18'(first_top);
        em_next_k <= top_next_k_q; em_next_h <= top_next_h_q;
        em_ring_end <= top_end_q; need_rows <= top_rows_q;
      end
    end
  // tap values, a cycle after the ring read, in registers: a tap outside the conv output as 0 or as -128 (never
  // wins); the maximum then compares flip-flops
  logic tq_valid, tq_first, tq_last;
  logic [31:0] tq_oaddr;
  logic [G*8-1:0] tq_v;
  always_ff @(posedge clk) begin
    tq_valid <= rst_n && tap_valid;
    tq_first <= tap_first; tq_last <= tap_last; tq_oaddr <= tap_oaddr;
    for (int i = 0; i < G; i++) tq_v[8*i +: 8] <= tap_in ? ring_rdata[8*i +: 8] : pad_zero ? 8'h00 : 8'h80;
  end
  logic [G*8-1:0] best_next;
  always_comb begin
    for (int i = 0; i < G; i++) begin
      logic signed [7:0] cur, v;
      cur = tq_first ? -8'sd128 : best[8*i +: 8];
      v = tq_v[8*i +: 8];
      best_next[8*i +: 8] = v > cur ? v : cur;
    end
  end
  always_ff @(posedge clk) if (tq_valid) best <= best_next;
  // the pooled pixel in registers, so the writer's queue takes it from flip-flops
  always_ff @(posedge clk) begin
    out_valid <= rst_n && tq_valid && tq_last;
    out_q <= best_next;
    out_oaddr <= tq_oaddr;
  end
  assign done = em_done;
  assign busy = rq_valid || hd_v || tap_valid || tq_valid || out_valid;
endmodule
