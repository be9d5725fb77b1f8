// The integer arithmetic of fpga_runtime/abi.py (bit-exact with the numpy reference and the HLS engine),
// `include`d inside each module that needs it. Tensor addresses are pixel_address.sv's.

  // v >>> s saturated to int8 over two pipeline stages, for the epilogue's 52-bit sums and s < 52. The result is
  // in range exactly when v's bits from 7 + s up all equal its sign (v >>> s > 127 exactly when v >= 128 * 2^s), so
  // the test needs no shifter, only a mask of those bits that depends on s alone (shift_sat8_above, registered a
  // stage before); shift_sat8_parts takes the shifted low byte, the sign and the test, shift_sat8_finish picks the
  // byte or the bound on the sign's side. No comparison against shifted bounds, whose carry chain would be as long
  // as v, sits in the path.
  function automatic logic [43:0] shift_sat8_above(input logic [5:0] s);
    for (int k = 0; k < 44; k++) shift_sat8_above[k] = 6'(k) >= s;     // bit k: v's bit 7 + k
  endfunction

  function automatic logic [9:0] shift_sat8_parts(input logic signed [51:0] v, input logic [5:0] s,
                                                  input logic [43:0] above);
    shift_sat8_parts = {|(above & (v[50:7] ^ {44{v[51]}})), v[51], 8'(v >>> s)};
  endfunction

  function automatic logic signed [7:0] shift_sat8_finish(input logic [9:0] parts);
    logic out_of_range, sign;
    logic [7:0] low;
    {out_of_range, sign, low} = parts;
    if (!out_of_range) shift_sat8_finish = low;
    else shift_sat8_finish = sign ? -8'sd128 : 8'sd127;
  endfunction

  function automatic logic signed [7:0] clamp8(input logic signed [7:0] q, input logic signed [7:0] lo,
                                               input logic signed [7:0] hi);
    if (q < lo) clamp8 = lo;
    else if (q > hi) clamp8 = hi;
    else clamp8 = q;
  endfunction

  // index of q in a 256-entry table: q + 128
  function automatic logic [7:0] lut_index(input logic signed [7:0] q);
    lut_index = {~q[7], q[6:0]};
  endfunction

  // smallest power of two >= v, for 1 <= v <= 16
  function automatic logic [4:0] pow2_at_least(input logic [7:0] v);
    pow2_at_least = v <= 8'd1 ? 5'd1 : v <= 8'd2 ? 5'd2 : v <= 8'd4 ? 5'd4 : v <= 8'd8 ? 5'd8 : 5'd16;
  endfunction

  // words * p for p a power of two up to 16: a shift, no multiplier
  function automatic logic [35:0] times_pow2(input logic [31:0] words, input logic [4:0] p);
    case (p)
      5'd16: times_pow2 = {words, 4'd0};
      5'd8: times_pow2 = {1'b0, words, 3'd0};
      5'd4: times_pow2 = {2'd0, words, 2'd0};
      5'd2: times_pow2 = {3'd0, words, 1'b0};
      default: times_pow2 = {4'd0, words};
    endcase
  endfunction

