// One epilogue lane's copy of a 256-entry activation table, as distributed RAM (LUTRAM): 256 / B words of B entries,
// written a constant beat (one word) per cycle as the table arrives, read combinationally: the word, then its entry.
// Every lane keeps its own copy. One memory B entries wide, not B banks of one entry: its write address is shared,
// so yosys packs seven of its 2-bit columns into each RAM32M16 (10 a table at B = 16, against 16 for the banks).
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
  logic [8*B-1:0] mem [D];
  logic [8*B-1:0] word;

  always_ff @(posedge clk)
    if (we) mem[waddr] <= wdata;
  assign word = mem[raddr[7:LB]];
  assign rdata = word[8*raddr[LB-1:0] +: 8];
endmodule
