// Two int8 products that share one operand from a single multiplier (the shared-operand packing of
// Xilinx WP486): (w_hi * 2^18 + w_lo) * x holds w_lo * x in its low 18 bits (sign-extended) and
// w_hi * x above them, less one when the low product is negative. A DSP48E2 does the 27 x 18 multiply,
// so the array needs half the DSPs; synthesis never finds this packing by itself. PACK = 0 (DSP48E1,
// Zynq-7000: 25 x 18, too narrow) uses two plain multipliers.
// Three registers deep, as a DSP48E2 at full speed is: operands (AREG/BREG), product (MREG), output (PREG); the
// products come out three cycles of en_i after their operands go in. yosys (0.70) infers a DSP48E2 from a
// multiply but never moves registers into it, so synthesis (`SYNTHESIS`, defined by yosys and Vivado) gets the
// primitive with its registers set; simulation gets the same three stages written out.
module mac_pair #(
  parameter bit PACK = 1
) (
  input  logic               clk_i,
  input  logic               en_i,
  input  logic signed [7:0]  x_i,
  input  logic signed [7:0]  w_hi_i,
  input  logic signed [7:0]  w_lo_i,
  output logic signed [15:0] p_hi_o,
  output logic signed [15:0] p_lo_o
);
  if (PACK) begin : g_packed
    // w_hi * 2^18 + w_lo: the low 18 bits are w_lo sign-extended, the high 9 w_hi less its borrow
    wire signed [26:0] w_packed = {9'(w_hi_i) - {8'd0, w_lo_i[7]}, {10{w_lo_i[7]}}, w_lo_i};
    logic [33:0] p;
`ifdef SYNTHESIS
    logic [47:0] p_full;
    DSP48E2 #(
      .AREG(1), .ACASCREG(1), .BREG(1), .BCASCREG(1), .MREG(1), .PREG(1),
      .ADREG(0), .DREG(0), .CREG(0), .INMODEREG(0), .OPMODEREG(0), .ALUMODEREG(0), .CARRYINREG(0),
      .CARRYINSELREG(0), .AMULTSEL("A"), .BMULTSEL("B"), .PREADDINSEL("A"), .A_INPUT("DIRECT"),
      .B_INPUT("DIRECT"), .USE_MULT("MULTIPLY"), .USE_SIMD("ONE48"), .USE_PATTERN_DETECT("NO_PATDET")
    ) dsp (
      .CLK(clk_i),
      .A({{3{w_packed[26]}}, w_packed}), .B(18'(x_i)), .C(48'd0), .D(27'd0),
      .ACIN(30'd0), .BCIN(18'd0), .PCIN(48'd0), .CARRYCASCIN(1'b0), .MULTSIGNIN(1'b0),
      .INMODE(5'b00000),                     // A2 * B2
      .OPMODE(9'b00_000_01_01),              // P = M (X and Y take the multiplier's partial products)
      .ALUMODE(4'b0000), .CARRYIN(1'b0), .CARRYINSEL(3'b000),
      .CEA1(1'b0), .CEA2(en_i), .CEB1(1'b0), .CEB2(en_i), .CEM(en_i), .CEP(en_i),
      .CEAD(1'b0), .CED(1'b0), .CEC(1'b0), .CECTRL(1'b0), .CEINMODE(1'b0), .CEALUMODE(1'b0), .CECARRYIN(1'b0),
      .RSTA(1'b0), .RSTB(1'b0), .RSTC(1'b0), .RSTD(1'b0), .RSTM(1'b0), .RSTP(1'b0), .RSTCTRL(1'b0),
      .RSTINMODE(1'b0), .RSTALUMODE(1'b0), .RSTALLCARRYIN(1'b0),
      .P(p_full), .PCOUT(), .ACOUT(), .BCOUT(), .CARRYOUT(), .CARRYCASCOUT(), .MULTSIGNOUT(), .OVERFLOW(),
      .UNDERFLOW(), .PATTERNDETECT(), .PATTERNBDETECT(), .XOROUT()
    );
    assign p = p_full[33:0];
`else
    logic signed [26:0] w_q;
    logic signed [7:0] x_q;
    logic signed [33:0] m_q, p_q;
    always_ff @(posedge clk_i)
      if (en_i) begin
        w_q <= w_packed;
        x_q <= x_i;
        m_q <= 34'(w_q * 35'(x_q));
        p_q <= m_q;
      end
    assign p = p_q;
`endif
    assign p_lo_o = 16'(signed'(p[17:0]));
    assign p_hi_o = 16'(p[33:18] + {15'd0, p[17]});
  end else begin : g_plain
    logic signed [7:0] x_q, hi_q, lo_q;
    logic signed [15:0] hi_m_q, lo_m_q;
    always_ff @(posedge clk_i)
      if (en_i) begin
        x_q <= x_i; hi_q <= w_hi_i; lo_q <= w_lo_i;
        hi_m_q <= hi_q * x_q;
        lo_m_q <= lo_q * x_q;
        p_hi_o <= hi_m_q;
        p_lo_o <= lo_m_q;
      end
  end
endmodule
