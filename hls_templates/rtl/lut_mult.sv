// An unsigned product of at most 16 x 16 bits in the fabric, three registered stages like dsp_mult's (p_o is the
// product of the operands given three en_i edges before), for a layer's constants (kernel taps, a row's words, an
// output row's step): no DSP48E2 in control or addressing, where a unit's DSPs outside the MAC array decide
// whether the next unit fits. Written as shifted partial products summed over the stages (pairs of them, from the
// operands; sums of two pairs; their sum, two adder levels), so neither yosys nor Vivado infers a multiplier, and
// no stage is deeper than two carry chains. The operands come from registers.
module lut_mult #(
  parameter int AW = 16,           // the product is kept to its low PW bits
  parameter int BW = 16,           // <= 16: eight pairs of partial products
  parameter int PW = 32
) (
  input  logic          clk_i,
  input  logic          en_i,
  input  logic [AW-1:0] a_i,
  input  logic [BW-1:0] b_i,
  output logic [PW-1:0] p_o
);
  if (BW > 16) begin : g_too_wide
    $error("lut_mult: BW past 16 (its partial products are eight pairs)");
  end
  logic [7:0][PW-1:0] pair_q;                    // partial products 2h, 2h + 1 summed
  logic [3:0][PW-1:0] part_q;                    // ... pairs 2h, 2h + 1 summed
  function automatic logic [PW-1:0] term(input logic [AW-1:0] a, input logic [BW-1:0] b, input int k);
    term = k < BW && b[k] ? PW'(a) << k : PW'(0);
  endfunction
  always_ff @(posedge clk_i)
    if (en_i) begin
      for (int h = 0; h < 8; h++) pair_q[h] <= term(a_i, b_i, 2*h) + term(a_i, b_i, 2*h + 1);
      for (int h = 0; h < 4; h++) part_q[h] <= pair_q[2*h] + pair_q[2*h + 1];
      p_o <= (part_q[0] + part_q[1]) + (part_q[2] + part_q[3]);
    end
endmodule
