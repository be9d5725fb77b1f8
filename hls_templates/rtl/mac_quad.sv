// Two lanes' packed MAC pairs on one DSP48E2 at twice the fabric clock (`--dsp-clock 2x`, the DPU's double-pumped
// DSPs): mac_cascade.sv's four products and two sums per fabric cycle from one DSP instead of two. In the first half
// of a fabric cycle lane v's weights of rows r + 1, r go in (the high one on the A port, the low one on D), in the
// second lane v + 1's; the pre-adder packs them (mac_pair.sv's shared-operand packing, hi * 2^18 + lo, with no
// subtract in the fabric) and the multiplier takes x0, then x1.
// The post-adder sums the two halves' packed products in P (the first with C's 2^17, which turns the low sum's sign
// as in mac_cascade), so the fabric takes one packed sum per fabric cycle: the array's lane tree starts from half as
// many terms, as at 1x. `split_i` (a depthwise layer on the window path) makes the second half add C instead of P:
// the sums are then lane v + 1's products alone; it must hold while a step is in the array.
//
// Every DSP register is used (A, D, pre-adder, B twice, M, P), all clocked by clk2x_i with en_i as clock enable, so
// a stalled fabric cycle freezes the fast pipeline as it freezes the fabric one. The fabric side registers the
// operands (1x); lane v's or lane v + 1's are picked for the A, D and B ports by the half (one LUT level in half a
// fabric cycle). The sums
// leave P at a fabric edge and the fabric takes them; lane v's own products (LANE_PRODUCTS, for the depthwise
// `taps`) leave P half a cycle earlier and a fast register catches them. Every crossing is register to register in
// half a fabric cycle. Sums and products come out four enabled fabric cycles after their operands go in, as
// mac_cascade's do.
//
// The fast side knows which half of the fabric cycle it is in from a fabric toggle and its copy one fast cycle
// late (they differ in the first half), so no reset or start signal aligns it.
module mac_quad #(
  parameter int XW = 8,                    // the shared operands' bits: 8 or 10 (mac_pair.sv)
  parameter bit LANE_PRODUCTS = 1'b1       // build p0_*_o (the rows the depthwise `taps` read; else 0)
) (
  input  logic                  clk_i,     // fabric clock
  input  logic                  clk2x_i,   // twice clk_i, rising edges aligned with clk_i's
  input  logic                  en_i,      // the pipeline moves this fabric cycle (held for the whole cycle)
  input  logic                  split_i,
  input  logic signed [XW-1:0]  x0_i,      // lane v
  input  logic signed [XW-1:0]  x1_i,      // lane v + 1
  input  logic signed [7:0]     w0_hi_i,   // lane v's weights of rows r + 1, r
  input  logic signed [7:0]     w0_lo_i,
  input  logic signed [7:0]     w1_hi_i,   // lane v + 1's
  input  logic signed [7:0]     w1_lo_i,
  output logic signed [XW+8:0]  sum_hi_o,  // row r + 1: lane v's product plus lane v + 1's (split_i: the latter)
  output logic signed [XW+8:0]  sum_lo_o,  // row r
  output logic signed [XW+7:0]  p0_hi_o,   // lane v's products of rows r + 1, r
  output logic signed [XW+7:0]  p0_lo_o
);
  localparam int QW = XW + 8;
  localparam logic signed [47:0] HALF = 48'sd131072;   // 2^17: the low field's sign (mac_pair.sv)

  // fabric side: the operands of the cycle, held for the fast pipeline's two halves (the weights as bytes)
  logic signed [7:0] w0_hi_q, w0_lo_q, w1_hi_q, w1_lo_q;
  logic signed [XW-1:0] x0_q, x1_q;
  always_ff @(posedge clk_i)
    if (en_i) begin
      w0_hi_q <= w0_hi_i;
      w0_lo_q <= w0_lo_i;
      w1_hi_q <= w1_hi_i;
      w1_lo_q <= w1_lo_i;
      x0_q <= x0_i;
      x1_q <= x1_i;
    end

  // which half: tog_q flips every fabric cycle, tog2_q is its copy a fast cycle late
  logic tog_q, tog2_q, first_half_q;
  always_ff @(posedge clk_i) tog_q <= !tog_q;
  always_ff @(posedge clk2x_i) begin
    tog2_q <= tog_q;
    first_half_q <= tog_q == tog2_q;     // the coming fast cycle is a fabric cycle's first half
  end
  // B1 takes x0 at the middle of the fabric cycle and x1 at its end, A and D the same lane's high and low weights
  // (lane v's, then lane v + 1's); the pre-adder register sums them (hi * 2^18 + lo, the packed pair) a fast cycle
  // later, as B2 takes B1; P adds C to the first product and P (or, split, C) to the second
  wire signed [XW-1:0] x_pick = first_half_q ? x0_q : x1_q;
  wire signed [7:0] hi_pick = first_half_q ? w0_hi_q : w1_hi_q;
  wire signed [7:0] lo_pick = first_half_q ? w0_lo_q : w1_lo_q;
  wire signed [26:0] a_hi = {1'(hi_pick[7]), hi_pick, 18'd0};
  wire signed [26:0] d_lo = 27'(lo_pick);
  wire second = first_half_q;            // the product P takes at the coming edge is the second half's
  logic [47:0] p;                        // the DSP's P: the packed sum at a fabric edge, lane v's products before

