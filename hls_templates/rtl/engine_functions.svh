// The integer arithmetic of fpga_runtime/abi.py (bit-exact with the numpy reference and the HLS engine),
// `include`d inside each module that needs it. Tensor addresses are pixel_address.sv's.

  // v >>> s saturated to int8, the saturation decided beside the shift rather than after it: v >>> s is above 127
  // exactly when v >= hi = 128 * 2^s and below -128 when v < lo = -128 * 2^s (bounds a caller may keep in registers)
  function automatic logic signed [7:0] shift_sat8_within(input logic signed [63:0] v, input logic [7:0] s,
                                                          input logic signed [63:0] hi, input logic signed [63:0] lo);
    if (v >= hi) shift_sat8_within = 8'sd127;
    else if (v < lo) shift_sat8_within = -8'sd128;
    else shift_sat8_within = 8'(v >>> s);
  endfunction

  // the same with the bounds computed; from s = 56 on, v >>> s of a 64-bit v is in range
  function automatic logic signed [7:0] shift_sat8(input logic signed [63:0] v, input logic [7:0] s);
    shift_sat8 = s < 8'd56 ? shift_sat8_within(v, s, 64'sd128 <<< s, -(64'sd128 <<< s)) : 8'(v >>> s);
  endfunction

  // 2^(s-1), 0 for s = 0: what a rounding shift adds before it shifts
  function automatic logic signed [63:0] round_half(input logic [7:0] s);
    round_half = s == 8'd0 ? 64'sd0 : 64'sd1 <<< (s - 8'd1);
  endfunction

  // (v + 2^(s-1)) >> s, arithmetic; s = 0 leaves v: round half towards +infinity. The epilogue's requantisation,
  // saturate(shift_round(x * m + y * n, s)) (y = 0 but for ADD), is this over three of its pipeline stages: the
  // product, + round_half, shift_sat8.
  function automatic logic signed [63:0] shift_round(input logic signed [63:0] v, input logic [7:0] s);
    shift_round = (v + round_half(s)) >>> s;
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

  // Input rows the window keeps for a conv layer whose rows take `words` words of each bank: kh + stride + 1
  // rows (`ahead`, rounded up to a power of two, at most 8) when they fit, so the next rows load, latency hidden,
  // while the array reads these; else kh rows (`least`, rounded up); 0 when not even those fit (the layer takes
  // the per-tap path).
  function automatic logic [4:0] window_slots(input logic [4:0] ahead, input logic [4:0] least,
                                              input logic [31:0] words, input logic [31:0] depth);
    if (ahead <= 5'd8 && times_pow2(words, ahead) <= 36'(depth)) window_slots = ahead;
    else if (least <= 5'd8 && times_pow2(words, least) <= 36'(depth)) window_slots = least;
    else window_slots = 5'd0;
  endfunction
