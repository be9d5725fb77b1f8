// The MAC array: P pixels x R output channels x V input lanes, one weight-RAM row (R x V bytes) shared by the
// P pixels; per pixel and output channel the sum of its V products. Both conv paths use it: the per-tap path
// feeds pixel 0 only, the window path all P. Two products share each multiplier (mac_pair) on DSP48E2.
// A depthwise layer on the window path puts in row e the tap of a kernel row that reaches e columns (of the
// stride phase) to the right: every row multiplies the same P input columns, and pixel p's product in row e
// belongs to output pixel p - e, which `taps` sums per lane for the outputs -P .. P-1 of the group.
// Pipelined over engine_pkg::ARRAY_LATENCY (6) cycles of en_i: operands, products and lane pairs' sums in the
// DSP48s' registers (mac_cascade: two cascaded packed pairs), then the pairs summed in two registered steps: groups
// of four, then the groups. Without the packing (DSP48E1) the products come from mac_pair and the pairs are summed
// in the fabric. DOUBLE (`--dsp-clock 2x`): one DSP at clk2x_i per two lanes of two rows (mac_quad), half the
// DSPs, the lane pair summed in its P and out as late as the cascade's sums; its DSPs take en_i in half a fabric
// cycle, so en_i must come straight from a register.
// XW: the input operands' bits, 8 (int8) or 10 (an integer Winograd layer's V; mac_pair.sv).

import engine_pkg::*;

