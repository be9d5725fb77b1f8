// Epilogue: EPI_LATENCY pipelined stages per pixel result of G lanes, one result accepted per cycle.
//   S0 operands   pick the product and shift of each lane: a conv or GAP accumulator by its requantisation
//                 multiplier (a PRELU conv's negative one by its negative-side multiplier), SCALE's gated value
//                 or ADD's two operands
//   S1 product    x * m + y * n (DSP48)
//   S2 round      + 2^(shift-1)
//   S3 shift      >>> shift, saturate to int8
//   S4 act1       clamp or table (a conv's or ADD's first activation) -> E1
//   S5 residual   a conv's residual rescale: e1 * ma, b * mb (two 8x18 products)
//   S6 sum        + half
//   S7 shift      >>> res_shift, saturate
//   S8 act2       clamp or table -> the result
// Each stage is one of the steps the old two-stage epilogue chained in a cycle (requantise, round, saturate,
// table) so the arithmetic, and so every result, is the same; the split is what lets it meet the board clock.
// Tables are 256-entry distributed RAMs, each lane its own copy (lut_ram.sv), read from a stage register.
import engine_pkg::*;

module epilogue #(
  parameter int V = 16,
  parameter int G = 16,            // lanes: max(PE rows, V)
  parameter int TB = 16            // activation-table entries per constant beat
) (
  input  logic clk,
  input  logic rst_n,
  input  logic [engine_pkg::DESC_BITS-1:0] desc,
  input  logic [G*32-1:0] mult,
  input  logic [G*8-1:0]  shift,
  input  logic [G*18-1:0] nmult,         // a PRELU conv's negative-side multipliers
  input  logic            lut_we1,       // a beat of the layer's first (second) table: into every lane's copy
  input  logic            lut_we2,
  input  logic [$clog2(256 / TB)-1:0] lut_waddr,
  input  logic [8*TB-1:0] lut_wdata,
  input  logic            in_valid,
  input  logic [G*32-1:0] in_acc,
  input  logic [G*8-1:0]  in_b,
  input  logic [8*V-1:0]  in_a,
  input  logic [31:0]     in_oaddr,
  input  logic [15:0]     in_n, in_y, in_x,
  output logic            out_valid,
  output logic [G*8-1:0]  out_q,
  output logic [31:0]     out_oaddr,
  output logic [15:0]     out_n, out_y, out_x,
  output logic            busy
);
  `include "engine_functions.svh"
  localparam int L = EPI_LATENCY;
  localparam int MW = 32 + 3 * 16;       // a result's address and coordinates, carried beside its lanes
  engine_pkg::desc_t d;
  assign d = desc;
  // the layer's kind, in registers: the descriptor is steady for cycles before its first result comes in
  logic has_res, prelu, per_channel, act1_applies, act2_applies;
  logic requantises;                     // the others (MAXPOOL, COPY) pass their first operand through
  always_ff @(posedge clk) begin
    has_res <= d.op == OP_CONV && d.flags[F_RESIDUAL];
    prelu <= d.op == OP_CONV && d.flags[F_PRELU];
    per_channel <= d.op == OP_CONV || d.op == OP_GAP;
    act1_applies <= d.op == OP_CONV || d.op == OP_ADD;
    act2_applies <= (d.op == OP_CONV && d.flags[F_RESIDUAL]) || d.op == OP_ADD;
    requantises <= d.op == OP_CONV || d.op == OP_GAP || d.op == OP_SCALE || d.op == OP_L2NORM || d.op == OP_ADD;
  end

  function automatic logic signed [7:0] activate(input logic [7:0] kind, input logic signed [7:0] q,
                                                 input logic signed [7:0] looked_up);
    if (kind == ACT_CLAMP) activate = clamp8(q, d.act_lo, d.act_hi);
    else if (kind == ACT_LUT) activate = looked_up;
    else activate = q;
  endfunction

  // valid and (address, coordinates) of each stage's result: stage k's are valid_q[k], meta_q[k]
  logic [L-1:0] valid_q;
  logic [L*MW-1:0] meta_q;                // stage k's at [MW*k +: MW]
  always_ff @(posedge clk) begin
    if (!rst_n) valid_q <= '0;
    else valid_q <= {valid_q[L-2:0], in_valid};
    meta_q <= {meta_q[(L-1)*MW-1:0], in_oaddr, in_n, in_y, in_x};
  end
  assign out_valid = valid_q[L-1];
  assign {out_oaddr, out_n, out_y, out_x} = meta_q[(L-1)*MW +: MW];
  assign busy = |valid_q;
  // The residual rescale saturate(round((a * ma + b * mb) >> s)) over three stages: the two products (S5), their
  // sum + 2^(s-1) (S6), the shift saturated as shift_sat8 does (S7; 0 from s = 48 on). The sum needs 27 bits; at 48
  // bits the rounding shift is exact for every shift (from 27 on the result is 0), so the adders and shifter are 48
  // bits wide, not 64. Its rounding half and saturation bounds are the layer's constants, in registers
  // over two stages (the shift's decode, then the constants), as they have the cycles before the layer's first result
  logic signed [47:0] res_half_q;
  logic signed [63:0] res_hi_q, res_lo_q;
  logic res_zero_q, res_whole_q;
  logic [5:0] res_s_q;
  always_ff @(posedge clk) begin
    res_s_q <= d.res_shift[5:0];
    res_zero_q <= d.res_shift > 8'd47;                  // from 48 on the result is 0 (residual_half's range)
    res_whole_q <= d.res_shift == 8'd0;
    res_half_q <= res_zero_q || res_whole_q ? 48'sd0 : 48'sd1 <<< (res_s_q - 6'd1);
    res_hi_q <= 64'sd128 <<< res_s_q;                   // used while res_shift < 48 only
    res_lo_q <= -64'sd128 <<< res_s_q;
  end

  for (genvar i = 0; i < G; i++) begin : lane
    // S0: operands
    logic signed [31:0] x_q;
    logic signed [17:0] m_q;
    logic signed [7:0]  y_q;
    logic [3*8-1:0]     sh_q;              // the shift at S0..S2 (S k's at [8*k +: 8])
    logic [4*8-1:0]     a_q;               // the pass-through operand at S0..S3
    logic [5*8-1:0]     b_q;               // the residual operand at S0..S4
    // S1..S3: requantisation; S4: E1
    logic signed [63:0] p_q, r_q;
    logic signed [7:0]  q1_q, e1_q;
    // S5..S8: residual; the result
    logic signed [25:0] ta_q, tb_q;
    logic signed [47:0] t_q;
    logic signed [7:0]  pass5_q, pass6_q, q2_q, q_q;
    logic [7:0] t1, t2;
    logic signed [7:0] a_lane;             // the first operand: lanes past VEC have none
    if (i < V) begin : g_a
      assign a_lane = in_a[8*i +: 8];
    end else begin : g_no_a
      assign a_lane = 8'sd0;
    end

    always_ff @(posedge clk) begin
      logic signed [7:0] a8, b8;
      logic signed [9:0] g10;              // SCALE's gate plus its offset (res_mult_b: 128 for an unsigned gate)
      logic signed [17:0] g18;
      logic signed [31:0] x32;
      a8 = a_lane;
      b8 = in_b[8*i +: 8];
      g10 = 10'(b8) + $signed({2'b00, d.res_mult_b[7:0]});
      g18 = a8 * g10;
      x32 = per_channel ? in_acc[32*i +: 32] : d.op == OP_SCALE ? 32'(g18) : 32'(a8);
      x_q <= x32;
      // every multiplier is below 2^17 (ABI v2); PRELU: a negative accumulator's own; L2NORM: the pixel's
      m_q <= prelu && in_acc[32*i + 31] ? nmult[18*i +: 18] : per_channel ? mult[32*i +: 18]
             : d.op == OP_L2NORM ? in_acc[32*i +: 18] : d.res_mult_a[17:0];
      y_q <= d.op == OP_ADD ? b8 : 8'sd0;
      sh_q <= {sh_q[15:0], per_channel ? shift[8*i +: 8] : d.op == OP_L2NORM ? in_b[8*i +: 8] : d.res_shift};
      a_q <= {a_q[23:0], a8};
      b_q <= {b_q[31:0], b8};
      p_q <= 64'(x_q) * 64'(m_q) + 64'(y_q) * 64'($signed(d.res_mult_b[17:0]));        // S1
      r_q <= p_q + round_half(sh_q[15:8]);                                                   // S2
      q1_q <= shift_sat8(r_q, sh_q[23:16]);                                               // S3
      e1_q <= act1_applies ? activate(d.act1, q1_q, t1) : requantises ? q1_q : $signed(a_q[31:24]);    // S4
      ta_q <= 26'(e1_q) * 26'($signed(d.res_mult_a[17:0]));                               // S5
      tb_q <= 26'($signed(b_q[39:32])) * 26'($signed(d.res_mult_b[17:0]));
      pass5_q <= e1_q;
      t_q <= 48'(ta_q) + 48'(tb_q) + res_half_q;                                          // S6
      pass6_q <= pass5_q;
      q2_q <= !has_res ? pass6_q : res_zero_q ? 8'sd0                                          // S7
              : shift_sat8_within(64'(t_q), 8'(res_s_q), res_hi_q, res_lo_q);
      q_q <= act2_applies ? activate(d.act2, q2_q, t2) : q2_q;                            // S8
    end
    assign out_q[8*i +: 8] = q_q;

    lut_ram #(.B(TB)) table1 (.clk, .we(lut_we1), .waddr(lut_waddr), .wdata(lut_wdata), .raddr(lut_index(q1_q)),
                              .rdata(t1));
    lut_ram #(.B(TB)) table2 (.clk, .we(lut_we2), .waddr(lut_waddr), .wdata(lut_wdata), .raddr(lut_index(q2_q)),
                              .rdata(t2));
  end
endmodule
