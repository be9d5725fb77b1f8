// Two int8 products that share one operand from a single multiplier (the shared-operand packing of
// Xilinx WP486): (w_hi * 2^18 + w_lo) * x holds w_lo * x in its low 18 bits (sign-extended) and
// w_hi * x above them, less one when the low product is negative. A DSP48E2 does the 27 x 18 multiply,
// so the array needs half the DSPs; synthesis never finds this packing by itself. PACK = 0 (DSP48E1,
// Zynq-7000: 25 x 18, too narrow) uses two plain multipliers.
// Registered as the DSP48 is: operands (AREG/BREG), then the product (MREG/PREG); the products come out two
// cycles of en_i after their operands go in.
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
    logic signed [26:0] w_q;
    logic signed [7:0] x_q;
    logic signed [34:0] p_q;
    always_ff @(posedge clk_i)
      if (en_i) begin
        w_q <= (27'(w_hi_i) <<< 18) + 27'(w_lo_i);
        x_q <= x_i;
        p_q <= w_q * 35'(x_q);
      end
    assign p_lo_o = 16'(signed'(p_q[17:0]));
    assign p_hi_o = 16'(p_q[33:18] + {15'd0, p_q[17]});
  end else begin : g_plain
    logic signed [7:0] x_q, hi_q, lo_q;
    always_ff @(posedge clk_i)
      if (en_i) begin
        x_q <= x_i; hi_q <= w_hi_i; lo_q <= w_lo_i;
        p_hi_o <= hi_q * x_q;
        p_lo_o <= lo_q * x_q;
      end
  end
endmodule
