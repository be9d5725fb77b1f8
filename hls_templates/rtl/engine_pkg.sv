// Kernel ABI v3 in SystemVerilog: op codes, flags, the descriptor and the tag of a read run. The integer
// arithmetic is in engine_functions.svh (module-scope functions: yosys mis-reads functions in packages).
package engine_pkg;

  localparam logic [7:0] OP_CONV = 8'd1, OP_ADD = 8'd2, OP_MAXPOOL = 8'd3, OP_COPY = 8'd4,
                         OP_GAP = 8'd5, OP_SCALE = 8'd6, OP_L2NORM = 8'd7;
  localparam int F_DEPTHWISE = 0, F_RESIDUAL = 1, F_POOL = 2, F_UPSAMPLE2 = 3, F_POOL_PAD_ZERO = 4,  // bits
                 F_PRELU = 5, F_WINOGRAD = 6;
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
    logic signed [7:0] in_zero;    // conv: input taps outside the image (the input's zero point)
    logic [15:0] in2_c_stride, in2_c_offset;
    logic [31:0] in_addr, in2_addr, weight_addr, bias_addr, requant_addr, lut1_addr, lut2_addr, out_addr;
    logic signed [31:0] res_mult_a, res_mult_b;
    logic [31:0] layer_id;
    logic [7:0]  out_step, out_phase_y, out_phase_x;
  } desc_t;

  // an accumulator's bits: the requantisation takes an accumulation's low 27 bits (ABI v3), and sums and
  // differences modulo 2^27 have the same low 27 bits as in any wider word, so no sum is kept wider
  localparam int ACC_W = 27;
  localparam int DESC_BITS = 824;                  // $bits(desc_t), spelt out for yosys
  localparam int EPI_LATENCY = 17;                 // cycles from a result into the epilogue to it out (epilogue.sv)
  localparam int ARRAY_LATENCY = 6;                // cycles from the MAC array's operands to its sums (mac_array.sv)
  // physical address bits the engine computes with: every Zynq UltraScale+ and Alveo memory map lies below 2^40
  // (the runtime checks its buffers); the AXI ports carry 64, the bits above these 0
  localparam int ADDR_W = 40;
  localparam int ADDRESS_LATENCY = 8;              // cycles from pixel_address.sv's operands to its address

  // What a run of activation beats is for, carried with each of its beats through the reader.
  typedef struct packed {
    kind_t       kind;
    logic        first, last;     // the run starts / ends a pixel's accumulation
    logic [15:0] waddr;           // weight RAM row of the run's first beat
    logic [31:0] oaddr;           // where the pixel's result goes (activation region offset)
    logic [15:0] n, y, x;         // the result's image and conv coordinates (fused pool ring)
  } tag_t;
  localparam int TAG_BITS = 3 + 2 + 16 + 32 + 3 * 16;

  // The controller's states (engine_core.sv); constant_request.sv reads what is being collected from them.
  typedef enum logic [3:0] {S_IDLE, S_DESC, S_TAKE, S_CHECK, S_LUT1, S_LUT2, S_TILE, S_BIAS, S_RQ, S_WEIGHTS,
                            S_RUN, S_DRAIN, S_NEXT, S_FINISH, S_DECODE, S_SIZE} state_t;

endpackage
