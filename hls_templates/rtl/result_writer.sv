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
  output logic [63:0]     bytes_written,
  output logic m_awvalid, input logic m_awready, output logic [63:0] m_awaddr, output logic [7:0] m_awlen,
  output logic [2:0] m_awsize, output logic [1:0] m_awburst,
  output logic m_wvalid, input logic m_wready, output logic [8*V-1:0] m_wdata, output logic [V-1:0] m_wstrb,
  output logic m_wlast, input logic m_bvalid, output logic m_bready
);
  localparam int DW = 8 * V;
  localparam int VSH = $clog2(V);
  logic [7:0] ser_k;
  logic          w_ready;
  logic [63:0]   w_addr;
  logic [DW-1:0] w_data;
  logic [V-1:0]  w_strb;
  wire [7:0] ser_beats = nl > 8'(V) ? 8'(nl >> VSH) : 8'd1;
  always_comb begin
    logic [31:0] lane;
    lane = in_oaddr & 32'(V - 1);
    if (nl >= 8'(V)) begin
      w_addr = act_base + 64'(in_oaddr) + 64'(ser_k) * 64'(V);
      w_data = in_q[32'(ser_k) * DW +: DW];
      w_strb = '1;
    end else begin
      w_addr = act_base + (64'(in_oaddr) & ~64'(V - 1));
      w_data = DW'(in_q) << (8 * lane);
      w_strb = V'(((128'(1) << nl) - 128'(1)) << lane);
    end
  end
  // a beat is formed into registers, then offered to the burst writer
  logic          s_valid, w_idle;
  logic [63:0]   s_addr;
  logic [DW-1:0] s_data;
  logic [V-1:0]  s_strb;
  assign idle = w_idle && !s_valid;
  wire take = in_valid && (!s_valid || w_ready);
  assign in_pop = take && ser_k == ser_beats - 8'd1;
  always_ff @(posedge clk) begin
    if (!rst_n) begin
      ser_k <= '0;
      s_valid <= 1'b0;
    end else begin
      if (take) begin
        ser_k <= (ser_k == ser_beats - 8'd1) ? 8'd0 : ser_k + 8'd1;
        s_valid <= 1'b1;
      end else if (w_ready) begin
        s_valid <= 1'b0;
      end
    end
    if (take) begin
      s_addr <= w_addr; s_data <= w_data; s_strb <= w_strb;
    end
  end

  axi_beat_writer #(.DW(DW), .MAX_BURST(16), .MAX_OUT(64)) writer (
    .clk, .rst_n, .in_valid(s_valid), .in_ready(w_ready), .in_addr(s_addr), .in_data(s_data), .in_strb(s_strb),
    .idle(w_idle), .bytes_written, .m_awvalid, .m_awready, .m_awaddr, .m_awlen, .m_awsize, .m_awburst, .m_wvalid,
    .m_wready, .m_wdata, .m_wstrb, .m_wlast, .m_bvalid, .m_bready);
endmodule
