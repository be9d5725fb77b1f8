// The MAC array: P pixels x R output channels x V input lanes, one weight-RAM row (R x V bytes) shared by the
// P pixels; per pixel and output channel the sum of its V products. Both conv paths use it: the per-tap path
// feeds pixel 0 only, the window path all P. Two products share each multiplier (mac_pair) on DSP48E2.
// A depthwise layer on the window path puts in row e the tap of a kernel row that reaches e columns (of the
// stride phase) to the right: every row multiplies the same P input columns, and pixel p's product in row e
// belongs to output pixel p - e, which `taps` sums per lane for the outputs -P .. P-1 of the group.
// Pipelined over engine_pkg::ARRAY_LATENCY (5) cycles of en_i: operands, products and outputs in the DSP48s'
// registers (mac_pair), then the lanes summed in two registered steps: groups of four lanes, then the groups.
// DOUBLE (`--dsp-clock 2x`): one DSP at clk2x_i per four rows of a lane (mac_quad), half the DSPs, a cycle more
// (DOUBLE_LATENCY). Its DSPs take en_i in half a fabric cycle, so en_i must come straight from a register.
// XW: the input operands' bits, 8 (int8) or 10 (an integer Winograd layer's V; mac_pair.sv).

module mac_array #(
  parameter int V = 16,
  parameter int R = 16,
  parameter int P = 1,
  parameter bit PACK = 1,
  parameter bit TAPS = 1,                // build the depthwise sums (`taps`)
  parameter bit DOUBLE = 0,              // DSPs at twice the clock, four rows each (R a multiple of 4, PACK)
  parameter int XW = 8                   // input operand bits: 8 or 10
) (
  input  logic clk_i,
  input  logic clk2x_i,                  // DOUBLE: twice clk_i, rising edges aligned
  input  logic en_i,                     // the pipeline moves (DOUBLE: a register's output)
  input  logic [P*XW*V-1:0] x,           // pixel p's V input operands at [p*XW*V +: XW*V]
  input  logic [R*8*V-1:0] w,            // output channel r's V weights at [r*8V +: 8V]
  output logic [P*R*32-1:0] sums,        // pixel p, channel r at [(p*R + r)*32 +: 32]
  output logic [2*P*V*20-1:0] taps       // output o (-P .. P-1), lane v at [((o + P)*V + v)*20 +: 20]
);
  localparam int TB = 20;                // up to P + 1 products of 15 bits and a sign (P <= 8; depthwise is int8)
  localparam int DW = 8 * V;             // a row of weights' bits per output channel
  localparam int XD = XW * V;            // a pixel's operands' bits
  localparam int QW = XW + 8;            // a product's bits
  logic signed [QW-1:0] prod[P][R][V];
  if (DOUBLE) begin : g_double
    for (genvar p = 0; p < P; p++) begin : g_pix
      for (genvar r = 0; r < R; r += 4) begin : g_rows
        for (genvar v = 0; v < V; v++) begin : g_lanes
          logic [4*QW-1:0] quad;
          mac_quad #(.XW(XW)) mq (.clk_i, .clk2x_i, .en_i, .x_i(x[p*XD + XW*v +: XW]),
                       .w_i({w[(r + 3) * DW + 8*v +: 8], w[(r + 2) * DW + 8*v +: 8], w[(r + 1) * DW + 8*v +: 8],
                             w[r * DW + 8*v +: 8]}),
                       .p_o(quad));
          for (genvar k = 0; k < 4; k++) begin : g_split
            assign prod[p][r + k][v] = quad[QW*k +: QW];
          end
        end
      end
    end
  end else begin : g_single_clock
    for (genvar p = 0; p < P; p++) begin : g_pix
      for (genvar r = 0; r < R; r += 2) begin : g_rows
        for (genvar v = 0; v < V; v++) begin : g_lanes
          if (r + 1 < R) begin : g_pair
            mac_pair #(.PACK(PACK), .XW(XW)) mp (.clk_i, .en_i, .x_i(x[p*XD + XW*v +: XW]),
                                                 .w_hi_i(w[(r + 1) * DW + 8*v +: 8]), .w_lo_i(w[r * DW + 8*v +: 8]),
                                                 .p_hi_o(prod[p][r + 1][v]), .p_lo_o(prod[p][r][v]));
          end else begin : g_single
            logic signed [XW-1:0] x_q;
            logic signed [7:0] w_q;
            logic signed [QW-1:0] m_q;
            always_ff @(posedge clk_i)
              if (en_i) begin
                x_q <= x[p*XD + XW*v +: XW];
                w_q <= w[r * DW + 8*v +: 8];
                m_q <= x_q * w_q;
                prod[p][r][v] <= m_q;
              end
          end
        end
      end
    end
  end
  localparam int NG = (V + 3) / 4;       // lane groups of the first sum step
  logic signed [QW+1:0] part[P][R][NG];
  always_ff @(posedge clk_i)
    if (en_i)
      for (int p = 0; p < P; p++)
        for (int r = 0; r < R; r++) begin
          logic signed [31:0] s;
          for (int g = 0; g < NG; g++) begin
            logic signed [QW+1:0] a;
            a = '0;
            for (int v = 4 * g; v < 4 * g + 4 && v < V; v++) a = a + (QW+2)'(prod[p][r][v]);
            part[p][r][g] <= a;
          end
          s = '0;
          for (int g = 0; g < NG; g++) s = s + 32'(part[p][r][g]);
          sums[(p*R + r)*32 +: 32] <= s;
        end

  localparam int RD = R < P + 1 ? R : P + 1;      // rows a depthwise kernel row takes (window_path.py)
  if (P > 1 && TAPS) begin : g_taps
    logic [2*P*V*TB-1:0] taps_q;         // summed beside the first step, out with the sums
    always_ff @(posedge clk_i)
      if (en_i) begin
        for (int k = 0; k < 2 * P; k++)
          for (int v = 0; v < V; v++) begin
            logic signed [TB-1:0] a;
            a = '0;
            for (int p = 0; p < P; p++)
              for (int r = 0; r < RD; r++)
                if (p - r == k - P) a = a + TB'(prod[p][r][v]);
            taps_q[(k*V + v)*TB +: TB] <= a;
          end
        taps <= taps_q;
      end
  end else begin : g_no_taps
    assign taps = '0;
  end
endmodule
