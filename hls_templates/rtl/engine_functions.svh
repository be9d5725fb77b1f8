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

  // the same mask over two register stages: the shift's high and low three bits decoded (whether the high bits are
  // below or equal to each value, whether the low bits are at most each), then each mask bit from three of those
  function automatic logic [23:0] shift_sat8_above_decode(input logic [5:0] s);
    for (int j = 0; j < 8; j++) begin
      shift_sat8_above_decode[j] = 3'(j) > s[5:3];
      shift_sat8_above_decode[8 + j] = 3'(j) == s[5:3];
      shift_sat8_above_decode[16 + j] = 3'(j) >= s[2:0];
    end
  endfunction

  function automatic logic [43:0] shift_sat8_above_pick(input logic [23:0] dec);
    for (int k = 0; k < 44; k++)
      shift_sat8_above_pick[k] = dec[k / 8] || (dec[8 + k / 8] && dec[16 + k % 8]);
  endfunction

  function automatic logic [9:0] shift_sat8_parts(input logic signed [51:0] v, input logic [5:0] s,
                                                  input logic [43:0] above);
    shift_sat8_parts = {|(above & (v[50:7] ^ {44{v[51]}})), v[51], 8'(v >>> s)};
  endfunction

  // the same first half split over the two stages where one shift amount drives many lanes (the residual's, per
  // layer: its fan-out lengthens a one-stage shifter): the test in four parts of 11 bits, the sign and v shifted by
  // the amount's multiple of eight, of which the 15 bits the rest of the shift reads; then the parts joined and the
  // shift by its low three bits. Arithmetic shifts compose, so the byte is v >>> s's.
  function automatic logic [19:0] shift_sat8_coarse(input logic signed [51:0] v, input logic [2:0] s_hi,
                                                    input logic [43:0] above);
    logic [43:0] off;
    off = above & (v[50:7] ^ {44{v[51]}});
    shift_sat8_coarse = {|off[43:33], |off[32:22], |off[21:11], |off[10:0], v[51], 15'(v >>> {s_hi, 3'b000})};
  endfunction

  function automatic logic [9:0] shift_sat8_fine(input logic [19:0] coarse, input logic [2:0] s_lo);
    shift_sat8_fine = {|coarse[19:16], coarse[15], 8'(coarse[14:0] >> s_lo)};
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

  // log2 of pow2_at_least's value (1, 2, 4, 8, 16): which of the window's fit flags it reads
  function automatic logic [2:0] pow2_log(input logic [4:0] p);
    case (p)
      5'd16: pow2_log = 3'd4;
      5'd8: pow2_log = 3'd3;
      5'd4: pow2_log = 3'd2;
      5'd2: pow2_log = 3'd1;
      default: pow2_log = 3'd0;
    endcase
  endfunction

