// Two lanes' packed MAC pairs (mac_pair.sv's shared-operand packing: rows r and r + 1 on one DSP48E2) whose DSPs
// are cascaded: the second adds the first's P through PCIN in its post-adder, so the two lanes' products leave
// summed and the fabric's lane tree (mac_array.sv) starts from half as many terms. The packing holds for the sum:
// two products of an int8 weight and an XW-bit operand stay below 2^17 in the low field (int8: 2 x 128 x 128; a
// Winograd layer's V, |V| <= 512, with its weights in [-127, 127], which program_check.py enforces: 2 x 512 x 127),
// so one 2^17 (the first DSP's C) still turns the low sum's sign.
//
// The packed pair, hi * 2^18 + lo (lo signed), is made in the DSPs' pre-adders: A takes the two bytes sign-extended
// side by side (wires only), 2^18 too much where lo is negative, and D minus 2^18 there; their sum goes into the
// pre-adder's register (ADREG) in place of A's, so the weights reach the DSPs from the weight RAM through one pick,
// with no subtract's carry chain on the way.
// The second lane's operands pass one more register (its DSP's A and D, and B twice: BREG = 2), so its product
// meets the first lane's P a cycle later: both sums are out four en_i edges after the operands, the first lane's own
// products (for the depthwise `taps`) beside them from a fabric register. `split_i` (a depthwise layer on the
// window path: its lanes are channels) makes the second DSP add C instead of PCIN, so `sum_*` is then the second
// lane's products alone; it must hold while a step is in the array.
module mac_cascade #(
  parameter int XW = 8,                    // the shared operands' bits: 8 or 10
  parameter bit LANE_PRODUCTS = 1'b1       // build p0_*_o (the rows the depthwise `taps` read; else 0)
) (
  input  logic                  clk_i,
  input  logic                  en_i,
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
  // the pre-adder's operands: a0 + d0 (a1 + d1) is the packed pair
  wire signed [26:0] a0 = {9'(w0_hi_i), 18'(w0_lo_i)};
  wire signed [26:0] a1 = {9'(w1_hi_i), 18'(w1_lo_i)};
  wire signed [26:0] d0 = {{9{w0_lo_i[7]}}, 18'd0};
  wire signed [26:0] d1 = {{9{w1_lo_i[7]}}, 18'd0};
  logic [47:0] p0, p1;                     // the DSPs' P: lane v's packed products; the packed sum
`ifdef SYNTHESIS
  localparam bit INSTANCE = 1'b1;
`else
  localparam bit INSTANCE = 1'b0;
`endif
  if (INSTANCE) begin : g_dsp48e2
`ifdef SYNTHESIS
    logic [47:0] cascade;
    DSP48E2 #(
      .AREG(0), .ACASCREG(0), .DREG(0), .ADREG(1), .BREG(1), .BCASCREG(1), .MREG(1), .PREG(1),
      .CREG(0), .INMODEREG(0), .OPMODEREG(0), .ALUMODEREG(0), .CARRYINREG(0),
      .CARRYINSELREG(0), .AMULTSEL("AD"), .BMULTSEL("B"), .PREADDINSEL("A"), .A_INPUT("DIRECT"),
      .B_INPUT("DIRECT"), .USE_MULT("MULTIPLY"), .USE_SIMD("ONE48"), .USE_PATTERN_DETECT("NO_PATDET")
    ) first (
      .CLK(clk_i),
      .A(30'(a0)), .B(18'(x0_i)), .C(HALF), .D(d0),
      .ACIN(30'd0), .BCIN(18'd0), .PCIN(48'd0), .CARRYCASCIN(1'b0), .MULTSIGNIN(1'b0),
      .INMODE(5'b00100), .OPMODE(9'b00_011_01_01),         // AD = D + A; P = M + C
      .ALUMODE(4'b0000), .CARRYIN(1'b0), .CARRYINSEL(3'b000),
      .CEA1(1'b0), .CEA2(1'b0), .CEB1(1'b0), .CEB2(en_i), .CEM(en_i), .CEP(en_i),
      .CEAD(en_i), .CED(1'b0), .CEC(1'b0), .CECTRL(1'b0), .CEINMODE(1'b0), .CEALUMODE(1'b0), .CECARRYIN(1'b0),
      .RSTA(1'b0), .RSTB(1'b0), .RSTC(1'b0), .RSTD(1'b0), .RSTM(1'b0), .RSTP(1'b0), .RSTCTRL(1'b0),
      .RSTINMODE(1'b0), .RSTALUMODE(1'b0), .RSTALLCARRYIN(1'b0),
      .P(p0), .PCOUT(cascade), .ACOUT(), .BCOUT(), .CARRYOUT(), .CARRYCASCOUT(), .MULTSIGNOUT(), .OVERFLOW(),
      .UNDERFLOW(), .PATTERNDETECT(), .PATTERNBDETECT(), .XOROUT()
    );
    DSP48E2 #(
      .AREG(1), .ACASCREG(1), .DREG(1), .ADREG(1), .BREG(2), .BCASCREG(2), .MREG(1), .PREG(1),
      .CREG(0), .INMODEREG(0), .OPMODEREG(0), .ALUMODEREG(0), .CARRYINREG(0),
      .CARRYINSELREG(0), .AMULTSEL("AD"), .BMULTSEL("B"), .PREADDINSEL("A"), .A_INPUT("DIRECT"),
      .B_INPUT("DIRECT"), .USE_MULT("MULTIPLY"), .USE_SIMD("ONE48"), .USE_PATTERN_DETECT("NO_PATDET")
    ) second (
      .CLK(clk_i),
      .A(30'(a1)), .B(18'(x1_i)), .C(HALF), .D(d1),
      .ACIN(30'd0), .BCIN(18'd0), .PCIN(cascade), .CARRYCASCIN(1'b0), .MULTSIGNIN(1'b0),
      .INMODE(5'b00100),                                    // AD = D + A2; B2: the operands' second registers
      .OPMODE(split_i ? 9'b00_011_01_01 : 9'b00_001_01_01), // P = M + C, or P = M + PCIN
      .ALUMODE(4'b0000), .CARRYIN(1'b0), .CARRYINSEL(3'b000),
      .CEA1(1'b0), .CEA2(en_i), .CEB1(en_i), .CEB2(en_i), .CEM(en_i), .CEP(en_i),
      .CEAD(en_i), .CED(en_i), .CEC(1'b0), .CECTRL(1'b0), .CEINMODE(1'b0), .CEALUMODE(1'b0), .CECARRYIN(1'b0),
      .RSTA(1'b0), .RSTB(1'b0), .RSTC(1'b0), .RSTD(1'b0), .RSTM(1'b0), .RSTP(1'b0), .RSTCTRL(1'b0),
      .RSTINMODE(1'b0), .RSTALUMODE(1'b0), .RSTALLCARRYIN(1'b0),
      .P(p1), .PCOUT(), .ACOUT(), .BCOUT(), .CARRYOUT(), .CARRYCASCOUT(), .MULTSIGNOUT(), .OVERFLOW(),
      .UNDERFLOW(), .PATTERNDETECT(), .PATTERNBDETECT(), .XOROUT()
    );
`endif
  end else begin : g_stages
    logic signed [26:0] a0_q, a1_q, a1_qq;
    logic signed [XW-1:0] b0_q, b1_q, b1_qq;
    logic signed [47:0] m0_q, m1_q, p0_q, p1_q;
    always_ff @(posedge clk_i)
      if (en_i) begin
        a0_q <= a0 + d0; b0_q <= x0_i;
        a1_q <= a1 + d1; b1_q <= x1_i;
        a1_qq <= a1_q; b1_qq <= b1_q;
        m0_q <= 48'(a0_q) * 48'(b0_q);
        m1_q <= 48'(a1_qq) * 48'(b1_qq);
        p0_q <= m0_q + HALF;
        p1_q <= m1_q + (split_i ? HALF : p0_q);
      end
    assign p0 = p0_q;
    assign p1 = p1_q;
  end

  assign sum_hi_o = p1[QW+18:18];
  assign sum_lo_o = (QW+1)'(signed'({~p1[17], p1[16:0]}));
  if (LANE_PRODUCTS) begin : g_lane_products
    always_ff @(posedge clk_i)
      if (en_i) begin
        p0_hi_o <= p0[QW+17:18];
        p0_lo_o <= QW'(signed'({~p0[17], p0[16:0]}));
      end
  end else begin : g_no_lane_products
    assign p0_hi_o = '0;
    assign p0_lo_o = '0;
  end
endmodule
