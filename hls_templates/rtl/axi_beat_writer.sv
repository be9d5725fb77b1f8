// AXI4 write master: beats (address, data, byte strobes) in, INCR bursts out. Beats go straight into a data
// queue; consecutive beats to consecutive addresses share one burst of up to MAX_BURST beats (never across
// 4 KiB), closed when the next beat does not continue it, when it is full, or after IDLE_CLOSE cycles
// without a beat (a layer that writes every few cycles still gets long bursts).
// Closed bursts queue for the address channel, so gathering, addresses and data all overlap; a burst's data
// follows its address. Up to MAX_OUT bursts wait for their write response.
module axi_beat_writer #(
  parameter int DW = 128,
  parameter int MAX_BURST = 16,
  parameter int MAX_OUT = 16,
  parameter int WDEPTH = 64,       // data beats queued, power of two
  parameter int ADEPTH = 16,       // closed bursts queued, power of two
  parameter int IDLE_CLOSE = 8,
  parameter int AW = 40            // address bits computed with (engine_pkg::ADDR_W); m_awaddr's above are 0
) (
  input  logic clk,
  input  logic rst_n,
  input  logic            in_valid,
  output logic            in_ready,
  input  logic [63:0]     in_addr,        // beat aligned
  input  logic [DW-1:0]   in_data,
  input  logic [DW/8-1:0] in_strb,
  output logic            idle,
  output logic            beat_written,   // a beat went to memory last cycle (the byte counters)
  // AXI4 write channels
  output logic            m_awvalid,
  input  logic            m_awready,
  output logic [63:0]     m_awaddr,
  output logic [7:0]      m_awlen,
  output logic [2:0]      m_awsize,
  output logic [1:0]      m_awburst,
  output logic            m_wvalid,
  input  logic            m_wready,
  output logic [DW-1:0]   m_wdata,
  output logic [DW/8-1:0] m_wstrb,
  output logic            m_wlast,
  input  logic            m_bvalid,
  output logic            m_bready
);
  localparam int B = DW / 8;
  localparam int BEAT_SHIFT = $clog2(B);
  localparam int BW = $clog2(MAX_BURST + 1);

  // ---- the beat's address, a cycle before the gather takes it: whether it follows the beat before it (b_seq) is
  // a register, so what closes a burst does not wait on a 64-bit compare
  logic          b_valid;
  logic [AW-1:0] b_addr;
  logic          b_seq;
  logic [AW-1:0] b_next;           // the address a beat following the last one has
  logic          b_page_end;       // ... starts a 4 KiB page

  // ---- the burst being gathered --------------------------------------------------------------------
  logic          g_open;
  logic [AW-1:0] g_addr;
  logic [BW-1:0] g_count;
  logic [BW-1:0] g_len1;           // g_count - 1: what the queues keep (AXI's AWLEN), so no subtract follows them
  logic          g_single;         // g_count is 1: the queues keep it too, the W channel's last for a first beat
  logic [$clog2(IDLE_CLOSE+1)-1:0] g_idle;
  // what closes a burst, from registers set with the counts: the burst is open, not full and not at a page's end
  // (g_can); no beat has come for IDLE_CLOSE cycles (g_idle_end)
  logic          g_can, g_idle_end;
  wire continues = g_can && b_seq;

  // ---- queues: data beats, closed bursts (address, length less one), the same lengths of bursts whose address
  // went out
  logic wq_push, wq_pop, wq_valid, wq_valid_copy;   // the copy for the lengths' pop alone
  logic [$clog2(WDEPTH):0] wq_count;
  logic [DW+B-1:0] wq_dout;
  // the data queue and the lengths' queue hold their heads in registers: the W channel's valid, last and pops
  // start from flip-flops
  sync_fifo #(.W(DW + B), .DEPTH(WDEPTH), .OUT_REG(1'b1)) wq (
    .clk, .rst_n, .push(wq_push), .din({in_strb, in_data}), .pop(wq_pop), .pop_ctl(wq_pop), .dout(wq_dout),
    .valid(wq_valid), .valid_copy(wq_valid_copy), .count(wq_count));
  logic aq_push, aq_valid;
  logic [$clog2(ADEPTH):0] aq_count;
  logic [AW+BW:0] aq_din, aq_dout;
  sync_fifo #(.W(AW + 1 + BW), .DEPTH(ADEPTH)) aq (.clk, .rst_n, .push(aq_push), .din(aq_din),
                                               .pop(m_awvalid && m_awready), .pop_ctl(m_awvalid && m_awready),
                                               .dout(aq_dout), .valid(aq_valid), .valid_copy(),
                                               .count(aq_count));
  logic lq_valid, lq_pop;
  logic [BW:0] lq_dout;
  logic [$clog2(ADEPTH):0] lq_count;
  sync_fifo #(.W(BW + 1), .DEPTH(ADEPTH), .OUT_REG(1'b1)) lq (
    .clk, .rst_n, .push(m_awvalid && m_awready), .din(aq_dout[AW+BW:AW]), .pop(lq_pop), .pop_ctl(lq_pop),
    .dout(lq_dout), .valid(lq_valid), .valid_copy(), .count(lq_count));

  // ready from registers: a queue's count a cycle ago with one entry more to spare (a cycle pushes one at most), so
  // what pops the producer's queue does not wait for this cycle's counts; the bursts' queue one more, for the beat
  // between the input and the gather
  logic ready_q;
  always_ff @(posedge clk)
    ready_q <= rst_n && wq_count < WDEPTH[$clog2(WDEPTH):0] - 2 && aq_count < ADEPTH[$clog2(ADEPTH):0] - 3;
  assign in_ready = ready_q;
  wire fire = in_valid && in_ready;
  assign wq_push = fire;
  // close the open burst when a beat does not continue it, or when no beat has come for a while
  assign aq_push = g_open && (b_valid ? !continues : g_idle_end);
  assign aq_din = {g_single, g_len1, g_addr};

  localparam int OW = $clog2(MAX_OUT + 1);
  logic [OW-1:0] outstanding;
  // room for a burst (outstanding, and a place to track its data): a register, tested a cycle early against one
  // less, as at most one burst goes out a cycle; room only grows between two of them, so a valid stays up
  logic aw_room_q;
  always_ff @(posedge clk)
    aw_room_q <= rst_n && outstanding < OW'(MAX_OUT - 1) && lq_count < ADEPTH[$clog2(ADEPTH):0] - 1'b1;
  assign m_awvalid = aq_valid && aw_room_q;
  assign m_awaddr = 64'(aq_dout[AW-1:0]);
  assign m_awlen = 8'(aq_dout[AW+BW-1:AW]);
  assign m_awsize = 3'(BEAT_SHIFT);
  assign m_awburst = 2'b01;

  // ---- data channel: the beats of bursts whose address is out --------------------------------------
  // a burst's first beat takes its length off the lengths' queue (kept in w_len_q for the rest), so that queue's
  // pop waits on no entry of it; within a burst, whether the next beat is its last is a register (w_last_q, set as a
  // beat goes); its first beat's is the head's single flag. The channel is driven from registers: the beat offered
  // and a skid register behind it, so a beat leaves the queues on a register (the skid is empty), not on the
  // interconnect's ready, and the queues' pops start a LUT from their heads
  logic [BW-1:0] w_sent, w_len_q;
  logic w_mid, w_last_q;
  logic wo_v_q, ws_v_q;                          // the offered beat and the skid register hold one
  // the skid register is free: !ws_v_q kept as a register of its own, which the lengths' pop reads, so synthesis
  // does not build that pop on the data queue's (whose enables fan out to every data bit)
  logic ws_free_q;
  logic [DW+B:0] wo_q, ws_q;                     // {last, strobes, data}
  wire w_last_now = w_mid ? w_last_q : lq_dout[BW];
  wire w_take = (w_mid || lq_valid) && wq_valid && !ws_v_q;
  wire wo_move = !wo_v_q || m_wready;
  always_ff @(posedge clk) begin
    if (!rst_n) begin
      wo_v_q <= 1'b0; ws_v_q <= 1'b0; ws_free_q <= 1'b1;
    end else if (wo_move) begin
      wo_v_q <= ws_v_q || w_take; ws_v_q <= 1'b0; ws_free_q <= 1'b1;
    end else if (w_take) begin
      ws_v_q <= 1'b1; ws_free_q <= 1'b0;
    end
    if (wo_move) wo_q <= ws_v_q ? ws_q : {w_last_now, wq_dout};
    else if (w_take) ws_q <= {w_last_now, wq_dout};
  end
  assign m_wvalid = wo_v_q;
  assign {m_wlast, m_wstrb, m_wdata} = wo_q;
  assign wq_pop = (w_mid || lq_valid) && !ws_v_q; // w_take but for wq_valid: the queue ignores a pop while empty
  assign lq_pop = wq_valid_copy && ws_free_q && !w_mid;        // a first beat's, but for lq_valid likewise
  assign m_bready = 1'b1;
  assign idle = !b_valid && !g_open && !aq_valid && !lq_valid && !w_mid && !wq_valid && !wo_v_q && !ws_v_q
                && outstanding == 0;

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      b_valid <= 1'b0; b_next <= '0;
      g_open <= 1'b0; g_count <= '0; g_len1 <= '0; g_single <= 1'b0; g_idle <= '0; g_addr <= '0;
      g_can <= 1'b0; g_idle_end <= 1'b0;
      w_sent <= '0; w_mid <= 1'b0; w_last_q <= 1'b0; outstanding <= '0; beat_written <= 1'b0;
    end else begin
      b_valid <= fire;
      if (fire) begin
        b_addr <= AW'(in_addr);
        b_seq <= AW'(in_addr) == b_next;
        b_next <= AW'(in_addr) + AW'(B);
        b_page_end <= (in_addr[11:0] + 12'(B)) == 12'd0;
      end
      if (b_valid) begin
        g_idle <= '0;
        g_idle_end <= IDLE_CLOSE == 0;
        if (continues) begin
          g_count <= g_count + 1'b1;
          g_len1 <= g_count;
          g_single <= 1'b0;
          g_can <= g_count != BW'(MAX_BURST - 1) && !b_page_end;
        end else begin
          g_can <= MAX_BURST != 1 && !b_page_end;
          g_open <= 1'b1;
          g_addr <= b_addr;
          g_count <= BW'(1);
          g_len1 <= '0;
          g_single <= 1'b1;
        end
      end else if (aq_push) begin
        g_open <= 1'b0;
        g_can <= 1'b0;
      end else if (g_open) begin
        g_idle <= g_idle + 1'b1;
        g_idle_end <= g_idle == IDLE_CLOSE[$clog2(IDLE_CLOSE+1)-1:0] - 1'b1;
      end
      if (w_take) begin
        w_sent <= w_last_now ? '0 : w_sent + 1'b1;
        w_mid <= !w_last_now;
        w_last_q <= w_sent + 1'b1 == (w_mid ? w_len_q : lq_dout[BW-1:0]);
        if (!w_mid) w_len_q <= lq_dout[BW-1:0];
      end
      beat_written <= w_take;
      outstanding <= outstanding + OW'(m_awvalid && m_awready) - OW'(m_bvalid);
    end
  end
endmodule
