// Two int8 products that share one operand from a single multiplier (the shared-operand packing of
// Xilinx WP486): (w_hi * 2^18 + w_lo) * x holds w_lo * x in its low 18 bits (sign-extended) and
// w_hi * x above them, less one when the low product is negative. A DSP48E2 does the 27 x 18 multiply,
// so the array needs half the DSPs; synthesis never finds this packing by itself. PACK = 0 (DSP48E1,
// Zynq-7000: 25 x 18, too narrow) uses two plain multipliers.
module mac_pair #(
  parameter bit PACK = 1
) (
  input  logic signed [7:0]  x,
  input  logic signed [7:0]  w_hi,
  input  logic signed [7:0]  w_lo,
  output logic signed [15:0] p_hi,
  output logic signed [15:0] p_lo
);
  if (PACK) begin : g_packed
    logic signed [26:0] packed_w;
    logic signed [34:0] p;
    assign packed_w = (27'(w_hi) <<< 18) + 27'(w_lo);
    assign p = packed_w * 35'(x);
    assign p_lo = 16'(signed'(p[17:0]));
    assign p_hi = 16'(p[33:18] + {15'd0, p[17]});
  end else begin : g_plain
    assign p_hi = w_hi * x;
    assign p_lo = w_lo * x;
  end
endmodule