`ifdef SYNTHESIS
  localparam bit INSTANCE = 1'b1;
`else
  localparam bit INSTANCE = 1'b0;
`endif
  if (INSTANCE) begin : g_dsp48e2
`ifdef SYNTHESIS
    DSP48E2 #(
      .AREG(1), .ACASCREG(1), .DREG(1), .ADREG(1), .BREG(2), .BCASCREG(2), .MREG(1), .PREG(1),
      .CREG(0), .INMODEREG(0), .OPMODEREG(0), .ALUMODEREG(0), .CARRYINREG(0), .CARRYINSELREG(0),
      .AMULTSEL("AD"), .BMULTSEL("B"), .PREADDINSEL("A"), .A_INPUT("DIRECT"), .B_INPUT("DIRECT"),
      .USE_MULT("MULTIPLY"), .USE_SIMD("ONE48"), .USE_PATTERN_DETECT("NO_PATDET")
    ) dsp (
      .CLK(clk2x_i),
      .A(30'(a_hi)), .B(18'(x_pick)), .C(HALF), .D(d_lo),
      .ACIN(30'd0), .BCIN(18'd0), .PCIN(48'd0), .CARRYCASCIN(1'b0), .MULTSIGNIN(1'b0),
      // into the pre-adder register: A2 + D
      .INMODE(5'b00100),
      .OPMODE(second && !split_i ? 9'b00_010_01_01 : 9'b00_011_01_01),   // P = M + P, or P = M + C
      .ALUMODE(4'b0000), .CARRYIN(1'b0), .CARRYINSEL(3'b000),
      .CEA1(1'b0), .CEA2(en_i), .CED(en_i), .CEAD(en_i), .CEB1(en_i), .CEB2(en_i), .CEM(en_i), .CEP(en_i),
      .CEC(1'b0), .CECTRL(1'b0), .CEINMODE(1'b0), .CEALUMODE(1'b0), .CECARRYIN(1'b0),
      .RSTA(1'b0), .RSTB(1'b0), .RSTC(1'b0), .RSTD(1'b0), .RSTM(1'b0), .RSTP(1'b0), .RSTCTRL(1'b0),
      .RSTINMODE(1'b0), .RSTALUMODE(1'b0), .RSTALLCARRYIN(1'b0),
      .P(p), .PCOUT(), .ACOUT(), .BCOUT(), .CARRYOUT(), .CARRYCASCOUT(), .MULTSIGNOUT(), .OVERFLOW(),
      .UNDERFLOW(), .PATTERNDETECT(), .PATTERNBDETECT(), .XOROUT()
    );
`endif
  end else begin : g_stages
    logic signed [26:0] a_q, d_q, ad_q;
    logic signed [XW-1:0] b1_q, b2_q;
    logic signed [47:0] m_q, p_q;
    always_ff @(posedge clk2x_i)
      if (en_i) begin
        a_q <= a_hi;
        d_q <= d_lo;
        b1_q <= x_pick;
        b2_q <= b1_q;
        ad_q <= a_q + d_q;
        m_q <= 48'(ad_q) * 48'(b2_q);
        p_q <= m_q + (second && !split_i ? p_q : HALF);
      end
    assign p = p_q;
  end

  // each pair: the high field above bit 18; the low one is the low 18 bits with bit 17 inverted (mac_cascade.sv)
  always_ff @(posedge clk_i)
    if (en_i) begin
      sum_hi_o <= p[QW+18:18];
      sum_lo_o <= (QW+1)'(signed'({~p[17], p[16:0]}));
    end
  if (LANE_PRODUCTS) begin : g_lane_products
    logic [47:0] pa_q;                   // lane v's products, out of P at the end of a first half
    always_ff @(posedge clk2x_i)
      if (en_i && first_half_q) pa_q <= p;
    always_ff @(posedge clk_i)
      if (en_i) begin
        p0_hi_o <= pa_q[QW+17:18];
        p0_lo_o <= QW'(signed'({~pa_q[17], pa_q[16:0]}));
      end
  end else begin : g_no_lane_products
    assign p0_hi_o = '0;
    assign p0_lo_o = '0;
  end
endmodule
