// Two int8 x XW-bit products that share the XW-bit operand from a single multiplier (the shared-operand packing of
// Xilinx WP486): (w_hi * 2^18 + w_lo) * x holds w_lo * x in its low 18 bits (sign-extended) and
// w_hi * x above them, less one when the low product is negative. That needs |w_lo * x| < 2^17: XW = 8 (int8
// activations) or 10 (the 10-bit operands of an integer Winograd input transform, |x| <= 512). The DSP's post-adder adds 2^17 (C): the high
// part is then w_hi * x exactly and the low part the low 18 bits with bit 17 inverted, so no carry chain
// follows the DSP. A DSP48E2 does the 27 x 18 multiply, so the array needs half the DSPs; synthesis never finds
// this packing by itself. PACK = 0 (DSP48E1, Zynq-7000: 25 x 18, too narrow) uses two plain multipliers.
// Three registers deep, as a DSP48E2 at full speed is (dsp_mult.sv: operands, product, output); the products come
// out three cycles of en_i after their operands go in.
module mac_pair #(
  parameter bit PACK = 1,
  parameter int XW = 8                     // the shared operand's bits: 8 or 10
) (
  input  logic                  clk_i,
  input  logic                  en_i,
  input  logic signed [XW-1:0]  x_i,
  input  logic signed [7:0]     w_hi_i,
  input  logic signed [7:0]     w_lo_i,
  output logic signed [XW+7:0]  p_hi_o,
  output logic signed [XW+7:0]  p_lo_o
);
  localparam int PW = XW + 26;             // the packed product: 18 low bits, then w_hi * x
  if (PACK) begin : g_packed
    // w_hi * 2^18 + w_lo: the low 18 bits are w_lo sign-extended, the high 9 w_hi less its borrow
    wire signed [26:0] w_packed = {9'(w_hi_i) - {8'd0, w_lo_i[7]}, {10{w_lo_i[7]}}, w_lo_i};
    logic signed [PW-1:0] p;
    dsp_mult #(.AW(27), .BW(XW), .PW(PW), .USE_C(1'b1)) product (.clk_i, .en_i, .a_i(w_packed), .b_i(x_i),
      .c_i(PW'(131072)), .p_o(p));
    assign p_lo_o = (XW+8)'(signed'({~p[17], p[16:0]}));
    assign p_hi_o = p[PW-1:18];
  end else begin : g_plain
    logic signed [XW-1:0] x_q;
    logic signed [7:0] hi_q, lo_q;
    logic signed [XW+7:0] hi_m_q, lo_m_q;
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
