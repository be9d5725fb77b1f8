// Results to memory: a result of nl channels becomes nl / V beats, or (nl < V) one beat with byte strobes at
// the channels' lanes, handed to the AXI burst writer of the activation port through one register stage.
module result_writer #(
  parameter int V = 16,
  parameter int G = 16
) (
  input  logic clk,
  input  logic rst_n,
  input  logic [7:0]  nl,
  input  logic [63:0] act_base,
  input  logic            in_valid,
  output logic            in_pop,
  input  logic [G*8-1:0]  in_q,
  input  logic [31:0]     in_oaddr,
  output logic            idle,
  output logic            beat_written,
  output logic m_awvalid, input logic m_awready, output logic [63:0] m_awaddr, output logic [7:0] m_awlen,
  output logic [2:0] m_awsize, output logic [1:0] m_awburst,
  output logic m_wvalid, input logic m_wready, output logic [8*V-1:0] m_wdata, output logic [V-1:0] m_wstrb,
  output logic m_wlast, input logic m_bvalid, output logic m_bready
);
  localparam int DW = 8 * V;
  localparam int VSH = $clog2(V);
  logic [7:0] ser_k;
  logic          w_ready;
  logic [33:0]   w_low;           // act_base's low half plus the offset, with its carry (0 to 2) into the high half
  logic [DW-1:0] w_data;
  logic [V-1:0]  w_strb;
  wire [7:0] ser_beats = nl > 8'(V) ? 8'(nl >> VSH) : 8'd1;
  // per layer, in registers: whether a result is one beat, and its beats less two, so the last beat is a flag;
  // whether it fills whole beats, and a narrow result's strobes before their shift to its lanes (no compare or
  // subtract behind the beat's data and strobes)
  logic one_beat_q, whole_q;
  logic [7:0] ser_pen_q;
  logic [V-1:0] nl_strb_q;
  always_ff @(posedge clk) begin
    one_beat_q <= ser_beats == 8'd1;
    ser_pen_q <= ser_beats - 8'd2;
    whole_q <= nl >= 8'(V);
    nl_strb_q <= V'((128'(1) << nl) - 128'(1));
  end
  // act_base + offset in 64 bits as a 34-bit sum of the low halves and the high half plus its carry (0 to 2), the
  // high half's sums per run in registers: no 64-bit carry chain behind the queue's head
  logic [31:0] base_hi1_q, base_hi2_q;
  always_ff @(posedge clk) begin
    base_hi1_q <= act_base[63:32] + 32'd1;
    base_hi2_q <= act_base[63:32] + 32'd2;
  end
  // act_base's low half plus the beat's offset in the result (ser_k * V), a register stepped beside ser_k: the
  // address is then one two-operand sum
  logic [33:0] base_k_q;
  always_comb begin
    logic [31:0] lane;
    logic [33:0] low;
    lane = in_oaddr & 32'(V - 1);
    if (whole_q) begin
      low = base_k_q + 34'(in_oaddr);
      w_data = in_q[32'(ser_k) * DW +: DW];
      w_strb = '1;
    end else begin
      low = base_k_q + 34'({in_oaddr[31:VSH], {VSH{1'b0}}});
      w_data = DW'(in_q) << (8 * lane);
      w_strb = nl_strb_q << lane;
    end
    w_low = low;
  end
  // a beat is formed into registers, then offered to the burst writer, with a skid register behind them: a beat is
  // taken while the skid is empty (a register), so what takes it, and the queue's pop, do not wait on the burst
  // writer's ready
  logic          s_valid, w_idle;
  logic [33:0]   s_low;
  logic [63:0]   s_addr;
  logic [DW-1:0] s_data;
  logic [V-1:0]  s_strb;
  logic          k_valid;                  // the skid register holds a beat
  logic [33:0]   k_low;
  logic [DW-1:0] k_data;
  logic [V-1:0]  k_strb;
  // idle from registers: the burst writer's a cycle ago, and no beat offered to it since (one with no beat stays
  // idle), so the controller's drain test does not wait on its queues' compares
  logic w_idle_q, s_was_q;
  always_ff @(posedge clk) begin
    w_idle_q <= w_idle;
    s_was_q <= s_valid;
  end
  assign idle = w_idle_q && !s_was_q && !s_valid && !k_valid;
  wire take = in_valid && !k_valid;
  wire s_move = !s_valid || w_ready;       // the offered beat's register takes one
  logic ser_last_q;                        // ser_k is the result's last beat
  // the queue ignores a pop while it is empty (sync_fifo), so its pop leaves out in_valid: the queue's head flag,
  // which fans out to its every data bit, is not behind its own pop
  assign in_pop = !k_valid && ser_last_q;
  always_ff @(posedge clk) begin
    if (!rst_n) begin
      ser_k <= '0;
      ser_last_q <= 1'b1;
      base_k_q <= 34'(act_base[31:0]);
      s_valid <= 1'b0;
      k_valid <= 1'b0;
    end else begin
      if (!take) begin
        if (ser_k == 8'd0) begin                       // between results: the layer's, as nl may change
          ser_last_q <= one_beat_q;
          base_k_q <= 34'(act_base[31:0]);
        end
      end else if (ser_last_q) begin
        ser_k <= 8'd0;
        ser_last_q <= one_beat_q;
        base_k_q <= 34'(act_base[31:0]);
      end else begin
        ser_k <= ser_k + 8'd1;
        ser_last_q <= ser_k == ser_pen_q;
        base_k_q <= base_k_q + 34'(V);
      end
      if (s_move) begin
        s_valid <= k_valid || take;
        k_valid <= 1'b0;
      end else if (take) begin
        k_valid <= 1'b1;
      end
    end
    if (s_move) begin
      if (k_valid) begin
        s_low <= k_low; s_data <= k_data; s_strb <= k_strb;
      end else begin
        s_low <= w_low; s_data <= w_data; s_strb <= w_strb;
      end
    end
    if (!k_valid) begin                    // the skid follows the beat formed while it is empty
      k_low <= w_low; k_data <= w_data; k_strb <= w_strb;
    end
  end
  // the high half picked by the low sum's carry after the register, not before it behind the 34-bit sum (the high
  // halves are the layer's, steady while its results leave)
  assign s_addr = {s_low[33] ? base_hi2_q : s_low[32] ? base_hi1_q : act_base[63:32], s_low[31:0]};

  axi_beat_writer #(.DW(DW), .MAX_BURST(16), .MAX_OUT(64), .AW(engine_pkg::ADDR_W)) writer (
    .clk, .rst_n, .in_valid(s_valid), .in_ready(w_ready), .in_addr(s_addr), .in_data(s_data), .in_strb(s_strb),
    .idle(w_idle), .beat_written, .m_awvalid, .m_awready, .m_awaddr, .m_awlen, .m_awsize, .m_awburst, .m_wvalid,
    .m_wready, .m_wdata, .m_wstrb, .m_wlast, .m_bvalid, .m_bready);
endmodule
