// One epilogue lane's copy of a 256-entry activation table, as distributed RAM (LUTRAM): B banks of 256 / B
// entries, written a constant beat (B entries) per cycle as the table arrives, read combinationally. Every lane
// keeps its own copy: B small RAMs and a B:1 pick cost about a sixth of the 256:1 multiplexer a lane needs to
// read a table held in registers.
module lut_ram #(
  parameter int B = 16              // entries per beat, a power of two dividing 256
) (
  input  logic clk,
  input  logic we,
  input  logic [$clog2(256 / B)-1:0] waddr,      // the beat of the table
  input  logic [8*B-1:0] wdata,
  input  logic [7:0] raddr,
  output logic [7:0] rdata
);
  localparam int D = 256 / B;
  localparam int LB = $clog2(B);
  logic [7:0] word [B];

  for (genvar b = 0; b < B; b++) begin : banks
    logic [7:0] mem [D];
    always_ff @(posedge clk)
      if (we) mem[waddr] <= wdata[8*b +: 8];
    assign word[b] = mem[raddr[7:LB]];
  end
  assign rdata = word[raddr[LB-1:0]];
endmodule
