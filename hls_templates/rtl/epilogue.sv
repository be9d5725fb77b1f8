// Epilogue: EPI_LATENCY pipelined stages per pixel result of G lanes, one result accepted per cycle.
//   S0  operands  each lane's operands in registers: the accumulator (or the first operand), the product's
//                 multiplier (a PRELU conv's negative one for a negative accumulator); SCALE's gate product's
//                 (the first operand, the gate plus its offset) in the input registers of the DSP48E2 that takes
//                 the residual's first product in other layers (a SCALE has no residual)
//   G1  gate      the gate product, 8 x 10 bits, in the DSP's multiplier register; the other operands wait
//   G2            ... in its output register (dsp_mult.sv)
//   S1  DSP input the product's operands: x (SCALE: the gate product) and m, and b * mb's b
//   S2  product   x * m + 2^(shift-1), one 27 x 18 product (ABI v3: the requantisation takes the accumulator's
//                 low 27 bits, which the compiler keeps every accumulation within), the rounding half in its
//                 output register, and b * mb: each a DSP48E2 with its operand (S1), multiplier (S2) and output
//                 (S3) registers (dsp_mult.sv). b * mb is ADD's second term here and a conv's residual term at S11,
//                 so one DSP makes it for both: the residual's waits seven stages
//   S4  product   x * m in a fabric register (the stage the two halves' sum took before ABI v3)
//   S5  round     + b * mb (ADD)
//   S6  shift     >>> shift's low byte, whether the bits above it are the sign's (a mask of them from S4's shift)
//   S7  saturate  to int8 (0 from a shift of 44 on: |x * m| < 2^43), and its first-table entry
//   S8  act1      clamp or table (a conv's or ADD's first activation) -> E1
//   S9  residual  a conv's residual rescale: e1 * ma + 2^(res_shift-1) (an 8 x 18 product on a DSP48E2,
//                 operand S8, product S9, output S10)
//   S11 sum       + b * mb, made at S1-S3
//   S12 shift     >>> res_shift, the same test (the layer's mask)
//   S13 saturate  (0 from a shift of 48 on)
//   S14 act2      clamp or table -> the result
// Each stage is one of the steps the first epilogue chained in a cycle (requantise, round, saturate, table), the
// products split where a DSP48E2 takes them, so the arithmetic, and so every result, is the same; the split is
// what lets it meet the board clock. The sums are 52 bits, not 64: every multiplier is below 2^17 (ABI v2) and x
// is 27 bits (ABI v3), so |x * m| < 2^43, |x * m + y * n| < 2^44, and from a shift of 44 on the rounded result is 0
// (the program check refuses shifts past 62, which 64 bits would treat otherwise).
// A lane has three DSP48E2s: x * m, b * mb, and e1 * ma, which is SCALE's gate product in a SCALE layer. An engine
// built without the second-operand stage (RESIDUAL 0: a build with no ADD, SCALE or fused residual) has the first
// only and no second table: its stages S9..S13 carry E1 through, so every result leaves as late.
// Tables are 256-entry distributed RAMs, each lane its own copy (lut_ram.sv). The first is read with the value going
// into q1_q, its entry registered beside it, so the act1 pick and the residual DSP's operand start from flip-flops;
// the second is read from q2_q. An engine built without them (TABLES 0: no layer of the build has a table
// activation) gives 0 where a table would be read, and the runtime refuses a table layer there.
import engine_pkg::*;

