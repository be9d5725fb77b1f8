// Kernel ABI v1 in SystemVerilog: op codes, flags, the descriptor, and the integer arithmetic of
// fpga_runtime/abi.py (bit-exact with the numpy reference and the HLS engine).
package engine_pkg;

  localparam logic [7:0] OP_CONV = 8'd1, OP_ADD = 8'd2, OP_MAXPOOL = 8'd3, OP_COPY = 8'd4,
                         OP_GAP = 8'd5, OP_SCALE = 8'd6;
  localparam int F_DEPTHWISE = 0, F_RESIDUAL = 1, F_POOL = 2, F_UPSAMPLE2 = 3;   // bit positions
  localparam logic [7:0] ACT_NONE = 8'd0, ACT_CLAMP = 8'd1, ACT_LUT = 8'd2;

  // What a beat of the activation stream is for (carried with every read run).
  typedef enum logic [2:0] {
    K_MAC  = 3'd0,   // standard conv input: R x V products into R accumulators
    K_DW   = 3'd1,   // depthwise conv input: V lane-wise products
    K_RES  = 3'd2,   // residual operand of a conv (R or V channels)
    K_A    = 3'd3,   // first operand of ADD / SCALE
    K_B    = 3'd4,   // second operand of ADD / SCALE (finishes the pixel)
    K_POOL = 3'd5,   // max-pool tap
    K_COPY = 3'd6,   // copied beat
    K_GAP  = 3'd7    // global-average-pool input pixel
  } kind_t;

  typedef struct packed {
    logic [7:0]  op, flags, act1, act2;
    logic [15:0] batch, in_h, in_w, in_c, in_c_stride, in_c_offset;
    logic [15:0] out_h, out_w, out_c, out_c_stride, out_c_offset, conv_h, conv_w;
    logic [7:0]  kh, kw, stride_h, stride_w, dil_h, dil_w, pad_t, pad_l, pad_b, pad_r;
    logic [7:0]  pool_kh, pool_kw, pool_sh, pool_sw, pool_pad_t, pool_pad_l, pool_pad_b, pool_pad_r;
    logic signed [7:0] act_lo, act_hi;
    logic [7:0]  res_shift;
    logic [15:0] in2_c_stride, in2_c_offset;
    logic [31:0] in_addr, in2_addr, weight_addr, bias_addr, requant_addr, lut1_addr, lut2_addr, out_addr;
    logic signed [31:0] res_mult_a, res_mult_b;
    logic [31:0] layer_id;
  } desc_t;

  // The 128 little-endian bytes of a descriptor, as fields.
  function automatic desc_t parse_descriptor(input logic [1023:0] b);
    desc_t d;
    d.op = b[0*8 +: 8];            d.flags = b[1*8 +: 8];          d.act1 = b[2*8 +: 8];
    d.act2 = b[3*8 +: 8];          d.batch = b[4*8 +: 16];         d.in_h = b[6*8 +: 16];
    d.in_w = b[8*8 +: 16];         d.in_c = b[10*8 +: 16];         d.in_c_stride = b[12*8 +: 16];
    d.in_c_offset = b[14*8 +: 16]; d.out_h = b[16*8 +: 16];        d.out_w = b[18*8 +: 16];
    d.out_c = b[20*8 +: 16];       d.out_c_stride = b[22*8 +: 16]; d.out_c_offset = b[24*8 +: 16];
    d.conv_h = b[26*8 +: 16];      d.conv_w = b[28*8 +: 16];
    d.kh = b[30*8 +: 8];           d.kw = b[31*8 +: 8];            d.stride_h = b[32*8 +: 8];
    d.stride_w = b[33*8 +: 8];     d.dil_h = b[34*8 +: 8];         d.dil_w = b[35*8 +: 8];
    d.pad_t = b[36*8 +: 8];        d.pad_l = b[37*8 +: 8];         d.pad_b = b[38*8 +: 8];
    d.pad_r = b[39*8 +: 8];        d.pool_kh = b[40*8 +: 8];       d.pool_kw = b[41*8 +: 8];
    d.pool_sh = b[42*8 +: 8];      d.pool_sw = b[43*8 +: 8];       d.pool_pad_t = b[44*8 +: 8];
    d.pool_pad_l = b[45*8 +: 8];   d.pool_pad_b = b[46*8 +: 8];    d.pool_pad_r = b[47*8 +: 8];
    d.act_lo = b[48*8 +: 8];       d.act_hi = b[49*8 +: 8];        d.res_shift = b[50*8 +: 8];
    d.in2_c_stride = b[52*8 +: 16]; d.in2_c_offset = b[54*8 +: 16];
    d.in_addr = b[56*8 +: 32];     d.in2_addr = b[60*8 +: 32];     d.weight_addr = b[64*8 +: 32];
    d.bias_addr = b[68*8 +: 32];   d.requant_addr = b[72*8 +: 32]; d.lut1_addr = b[76*8 +: 32];
    d.lut2_addr = b[80*8 +: 32];   d.out_addr = b[84*8 +: 32];     d.res_mult_a = b[88*8 +: 32];
    d.res_mult_b = b[92*8 +: 32];  d.layer_id = b[96*8 +: 32];
    return d;
  endfunction

  function automatic logic signed [7:0] sat8(input logic signed [63:0] v);
    if (v < -64'sd128) return -8'sd128;
    if (v > 64'sd127) return 8'sd127;
    return v[7:0];
  endfunction

  // (v + 2^(s-1)) >> s, arithmetic; s = 0 leaves v: round half towards +infinity
  function automatic logic signed [63:0] shift_round(input logic signed [63:0] v, input logic [7:0] s);
    logic signed [63:0] bias;
    if (s == 8'd0) return v;
    bias = 64'sd1 <<< (s - 8'd1);
    return (v + bias) >>> s;
  endfunction

  function automatic logic signed [7:0] requantize(input logic signed [31:0] acc, input logic signed [31:0] mult,
                                                   input logic [7:0] shift);
    logic signed [63:0] product;
    product = 64'(acc) * 64'(mult);
    return sat8(shift_round(product, shift));
  endfunction

  function automatic logic signed [7:0] rescale2(input logic signed [7:0] a, input logic signed [7:0] b,
                                                 input logic signed [31:0] ma, input logic signed [31:0] mb,
                                                 input logic [7:0] shift);
    logic signed [63:0] total;
    total = 64'(a) * 64'(ma) + 64'(b) * 64'(mb);
    return sat8(shift_round(total, shift));
  endfunction

  function automatic logic signed [7:0] gate(input logic signed [7:0] x, input logic signed [7:0] g,
                                             input logic signed [31:0] ma, input logic [7:0] shift);
    logic signed [63:0] product;
    product = 64'(x) * 64'(g) * 64'(ma);
    return sat8(shift_round(product, shift));
  endfunction

  function automatic logic signed [7:0] clamp8(input logic signed [7:0] q, input logic signed [7:0] lo,
                                               input logic signed [7:0] hi);
    if (q < lo) return lo;
    if (q > hi) return hi;
    return q;
  endfunction

  // index of q in a 256-entry table: q + 128
  function automatic logic [7:0] lut_index(input logic signed [7:0] q);
    return {~q[7], q[6:0]};
  endfunction

endpackage
