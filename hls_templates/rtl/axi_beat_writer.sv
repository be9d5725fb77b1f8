// AXI4 write master: beats (address, data, byte strobes) in, INCR bursts out. Consecutive beats to
// consecutive addresses are merged into one burst of up to MAX_BURST beats (never across 4 KiB); a burst
// is sent when it is full, when the next beat does not continue it, or when no beat arrives for a cycle.
// Up to MAX_OUT bursts wait for their write response.
module axi_beat_writer #(
  parameter int DW = 128,
  parameter int MAX_BURST = 16,
  parameter int MAX_OUT = 16
) (
  input  logic clk,
  input  logic rst_n,
  input  logic            in_valid,
  output logic            in_ready,
  input  logic [63:0]     in_addr,        // beat aligned
  input  logic [DW-1:0]   in_data,
  input  logic [DW/8-1:0] in_strb,
  output logic            idle,
  output logic [63:0]     bytes_written,
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

  // the burst being gathered
  logic [DW-1:0]   g_data[MAX_BURST];
  logic [B-1:0]    g_strb[MAX_BURST];
  logic [63:0]     g_addr;
  logic [BW-1:0]   g_count;
  // the burst being sent
  logic [DW-1:0]   s_data[MAX_BURST];
  logic [B-1:0]    s_strb[MAX_BURST];
  logic [BW-1:0]   s_count, s_sent;
  logic            s_busy, s_aw_done;
  logic [$clog2(MAX_OUT+1)-1:0] outstanding;

  wire [63:0] g_next = g_addr + (64'(g_count) << BEAT_SHIFT);
  wire continues = g_count != 0 && in_addr == g_next && g_count != BW'(MAX_BURST) && g_next[11:0] != 12'd0;
  // hand the gathered burst to the sender when the sender is free and the burst cannot grow now
  wire flush = g_count != 0 && !s_busy && !(in_valid && continues);
  assign in_ready = g_count == 0 || continues || flush;

  assign m_awvalid = s_busy && !s_aw_done && outstanding < MAX_OUT;
  assign m_awlen = 8'(s_count - 1'b1);
  assign m_awsize = 3'(BEAT_SHIFT);
  assign m_awburst = 2'b01;
  assign m_wvalid = s_busy && s_aw_done && s_sent != s_count;   // data after its address
  assign m_wdata = s_data[s_sent[$clog2(MAX_BURST)-1:0]];
  assign m_wstrb = s_strb[s_sent[$clog2(MAX_BURST)-1:0]];
  assign m_wlast = s_sent == s_count - 1'b1;
  assign m_bready = 1'b1;
  assign idle = g_count == 0 && !s_busy && outstanding == 0;

  logic [63:0] s_addr;
  assign m_awaddr = s_addr;

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      g_count <= '0; s_busy <= 1'b0; s_aw_done <= 1'b0; s_sent <= '0; s_count <= '0; outstanding <= '0;
      bytes_written <= '0; g_addr <= '0; s_addr <= '0;
    end else begin
      if (flush) begin
        for (int i = 0; i < MAX_BURST; i++) begin
          s_data[i] <= g_data[i];
          s_strb[i] <= g_strb[i];
        end
        s_addr <= g_addr;
        s_count <= g_count;
        s_sent <= '0;
        s_aw_done <= 1'b0;
        s_busy <= 1'b1;
      end
      if (in_valid && in_ready) begin
        if (continues) begin
          g_data[g_count[$clog2(MAX_BURST)-1:0]] <= in_data;
          g_strb[g_count[$clog2(MAX_BURST)-1:0]] <= in_strb;
          g_count <= g_count + 1'b1;
        end else begin
          g_data[0] <= in_data;
          g_strb[0] <= in_strb;
          g_addr <= in_addr;
          g_count <= BW'(1);
        end
      end else if (flush) begin
        g_count <= '0;
      end
      if (m_awvalid && m_awready) s_aw_done <= 1'b1;
      if (m_wvalid && m_wready) begin
        s_sent <= s_sent + 1'b1;
        bytes_written <= bytes_written + 64'(B);
      end
      if (s_busy && s_aw_done && s_sent == s_count) s_busy <= 1'b0;
      outstanding <= outstanding + ((m_awvalid && m_awready) ? 1'b1 : 1'b0) - (m_bvalid ? 1'b1 : 1'b0);
    end
  end
endmodule
