// x / P and x mod P for a constant P from 2 to 8, with no arithmetic: three bits of x at a time from the top, each
// step's quotient digit and remainder a table of six bits (the remainder before, the next three bits), which
// synthesis maps to a LUT level per step. An arithmetic divide, even by a constant, became subtractor carry chains
// 14 LUTs deep (a window row's columns per bank, layer_descriptor.sv: 78.8 MHz on 6x16x16).
module constant_divider #(
  parameter int P = 3,
  parameter int W = 18,            // bits of x
  parameter int QW = W             // bits of the quotient kept (it is below 2^QW)
) (
  input  logic [W-1:0]  x_i,
  output logic [QW-1:0] q_o,
  output logic [2:0]    r_o
);
  localparam int D = (W + 2) / 3;  // digits
  logic [3*D-1:0] x;
  assign x = (3*D)'(x_i);
  always_comb begin
    logic [2:0] r;
    r = '0;
    q_o = '0;
    for (int k = D - 1; k >= 0; k--) begin
      logic [5:0] t;
      logic [2:0] qd, rn;
      t = {r, x[3*k +: 3]};
      qd = '0;
      rn = '0;
      for (int v = 0; v < 8 * P; v++)
        if (t == 6'(v)) begin
          qd = 3'(v / P);
          rn = 3'(v % P);
        end
      for (int b = 0; b < 3; b++)
        if (3 * k + b < QW) q_o[3 * k + b] = qd[b];
      r = rn;
    end
    r_o = r;
  end
endmodule
