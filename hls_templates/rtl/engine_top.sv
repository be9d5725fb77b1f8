// Top of one engine compute unit: the AXI4-Lite control slave (docs/kernel-abi.md register map) and the
// core with its two AXI4 masters, m_axi_act (activations: reads and writes) and m_axi_const (program,
// weights, tables: reads), so the overlay can put them on different HP ports.
`include "engine_config.svh"

module engine_top #(
  parameter int V = `ENGINE_VEC,
  parameter int R = `ENGINE_PE_ROWS,
  parameter int MAXK = `ENGINE_MAX_KERNEL,
  parameter int MAX_W = `ENGINE_MAX_WIDTH,
  parameter int WROWS = `ENGINE_WEIGHT_ROWS,
  parameter bit PACK = `ENGINE_PACK,
  parameter int EL = `ENGINE_EPILOGUE_LANES,
  parameter int P = `ENGINE_PIXELS,
  parameter int WDEPTH = `ENGINE_WINDOW_WORDS,
  parameter bit DWW = `ENGINE_DEPTHWISE_ROWS,
  parameter bit LANE_PRODUCTS = `ENGINE_LANE_PRODUCTS,
  parameter bit RESIDUAL = `ENGINE_RESIDUAL,
  parameter bit TABLES = `ENGINE_TABLES,
  // the weight RAM in UltraRAM (1) or block RAM (0); the overlay sets it per instance
  parameter int WEIGHT_URAM = `ENGINE_WEIGHT_URAM
) (
  input  logic ap_clk,
`ifdef ENGINE_DSP_2X
  input  logic ap_clk_2x,          // the MAC array's DSPs: twice ap_clk, rising edges aligned
`endif
  input  logic ap_rst_n,
  output logic interrupt,
  input  logic s_axi_control_awvalid, output logic s_axi_control_awready, input logic [11:0] s_axi_control_awaddr,
  input  logic s_axi_control_wvalid, output logic s_axi_control_wready, input logic [31:0] s_axi_control_wdata,
  input  logic [3:0] s_axi_control_wstrb,
  output logic s_axi_control_bvalid, input logic s_axi_control_bready, output logic [1:0] s_axi_control_bresp,
  input  logic s_axi_control_arvalid, output logic s_axi_control_arready, input logic [11:0] s_axi_control_araddr,
  output logic s_axi_control_rvalid, input logic s_axi_control_rready, output logic [31:0] s_axi_control_rdata,
  output logic [1:0] s_axi_control_rresp,
  output logic m_axi_act_arvalid, input logic m_axi_act_arready, output logic [63:0] m_axi_act_araddr,
  output logic [7:0] m_axi_act_arlen, output logic [2:0] m_axi_act_arsize, output logic [1:0] m_axi_act_arburst,
  input  logic m_axi_act_rvalid, output logic m_axi_act_rready, input logic [8*V-1:0] m_axi_act_rdata,
  input  logic m_axi_act_rlast,
  output logic m_axi_act_awvalid, input logic m_axi_act_awready, output logic [63:0] m_axi_act_awaddr,
  output logic [7:0] m_axi_act_awlen, output logic [2:0] m_axi_act_awsize, output logic [1:0] m_axi_act_awburst,
  output logic m_axi_act_wvalid, input logic m_axi_act_wready, output logic [8*V-1:0] m_axi_act_wdata,
  output logic [V-1:0] m_axi_act_wstrb, output logic m_axi_act_wlast,
  input  logic m_axi_act_bvalid, output logic m_axi_act_bready,
  output logic m_axi_const_arvalid, input logic m_axi_const_arready, output logic [63:0] m_axi_const_araddr,
  output logic [7:0] m_axi_const_arlen, output logic [2:0] m_axi_const_arsize, output logic [1:0] m_axi_const_arburst,
  input  logic m_axi_const_rvalid, output logic m_axi_const_rready, input logic [8*V-1:0] m_axi_const_rdata,
  input  logic m_axi_const_rlast,
  // profiling taps (left unconnected in the overlay)
  output logic [31:0] layer_index,
  output logic [64*9-1:0] perf,
  output logic idle
);
  logic ap_start, ap_ready, ap_done, ap_idle;
  assign idle = ap_idle;
  logic [63:0] program_addr, act_base, const_base, cycles;
  logic [31:0] layer_count, status, error_layer;

  axil_control #(.NCOUNTERS(9)) control (
    .clk(ap_clk), .rst_n(ap_rst_n),
    .s_awvalid(s_axi_control_awvalid), .s_awready(s_axi_control_awready), .s_awaddr(s_axi_control_awaddr),
    .s_wvalid(s_axi_control_wvalid), .s_wready(s_axi_control_wready), .s_wdata(s_axi_control_wdata),
    .s_wstrb(s_axi_control_wstrb), .s_bvalid(s_axi_control_bvalid), .s_bready(s_axi_control_bready),
    .s_bresp(s_axi_control_bresp), .s_arvalid(s_axi_control_arvalid), .s_arready(s_axi_control_arready),
    .s_araddr(s_axi_control_araddr), .s_rvalid(s_axi_control_rvalid), .s_rready(s_axi_control_rready),
    .s_rdata(s_axi_control_rdata), .s_rresp(s_axi_control_rresp), .interrupt,
    .ap_start, .ap_ready, .ap_done, .ap_idle, .program_addr, .layer_count, .act_base, .const_base, .cycles,
    .status, .error_layer, .counters(perf));

`ifdef ENGINE_DSP_2X
  localparam bit DOUBLE = 1'b1;
  wire clk2x = ap_clk_2x;
