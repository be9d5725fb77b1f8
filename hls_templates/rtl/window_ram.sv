// The input window: P banks of V-byte words holding a few input rows of a layer (docs/kernel-abi.md,
// "Window path"). Column j of a row sits in bank j mod P, so the P output pixels a step computes read P
// different banks, each at its own word; one write port fills it from the activation stream.
module window_ram #(
  parameter int V = 16,
  parameter int P = 4,
  parameter int WDEPTH = 2048      // words per bank
) (
  input  logic clk,
  input  logic we,
  input  logic [(P > 1 ? $clog2(P) : 1)-1:0] wbank,
  input  logic [$clog2(WDEPTH)-1:0] waddr,
  input  logic [8*V-1:0] wdata,
  input  logic re,                 // hold the outputs while the array stalls
  input  logic [P*$clog2(WDEPTH)-1:0] raddr,
  output logic [P*8*V-1:0] rdata
);
  localparam int WA = $clog2(WDEPTH);
  for (genvar b = 0; b < P; b++) begin : g_bank
    logic [8*V-1:0] bank[WDEPTH];
    always_ff @(posedge clk) begin
      if (we && (P == 1 || wbank == b)) bank[waddr] <= wdata;
      if (re) rdata[b*8*V +: 8*V] <= bank[raddr[b*WA +: WA]];
    end
  end
endmodule
