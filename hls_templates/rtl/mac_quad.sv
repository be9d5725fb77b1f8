// Four int8 x XW-bit products per fabric cycle from one DSP48E2 at twice the fabric clock (`--dsp-clock 2x`, the
// DPU's double-pumped DSPs): one activation x (int8, or a Winograd layer's 10-bit V: XW) and four weights of output
// rows r .. r+3. Rows r, r+1 go packed on the A
// port and rows r+2, r+3 on the D port (mac_pair.sv's shared-operand packing); in the first half of a fabric cycle
// the pre-adder passes D, in the second A, so the multiplier makes one packed product per fast cycle.
//
// Every DSP register is used (A, D, pre-adder, B twice, M, P), all clocked by clk2x_i with en_i as clock enable, so
// a stalled fabric cycle freezes the fast pipeline as it freezes the fabric one. The fabric side registers the
// operands (1x), the fast side catches the first product in the cycle it leaves P (pa_q) and the fabric side takes
// both (1x). Every crossing is register to register: fabric to fast in half a fabric cycle, fast to fabric likewise.
// The products come out four enabled fabric cycles after their operands go in, as mac_cascade's sums do.
//
// The fast side knows which half of the fabric cycle it is in from a fabric toggle and its copy one fast cycle
// late (they differ in the first half), so no reset or start signal aligns it.
module mac_quad #(
  parameter int XW = 8                    // x's bits: 8 or 10 (mac_pair.sv)
) (
  input  logic                 clk_i,     // fabric clock
  input  logic                 clk2x_i,   // twice clk_i, rising edges aligned with clk_i's
  input  logic                 en_i,      // the pipeline moves this fabric cycle (held for the whole cycle)
  input  logic signed [XW-1:0] x_i,
  input  logic [31:0]          w_i,       // row r + k's weight at [8k +: 8]
  output logic [4*(XW+8)-1:0]  p_o        // row r + k's product (XW + 8 bits, signed) at [(XW+8)k +: XW+8]
);
  localparam int QW = XW + 8;
  // packed weight pairs: hi * 2^18 + lo (mac_pair.sv), the high weight less the low one's borrow
  wire signed [26:0] w_a = {9'(signed'(w_i[15:8])) - {8'd0, w_i[7]}, {10{w_i[7]}}, w_i[7:0]};
  wire signed [26:0] w_d = {9'(signed'(w_i[31:24])) - {8'd0, w_i[23]}, {10{w_i[23]}}, w_i[23:16]};

  // fabric side: the operands of the cycle, held for the fast pipeline's two halves
  logic signed [26:0] wa_q, wd_q;
  logic signed [XW-1:0] x_q;
  always_ff @(posedge clk_i)
    if (en_i) begin
      wa_q <= w_a;
      wd_q <= w_d;
      x_q <= x_i;
    end

  // which half: tog_q flips every fabric cycle, tog2_q is its copy a fast cycle late
  logic tog_q, tog2_q, first_half_q;
  always_ff @(posedge clk_i) tog_q <= !tog_q;
  always_ff @(posedge clk2x_i) begin
    tog2_q <= tog_q;
    first_half_q <= tog_q == tog2_q;     // the coming fast cycle is a fabric cycle's first half
  end

  logic [47:0] p;                        // the DSP's P: rows r, r+1 in the second half, rows r+2, r+3 in the first
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
      .A(30'(wa_q)), .B(18'(x_q)), .C(48'sd131072), .D(wd_q),
      .ACIN(30'd0), .BCIN(18'd0), .PCIN(48'd0), .CARRYCASCIN(1'b0), .MULTSIGNIN(1'b0),
      // first half: D alone into the pre-adder (A zeroed, D on); second half: A alone (A2 * B2)
      .INMODE(first_half_q ? 5'b00110 : 5'b00000),
      .OPMODE(9'b00_011_01_01),                            // P = M + C: 2^17 turns the low product's sign
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
        a_q <= wa_q;
        d_q <= wd_q;
        b1_q <= x_q;
        b2_q <= b1_q;
        ad_q <= first_half_q ? d_q : a_q;
        m_q <= 48'(ad_q) * 48'(b2_q);
        p_q <= m_q + 48'sd131072;
      end
    assign p = p_q;
  end

  // rows r, r+1 leave P at the end of a first half; rows r+2, r+3 are in P at the fabric edge
  logic [47:0] pa_q;
  always_ff @(posedge clk2x_i)
    if (en_i && first_half_q) pa_q <= p;
  // each pair: the high product above bit 18; the low one is the low 18 bits with bit 17 inverted (in QW bits: for
  // XW = 8 its low 16, which the 2^17 does not touch)
  always_ff @(posedge clk_i)
    if (en_i) p_o <= {p[QW+17:18], QW'({~p[17], p[16:0]}), pa_q[QW+17:18], QW'({~pa_q[17], pa_q[16:0]})};
endmodule