`else
  localparam bit DOUBLE = 1'b0;
  wire clk2x = 1'b0;
`endif
`ifdef ENGINE_WINOGRAD
  localparam bit WINO = 1'b1;
`else
  localparam bit WINO = 1'b0;
`endif
  engine_core #(.V(V), .R(R), .MAXK(MAXK), .MAX_W(MAX_W), .WROWS(WROWS), .PACK(PACK), .EL(EL), .P(P), .WDEPTH(WDEPTH), .DWW(DWW),
                .DOUBLE(DOUBLE), .WINO(WINO), .LANE_PRODUCTS(LANE_PRODUCTS), .RESIDUAL(RESIDUAL),
                .TABLES(TABLES),
                .WEIGHT_URAM(WEIGHT_URAM != 0)) core (
    .clk(ap_clk), .clk2x, .rst_n(ap_rst_n), .ap_start, .ap_ready, .ap_done, .ap_idle, .program_addr, .layer_count,
    .act_base, .const_base, .cycles, .status, .error_layer, .counters(perf), .layer_index,
    .m_act_arvalid(m_axi_act_arvalid), .m_act_arready(m_axi_act_arready), .m_act_araddr(m_axi_act_araddr),
    .m_act_arlen(m_axi_act_arlen), .m_act_arsize(m_axi_act_arsize), .m_act_arburst(m_axi_act_arburst),
    .m_act_rvalid(m_axi_act_rvalid), .m_act_rready(m_axi_act_rready), .m_act_rdata(m_axi_act_rdata),
    .m_act_rlast(m_axi_act_rlast), .m_act_awvalid(m_axi_act_awvalid), .m_act_awready(m_axi_act_awready),
    .m_act_awaddr(m_axi_act_awaddr), .m_act_awlen(m_axi_act_awlen), .m_act_awsize(m_axi_act_awsize),
    .m_act_awburst(m_axi_act_awburst), .m_act_wvalid(m_axi_act_wvalid), .m_act_wready(m_axi_act_wready),
    .m_act_wdata(m_axi_act_wdata), .m_act_wstrb(m_axi_act_wstrb), .m_act_wlast(m_axi_act_wlast),
    .m_act_bvalid(m_axi_act_bvalid), .m_act_bready(m_axi_act_bready),
    .m_const_arvalid(m_axi_const_arvalid), .m_const_arready(m_axi_const_arready),
    .m_const_araddr(m_axi_const_araddr), .m_const_arlen(m_axi_const_arlen), .m_const_arsize(m_axi_const_arsize),
    .m_const_arburst(m_axi_const_arburst), .m_const_rvalid(m_axi_const_rvalid),
    .m_const_rready(m_axi_const_rready), .m_const_rdata(m_axi_const_rdata), .m_const_rlast(m_axi_const_rlast));
endmodule
