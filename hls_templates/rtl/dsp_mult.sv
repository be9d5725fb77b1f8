// A signed product of at most 27 x 18 bits, plus C where USE_C is set, on one DSP48E2 with every pipeline register
// it needs at full speed: operands (AREG/BREG), product (MREG), output (PREG); p_o is the product of the operands
// given three en_i edges before, plus the C of the last edge. C is not registered in the DSP: it is a layer's
// constant or comes from a register. yosys (0.70) infers a DSP48E2 from a multiply but moves no register into it,
// so synthesis (`SYNTHESIS`) gets the primitive where PRIMITIVE is set (UltraScale+); simulation, and the 7-series
// (DSP48E1, inferred), get the same three stages written out.
module dsp_mult #(
  parameter int AW = 27,           // <= 27
  parameter int BW = 18,           // <= 18
  parameter int PW = 48,           // <= 48
  parameter bit USE_C = 1'b0,
  parameter bit PRIMITIVE = 1'b1
) (
  input  logic                 clk_i,
  input  logic                 en_i,
  input  logic signed [AW-1:0] a_i,
  input  logic signed [BW-1:0] b_i,
  input  logic signed [PW-1:0] c_i,
  output logic signed [PW-1:0] p_o
);
`ifdef SYNTHESIS
  localparam bit INSTANCE = PRIMITIVE;
`else
  localparam bit INSTANCE = PRIMITIVE && 1'b0;
`endif
  if (INSTANCE) begin : g_dsp48e2
`ifdef SYNTHESIS
    logic [47:0] p_full;
    DSP48E2 #(
      .AREG(1), .ACASCREG(1), .BREG(1), .BCASCREG(1), .MREG(1), .PREG(1),
      .ADREG(0), .DREG(0), .CREG(0), .INMODEREG(0), .OPMODEREG(0), .ALUMODEREG(0), .CARRYINREG(0),
      .CARRYINSELREG(0), .AMULTSEL("A"), .BMULTSEL("B"), .PREADDINSEL("A"), .A_INPUT("DIRECT"),
      .B_INPUT("DIRECT"), .USE_MULT("MULTIPLY"), .USE_SIMD("ONE48"), .USE_PATTERN_DETECT("NO_PATDET")
    ) dsp (
      .CLK(clk_i),
      .A(30'(a_i)), .B(18'(b_i)), .C(USE_C ? 48'(c_i) : 48'sd0), .D(27'd0),
      .ACIN(30'd0), .BCIN(18'd0), .PCIN(48'd0), .CARRYCASCIN(1'b0), .MULTSIGNIN(1'b0),
      .INMODE(5'b00000),                                    // A2 * B2
      .OPMODE(USE_C ? 9'b00_011_01_01 : 9'b00_000_01_01),   // P = M + C (Z takes C), or P = M
      .ALUMODE(4'b0000), .CARRYIN(1'b0), .CARRYINSEL(3'b000),
      .CEA1(1'b0), .CEA2(en_i), .CEB1(1'b0), .CEB2(en_i), .CEM(en_i), .CEP(en_i),
      .CEAD(1'b0), .CED(1'b0), .CEC(1'b0), .CECTRL(1'b0), .CEINMODE(1'b0), .CEALUMODE(1'b0), .CECARRYIN(1'b0),
      .RSTA(1'b0), .RSTB(1'b0), .RSTC(1'b0), .RSTD(1'b0), .RSTM(1'b0), .RSTP(1'b0), .RSTCTRL(1'b0),
      .RSTINMODE(1'b0), .RSTALUMODE(1'b0), .RSTALLCARRYIN(1'b0),
      .P(p_full), .PCOUT(), .ACOUT(), .BCOUT(), .CARRYOUT(), .CARRYCASCOUT(), .MULTSIGNOUT(), .OVERFLOW(),
      .UNDERFLOW(), .PATTERNDETECT(), .PATTERNBDETECT(), .XOROUT()
    );
    assign p_o = PW'(p_full);
`endif
  end else begin : g_stages
    logic signed [AW-1:0] a_q;
    logic signed [BW-1:0] b_q;
    logic signed [PW-1:0] m_q, p_q;
    always_ff @(posedge clk_i)
      if (en_i) begin
        a_q <= a_i;
        b_q <= b_i;
        m_q <= PW'(48'(a_q) * 48'(b_q));
        p_q <= USE_C ? m_q + c_i : m_q;
      end
    assign p_o = p_q;
  end
endmodule
