// AXI4 read master fed by "runs": a run is `beats` consecutive beats from `addr`, or (pad) `beats` beats
// of a fill byte that cost no memory access. Runs are cut into INCR bursts of at most 256 beats that never
// cross a 4 KiB boundary; up to MAX_OUT bursts are in flight. Beats come out in run order, each with its
// run's tag, its index in the run and a last flag, so the consumer needs no loop nest of its own.
module axi_run_reader #(
  parameter int DW = 128,          // data bits (one beat)
  parameter int TAGW = 8,
  parameter int QDEPTH = 64,       // runs in flight, power of two
  parameter int MAX_OUT = 16       // outstanding bursts
) (
  input  logic clk,
  input  logic rst_n,
  // runs
  input  logic            run_valid,
  output logic            run_ready,
  input  logic [63:0]     run_addr,      // beat aligned
  input  logic [23:0]     run_beats,     // >= 1
  input  logic            run_pad,
  input  logic [7:0]      run_fill,
  input  logic [TAGW-1:0] run_tag,
  // beats
  output logic            beat_valid,
  input  logic            beat_ready,
  output logic [DW-1:0]   beat_data,
  output logic [TAGW-1:0] beat_tag,
  output logic [23:0]     beat_idx,
  output logic            beat_last,
  output logic            idle,
  output logic [63:0]     bytes_read,
  // AXI4 read channels
  output logic            m_arvalid,
  input  logic            m_arready,
  output logic [63:0]     m_araddr,
  output logic [7:0]      m_arlen,
  output logic [2:0]      m_arsize,
  output logic [1:0]      m_arburst,
  input  logic            m_rvalid,
  output logic            m_rready,
  input  logic [DW-1:0]   m_rdata,
  input  logic            m_rlast
);
  localparam int B = DW / 8;
  localparam int QW = $clog2(QDEPTH);
  localparam int BEAT_SHIFT = $clog2(B);

  logic [63:0]     q_addr [QDEPTH];
  logic [23:0]     q_beats[QDEPTH];
  logic            q_pad  [QDEPTH];
  logic [7:0]      q_fill [QDEPTH];
  logic [TAGW-1:0] q_tag  [QDEPTH];
  logic [QW:0] wr, iss, rd;          // one extra bit tells full from empty
  logic [23:0] iss_off, rd_off;      // beats of the run already requested / delivered
  localparam int OW = $clog2(MAX_OUT + 1);
  logic [OW-1:0] outstanding;

  assign run_ready = (wr - rd) != QDEPTH[QW:0];
  assign idle = (wr == rd) && (outstanding == 0);

  // ---- address side -------------------------------------------------------------------------------
  wire [QW-1:0] ii = iss[QW-1:0];
  wire issue_pending = iss != wr;
  wire [63:0] burst_addr = q_addr[ii] + (64'(iss_off) << BEAT_SHIFT);
  wire [23:0] remaining = q_beats[ii] - iss_off;
  wire [12:0] to_boundary = 13'(13'd4096 - {1'b0, burst_addr[11:0]}) >> BEAT_SHIFT;   // beats before 4 KiB
  logic [23:0] burst_beats;
  always_comb begin
    burst_beats = remaining;
    if (burst_beats > 24'd256) burst_beats = 24'd256;
    if (burst_beats > 24'(to_boundary)) burst_beats = 24'(to_boundary);
  end
  assign m_arvalid = issue_pending && !q_pad[ii] && (outstanding < OW'(MAX_OUT));
  assign m_araddr = burst_addr;
  assign m_arlen = 8'(burst_beats - 24'd1);
  assign m_arsize = 3'(BEAT_SHIFT);
  assign m_arburst = 2'b01;

  // ---- data side ----------------------------------------------------------------------------------
  wire [QW-1:0] ri = rd[QW-1:0];
  wire head = rd != wr;
  wire head_pad = head && q_pad[ri];
  assign beat_valid = head && (head_pad || m_rvalid);
  assign m_rready = head && !head_pad && beat_ready;
  assign beat_data = head_pad ? {B{q_fill[ri]}} : m_rdata;
  assign beat_tag = q_tag[ri];
  assign beat_idx = rd_off;
  assign beat_last = rd_off == q_beats[ri] - 24'd1;

  wire beat_fire = beat_valid && beat_ready;
  wire ar_fire = m_arvalid && m_arready;
  wire rlast_fire = m_rvalid && m_rready && m_rlast;

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      wr <= '0; iss <= '0; rd <= '0; iss_off <= '0; rd_off <= '0; outstanding <= '0; bytes_read <= '0;
    end else begin
      if (run_valid && run_ready) begin
        q_addr[wr[QW-1:0]] <= run_addr;
        q_beats[wr[QW-1:0]] <= run_beats;
        q_pad[wr[QW-1:0]] <= run_pad;
        q_fill[wr[QW-1:0]] <= run_fill;
        q_tag[wr[QW-1:0]] <= run_tag;
        wr <= wr + 1'b1;
      end
      if (issue_pending && q_pad[ii]) begin
        iss <= iss + 1'b1;
      end else if (ar_fire) begin
        if (iss_off + burst_beats == q_beats[ii]) begin
          iss <= iss + 1'b1;
          iss_off <= '0;
        end else begin
          iss_off <= iss_off + burst_beats;
        end
      end
      outstanding <= outstanding + OW'(ar_fire) - OW'(rlast_fire);
      if (m_rvalid && m_rready) bytes_read <= bytes_read + 64'(B);
      if (beat_fire) begin
        if (beat_last) begin
          rd <= rd + 1'b1;
          rd_off <= '0;
        end else begin
          rd_off <= rd_off + 24'd1;
        end
      end
    end
  end
endmodule