module epilogue #(
  parameter int V = 16,
  parameter int G = 16,            // lanes: max(PE rows, V)
  parameter int TB = 16,           // activation-table entries per constant beat
  parameter bit PRIMITIVE = 1'b1,  // products on DSP48E2 instances (dsp_mult.sv)
  parameter bit RESIDUAL = 1'b1,   // the second-operand stage: b * mb, e1 * ma, the second table (ADD, SCALE, a
                                   // conv's fused residual; the runtime refuses those layers on an engine without it)
  parameter bit TABLES = 1'b1      // the activation tables (a layer whose act1 or act2 is a table; the runtime
                                   // refuses those on an engine without them): a lane's copies are a third of its LUTs
) (
  input  logic clk,
  input  logic rst_n,
  input  logic [engine_pkg::DESC_BITS-1:0] desc,
  input  logic [G*18-1:0] mult,
  input  logic [G*8-1:0]  shift,
  input  logic [G*18-1:0] nmult,         // a PRELU conv's negative-side multipliers
  input  logic            lut_we1,       // a beat of the layer's first (second) table: into every lane's copy
  input  logic            lut_we2,
  input  logic [$clog2(256 / TB)-1:0] lut_waddr,
  input  logic [8*TB-1:0] lut_wdata,
  input  logic            in_valid,
  input  logic [G*ACC_W-1:0] in_acc,
  input  logic [G*8-1:0]  in_b,
  input  logic [G*18-1:0] in_gate,       // SCALE: each lane's gate plus its offset (res_mult_b: 128 for an unsigned
                                         // gate), the gate product's B (a register in a sliced epilogue's passes)
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
  logic has_res, prelu, per_channel, is_scale, is_l2, is_add;
  // what S7 and S13 give, decoded: a conv's or ADD's table or clamp; else the requantised value, but at S7 for the
  // ops that requantise nothing (MAXPOOL, COPY: their first operand passes through)
  logic e1_lut, e1_clamp, e1_q1, e2_lut, e2_clamp;
  always_ff @(posedge clk) begin
    e1_lut <= TABLES && (d.op == OP_CONV || d.op == OP_ADD) && d.act1 == ACT_LUT;
    e1_clamp <= (d.op == OP_CONV || d.op == OP_ADD) && d.act1 == ACT_CLAMP;
    e1_q1 <= d.op == OP_CONV || d.op == OP_GAP || d.op == OP_SCALE || d.op == OP_L2NORM || d.op == OP_ADD;
    e2_lut <= RESIDUAL && TABLES && ((d.op == OP_CONV && d.flags[F_RESIDUAL]) || d.op == OP_ADD) && d.act2 == ACT_LUT;
    e2_clamp <= RESIDUAL && ((d.op == OP_CONV && d.flags[F_RESIDUAL]) || d.op == OP_ADD) && d.act2 == ACT_CLAMP;
  end
  always_ff @(posedge clk) begin
    has_res <= RESIDUAL && d.op == OP_CONV && d.flags[F_RESIDUAL];
    prelu <= d.op == OP_CONV && d.flags[F_PRELU];
    per_channel <= d.op == OP_CONV || d.op == OP_GAP;
    is_scale <= RESIDUAL && d.op == OP_SCALE;
    is_l2 <= d.op == OP_L2NORM;
    is_add <= RESIDUAL && d.op == OP_ADD;
  end

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
  // The residual rescale saturate(round((a * ma + b * mb) >> s)): the two products, one of them with the rounding
  // half added in its DSP (S9, S10), their sum (S11), the shift saturated (S12, S13; 0 from s = 48 on). The sum
  // needs 27 bits; at 48 bits the rounding shift is exact for every shift (from 27 on the result is 0), so the
  // adder and shifter are 48 bits wide, not 64. The rounding half is the layer's constant, in registers over two
  // stages (the shift's decode, then the half), as it has the cycles before the layer's first result
  logic signed [47:0] res_half_q;
  logic res_zero_q, res_whole_q;
  logic [5:0] res_s_q;
  logic [5:0] res_sm1_q;                  // res_shift - 1, the half's own (res_s_q fans out to every lane)
  logic [23:0] res_dec_q;                 // res_shift decoded (shift_sat8_above_decode), a stage before its mask
  logic [43:0] res_above_q;
  logic signed [17:0] res_ma_q, res_mb_q;
  always_ff @(posedge clk) begin
    res_s_q <= d.res_shift[5:0];
    res_zero_q <= d.res_shift > 8'd47;                  // from 48 on the result is 0 (residual_half's range)
    res_whole_q <= d.res_shift == 8'd0;
    res_dec_q <= shift_sat8_above_decode(res_s_q);
    res_above_q <= shift_sat8_above_pick(res_dec_q);
    res_sm1_q <= d.res_shift[5:0] - 6'd1;
    res_half_q <= res_zero_q || res_whole_q || is_scale ? 48'sd0 : 48'sd1 <<< res_sm1_q;
    res_ma_q <= $signed(d.res_mult_a[17:0]);
    res_mb_q <= $signed(d.res_mult_b[17:0]);
  end

  for (genvar i = 0; i < G; i++) begin : lane
    // S0: operands, in the DSPs' input registers
    logic signed [26:0] x_d;
    logic signed [17:0] m_d;
    logic signed [7:0]  y_d;
    logic [5*8-1:0]     sh_q;              // the shift at S1..S5 (S k+1's at [8*k +: 8])
    logic [7*8-1:0]     a_q;               // the pass-through operand at S1..S7
    // S2..S7: requantisation; S8: E1
    logic signed [47:0] xm_p;              // x * m + the rounding half
    logic signed [25:0] bm_p, yn_q;        // b * mb; ADD's share of it at S4
    logic [6*26-1:0]    bm_q;              // b * mb at S4..S9, the residual's (shift registers)
    logic signed [25:0] bm_last_q;         // ... at S10, a flip-flop: a shift register's output is slow for the sum
    logic signed [47:0] half;
    logic [5:0] half_idx_q;                // the rounding half's bit, at S2
    logic half_v_q;
    logic signed [47:0] xm_q;
    logic signed [51:0] r_q;
    logic [23:0] above1_dec_q;             // S4's shift decoded, at S3
    logic [43:0] above1_q;                 // the bits of r_q above its shifted result's, from S4's shift
    logic [9:0] p1_q;                      // the saturating shifts' first halves
    logic [19:0] p2_q;                     // ... the residual's: coarse, its low three bits left to S13
    // the residual shift's low three bits, the lane's own copy for S13 (the layer's register drove every lane's
    // eight pickers); a reset value per lane keeps synthesis from merging the copies back into one
    logic [2:0] res_lo_q;
    always_ff @(posedge clk)
      if (!rst_n) res_lo_q <= 3'(i);
      else res_lo_q <= d.res_shift[2:0];
    logic z1_q;                            // the shift is 49 or more: the result is 0
    logic signed [7:0]  q1_d, q1_q, e1_q;
    logic [7:0] t1_q;                      // the first table's entry for q1_q, read from S7's result beside it
    // S9..S14: residual; the result
    logic signed [7:0]  e1_d, ta_a;
    logic signed [17:0] ta_b;
    logic signed [47:0] ta_p;              // e1 * ma + 2^(res_shift-1); SCALE: the gate product
    logic signed [47:0] t_q;
    logic signed [7:0]  pass9_q, pass10_q, pass11_q, pass12_q, q2_q, q_q;
    logic [7:0] t1, t2;
    logic signed [7:0] a_lane;             // the first operand: lanes past VEC have none
    if (i < V) begin : g_a
      assign a_lane = in_a[8*i +: 8];
    end else begin : g_no_a
      assign a_lane = 8'sd0;
    end

    // S0: the operands in registers; SCALE's gate product (the first operand times the gate plus its offset,
    // res_mult_b: 128 for an unsigned gate) on a DSP48E2 from the inputs, out at G2, while the others wait two stages
    logic signed [26:0] x0_q, x1_q, x2_q;  // the accumulator (its low 27 bits, ABI v3), or the first operand
    logic signed [17:0] m0_q, m1_q, m2_q;
    logic signed [7:0]  a0_q, a1_q, a2_q, b0_q, b1_q, b2_q;
    logic [7:0]         sh0_q, sh1_q, sh2_q;
    logic signed [17:0] gate_p;
    assign gate_p = ta_p[17:0];            // a lane past VEC has no first operand: its a_lane is 0
    always_ff @(posedge clk) begin
      x0_q <= per_channel ? in_acc[ACC_W*i +: ACC_W] : 27'(a_lane);
      // every multiplier is below 2^17 (ABI v2); PRELU: a negative requantisation input's own; L2NORM: the pixel's
      m0_q <= prelu && in_acc[ACC_W*i + 26] ? nmult[18*i +: 18] : per_channel ? mult[18*i +: 18]
              : is_l2 ? in_acc[ACC_W*i +: 18] : d.res_mult_a[17:0];
      a0_q <= a_lane;
      b0_q <= in_b[8*i +: 8];
      sh0_q <= per_channel ? shift[8*i +: 8] : is_l2 ? in_b[8*i +: 8] : d.res_shift;
      {x1_q, m1_q, a1_q, b1_q, sh1_q} <= {x0_q, m0_q, a0_q, b0_q, sh0_q};                          // G1
      {x2_q, m2_q, a2_q, b2_q, sh2_q} <= {x1_q, m1_q, a1_q, b1_q, sh1_q};                          // G2
    end
    always_comb begin
      x_d = is_scale ? 27'(gate_p) : x2_q;
      m_d = m2_q;
      y_d = b2_q;
      e1_d = e1_lut ? t1_q : e1_clamp ? clamp8(q1_q, d.act_lo, d.act_hi) : e1_q1 ? q1_q : $signed(a_q[55:48]);
      // the residual DSP's operands; SCALE's gate product's from the inputs (e1 is q1 there: e1_q1 is never off
      // in a SCALE, so this select only replaces the pass-through branch, no deeper than e1_d's)
      ta_a = e1_lut ? t1_q : e1_clamp ? clamp8(q1_q, d.act_lo, d.act_hi) : e1_q1 && !is_scale ? q1_q
             : is_scale ? a_lane : $signed(a_q[55:48]);
      ta_b = is_scale ? $signed(in_gate[18*i +: 18]) : res_ma_q;
    end
    // S1-S3 (S8-S10): the products in DSP48E2s, operand, product and output registers; the rounding half of the
    // result's shift goes into the output register, its bit decoded at S2 (none from a shift of 44 on: S7 gives 0)
    always_ff @(posedge clk) begin
      half_v_q <= sh_q[7:0] >= 8'd1 && sh_q[7:0] <= 8'd43;
      half_idx_q <= 6'(sh_q[7:0] - 8'd1);
    end
    always_comb
      for (int k = 0; k < 48; k++) half[k] = half_v_q && 32'(half_idx_q) == k;
    dsp_mult #(.AW(27), .BW(18), .PW(48), .USE_C(1'b1), .PRIMITIVE(PRIMITIVE)) xm_product (
      .clk_i(clk), .en_i(1'b1), .a_i(x_d), .b_i(m_d), .c_i(half), .p_o(xm_p));
    if (RESIDUAL) begin : g_second
      dsp_mult #(.AW(8), .BW(18), .PW(26), .PRIMITIVE(PRIMITIVE)) bm_product (
        .clk_i(clk), .en_i(1'b1), .a_i(y_d), .b_i(res_mb_q), .c_i('0), .p_o(bm_p));
      dsp_mult #(.AW(8), .BW(18), .PW(48), .USE_C(1'b1), .PRIMITIVE(PRIMITIVE)) ta_product (
        .clk_i(clk), .en_i(1'b1), .a_i(ta_a), .b_i(ta_b), .c_i(res_half_q), .p_o(ta_p));
      if (TABLES) begin : g_table2
        // read at q2_q's own bits, its entry q + 128 written with the top bit of its beat's index flipped: no
        // inverter between the register and the read (lut_index's sign flip, on the write side)
        localparam int TWA = $clog2(256 / TB);
        lut_ram #(.B(TB)) table2 (.clk, .we(lut_we2), .waddr(lut_waddr ^ TWA'(1 << (TWA - 1))), .wdata(lut_wdata),
                                  .raddr(q2_q), .rdata(t2));
      end else begin : g_no_table2
        assign t2 = '0;
      end
    end else begin : g_first_only
      assign bm_p = '0;
      assign ta_p = '0;
      assign t2 = '0;
      logic unused_second;                 // the stage's operands, made for every engine, read by none here
      assign unused_second = ^{lut_we2, res_half_q, res_mb_q, y_d, ta_a, ta_b};
    end

    always_ff @(posedge clk) begin
      sh_q <= {sh_q[31:0], sh2_q};
      a_q <= {a_q[47:0], a2_q};
      xm_q <= xm_p;                                                                       // S4
      yn_q <= is_add ? bm_p : 26'sd0;
      bm_q <= {bm_q[5*26-1:0], bm_p};
      above1_dec_q <= shift_sat8_above_decode(sh_q[21:16]);
      above1_q <= shift_sat8_above_pick(above1_dec_q);
      r_q <= 52'(xm_q) + 52'(yn_q);                                                       // S5
      p1_q <= shift_sat8_parts(r_q, sh_q[37:32], above1_q);                               // S6
      z1_q <= sh_q[39:32] > 8'd43;
      q1_q <= q1_d;                                                                       // S7
      t1_q <= t1;
      e1_q <= e1_d;                                                                       // S8
      pass9_q <= e1_q;                                                                    // S9
      pass10_q <= pass9_q;                                                                // S10
      t_q <= ta_p + 48'(bm_last_q);                                                       // S11
      pass11_q <= pass10_q;
      p2_q <= shift_sat8_coarse(52'(t_q), res_s_q[5:3], res_above_q);                      // S12
      pass12_q <= pass11_q;
      q2_q <= !has_res ? pass12_q : res_zero_q ? 8'sd0
              : shift_sat8_finish(shift_sat8_fine(p2_q, res_lo_q));                           // S13
      q_q <= e2_lut ? t2 : e2_clamp ? clamp8(q2_q, d.act_lo, d.act_hi) : q2_q;             // S14
    end
    assign q1_d = z1_q ? 8'sd0 : shift_sat8_finish(p1_q);
    always_ff @(posedge clk)                 // the reset keeps it out of the shift register (an SRL has none)
      if (!rst_n) bm_last_q <= '0;
      else bm_last_q <= $signed(bm_q[5*26 +: 26]);
    assign out_q[8*i +: 8] = q_q;

    if (TABLES) begin : g_table1
      lut_ram #(.B(TB)) table1 (.clk, .we(lut_we1), .waddr(lut_waddr), .wdata(lut_wdata), .raddr(lut_index(q1_d)),
                                .rdata(t1));
    end else begin : g_no_table1
      assign t1 = '0;
    end
  end
  if (!TABLES) begin : g_no_tables
    logic unused_tables;                 // the table beats, made for every engine, read by none here
    assign unused_tables = ^{lut_we1, lut_we2, lut_waddr, lut_wdata};
  end
endmodule