module mac_array #(
  parameter int V = 16,
  parameter int R = 16,
  parameter int P = 1,
  parameter bit PACK = 1,
  parameter bit TAPS = 1,                // build the depthwise sums (`taps`)
  parameter bit DOUBLE = 0,              // DSPs at twice the clock, two lanes of two rows each (R, V even, PACK)
  parameter int XW = 8                   // input operand bits: 8 or 10
) (
  input  logic clk_i,
  input  logic clk2x_i,                  // DOUBLE: twice clk_i, rising edges aligned
  input  logic en_i,                     // the pipeline moves (DOUBLE: a register's output)
  input  logic split_i,                  // a depthwise layer's kernel rows (`taps`): the lanes are not summed
  input  logic [P*XW*V-1:0] x,           // pixel p's V input operands at [p*XW*V +: XW*V]
  input  logic [R*8*V-1:0] w,            // output channel r's V weights at [r*8V +: 8V]
  output logic [P*R*ACC_W-1:0] sums,   // pixel p, channel r at [(p*R + r)*ACC_W +: ACC_W]
  output logic [2*P*V*20-1:0] taps       // output o (-P .. P-1), lane v at [((o + P)*V + v)*20 +: 20]
);
  localparam int TB = 20;                // up to P + 1 products of 15 bits and a sign (P <= 8; depthwise is int8)
  localparam int DW = 8 * V;             // a row of weights' bits per output channel
  localparam int XD = XW * V;            // a pixel's operands' bits
  localparam int QW = XW + 8;            // a product's bits
  localparam int IW = QW + 1;            // a lane pair's sum
  localparam int RD = R < P + 1 ? R : P + 1;      // rows a depthwise kernel row takes (window_path.py)
  localparam bit CASCADE = PACK && !DOUBLE && V % 2 == 0 && R % 2 == 0;
  // the terms of each pixel's and row's sum, four en_i edges after the operands: lane pairs' sums, and each lane's
  // product beside them for `taps`
  localparam int NI = (V + 1) / 2;
  logic signed [IW-1:0] item[P][R][NI];
  logic signed [QW-1:0] lane[P][R][V];
  if (DOUBLE) begin : g_double
    for (genvar p = 0; p < P; p++) begin : g_pix
      for (genvar r = 0; r < R; r += 2) begin : g_rows
        for (genvar k = 0; k < V / 2; k++) begin : g_lanes
          mac_quad #(.XW(XW), .LANE_PRODUCTS(TAPS && P > 1 && r < RD)) mq (.clk_i, .clk2x_i, .en_i, .split_i,
            .x0_i(x[p*XD + XW*(2*k) +: XW]), .x1_i(x[p*XD + XW*(2*k + 1) +: XW]),
            .w0_hi_i(w[(r + 1) * DW + 8*(2*k) +: 8]), .w0_lo_i(w[r * DW + 8*(2*k) +: 8]),
            .w1_hi_i(w[(r + 1) * DW + 8*(2*k + 1) +: 8]), .w1_lo_i(w[r * DW + 8*(2*k + 1) +: 8]),
            .sum_hi_o(item[p][r + 1][k]), .sum_lo_o(item[p][r][k]),
            .p0_hi_o(lane[p][r + 1][2*k]), .p0_lo_o(lane[p][r][2*k]));
          assign lane[p][r + 1][2*k + 1] = QW'(item[p][r + 1][k]);
          assign lane[p][r][2*k + 1] = QW'(item[p][r][k]);
        end
      end
    end
  end else if (CASCADE) begin : g_cascade
    for (genvar p = 0; p < P; p++) begin : g_pix
      for (genvar r = 0; r < R; r += 2) begin : g_rows
        for (genvar k = 0; k < V / 2; k++) begin : g_lanes
          mac_cascade #(.XW(XW), .LANE_PRODUCTS(TAPS && P > 1 && r < RD)) mc (.clk_i, .en_i, .split_i,
            .x0_i(x[p*XD + XW*(2*k) +: XW]), .x1_i(x[p*XD + XW*(2*k + 1) +: XW]),
            .w0_hi_i(w[(r + 1) * DW + 8*(2*k) +: 8]), .w0_lo_i(w[r * DW + 8*(2*k) +: 8]),
            .w1_hi_i(w[(r + 1) * DW + 8*(2*k + 1) +: 8]), .w1_lo_i(w[r * DW + 8*(2*k + 1) +: 8]),
            .sum_hi_o(item[p][r + 1][k]), .sum_lo_o(item[p][r][k]),
            .p0_hi_o(lane[p][r + 1][2*k]), .p0_lo_o(lane[p][r][2*k]));
          assign lane[p][r + 1][2*k + 1] = QW'(item[p][r + 1][k]);
          assign lane[p][r][2*k + 1] = QW'(item[p][r][k]);
        end
      end
    end
  end else begin : g_fabric_pairs
    // the products three edges after the operands (mac_pair), lane pairs summed in the fabric at the fourth
    logic signed [QW-1:0] prod[P][R][V];
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
    always_ff @(posedge clk_i)
      if (en_i)
        for (int p = 0; p < P; p++)
          for (int r = 0; r < R; r++) begin
            for (int k = 0; k < NI; k++)
              item[p][r][k] <= IW'(prod[p][r][2*k]) + (2*k + 1 < V ? IW'(prod[p][r][2*k + 1]) : IW'(0));
            for (int v = 0; v < V; v++) lane[p][r][v] <= prod[p][r][v];
          end
  end
  // the terms in groups of four at the fifth edge, the groups at the sixth, in as many bits as the sum needs
  localparam int NG = (NI + 3) / 4;
  localparam int SB = IW + 2 + $clog2(NG);
  logic signed [IW+1:0] part[P][R][NG];
  always_ff @(posedge clk_i)
    if (en_i)
      for (int p = 0; p < P; p++)
        for (int r = 0; r < R; r++) begin
          logic signed [SB-1:0] s;
          for (int g = 0; g < NG; g++) begin
            logic signed [IW+1:0] a;
            a = '0;
            for (int k = 4 * g; k < 4 * g + 4 && k < NI; k++) a = a + (IW+2)'(item[p][r][k]);
            part[p][r][g] <= a;
          end
          s = '0;
          for (int g = 0; g < NG; g++) s = s + SB'(part[p][r][g]);
          sums[(p*R + r)*ACC_W +: ACC_W] <= ACC_W'(s);
        end

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
                if (p - r == k - P) a = a + TB'(lane[p][r][v]);
            taps_q[(k*V + v)*TB +: TB] <= a;
          end
        taps <= taps_q;
      end
  end else begin : g_no_taps
    assign taps = '0;
  end
endmodule
