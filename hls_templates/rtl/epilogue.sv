// Epilogue, two pipelined stages per pixel result of G lanes: E1 requantises a conv or global-average-pool
// accumulator (a PRELU conv's negative one by its negative-side multiplier), SCALE's gated value or ADD's two operands (int64 products, rounding shift, saturation) and
// applies act1; E2 adds a conv's residual operand and applies act2. Activations are a clamp or a 256-entry table,
// each lane's own copy in distributed RAM (lut_ram.sv).
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
  engine_pkg::desc_t d;
  assign d = desc;
  wire has_res = d.op == OP_CONV && d.flags[F_RESIDUAL];
  wire prelu = d.op == OP_CONV && d.flags[F_PRELU];

  function automatic logic signed [7:0] activate(input logic [7:0] kind, input logic signed [7:0] q,
                                                 input logic signed [7:0] looked_up);
    if (kind == ACT_CLAMP) activate = clamp8(q, d.act_lo, d.act_hi);
    else if (kind == ACT_LUT) activate = looked_up;
    else activate = q;
  endfunction

  logic e1_valid;
  logic [G*8-1:0] e1_q, e1_b;
  logic [31:0] e1_oaddr;
  logic [15:0] e1_n, e1_y, e1_x;
  assign busy = e1_valid || out_valid;

  // each stage's value before its activation, and what the lane's tables hold for it
  logic [G*8-1:0] q1_pre, q2_pre, t1, t2;
  for (genvar i = 0; i < G; i++) begin : tables
    wire [7:0] i1 = {~q1_pre[8*i+7], q1_pre[8*i +: 7]};     // lut_index
    wire [7:0] i2 = {~q2_pre[8*i+7], q2_pre[8*i +: 7]};
    lut_ram #(.B(TB)) table1 (.clk, .we(lut_we1), .waddr(lut_waddr), .wdata(lut_wdata), .raddr(i1),
                              .rdata(t1[8*i +: 8]));
    lut_ram #(.B(TB)) table2 (.clk, .we(lut_we2), .waddr(lut_waddr), .wdata(lut_wdata), .raddr(i2),
                              .rdata(t2[8*i +: 8]));
  end

  // E1 per lane: one 32x18 product (a conv or GAP accumulator by its requantisation multiplier, SCALE's x * g or
  // ADD's first operand by res_mult_a) plus ADD's second product, one rounding shift, act1 for conv and ADD;
  // E2: a conv's residual rescale (two 8x32 products, 48 bits) and act2. Two table lookups per lane, not three.
  always_comb
    for (int i = 0; i < G; i++) begin
      logic signed [7:0] a8, b8;
      logic signed [9:0] g10;          // SCALE's gate plus its offset (res_mult_b: 128 for an unsigned gate)
      logic signed [17:0] g18;
      logic signed [31:0] x32;
      logic signed [17:0] m18;         // every multiplier is below 2^17 (ABI v2)
      logic [7:0] s;
      logic per_channel;
      a8 = i < V ? in_a[8*i +: 8] : 8'sd0;
      b8 = in_b[8*i +: 8];
      g10 = 10'(b8) + $signed({2'b00, d.res_mult_b[7:0]});
      g18 = a8 * g10;
      per_channel = d.op == OP_CONV || d.op == OP_GAP;
      x32 = per_channel ? in_acc[32*i +: 32] : d.op == OP_SCALE ? 32'(g18) : 32'(a8);
      m18 = prelu && x32[31] ? nmult[18*i +: 18] : per_channel ? mult[32*i +: 18]
          : d.op == OP_L2NORM ? in_acc[32*i +: 18] : d.res_mult_a[17:0];     // PRELU: a negative acc's own
      s = per_channel ? shift[8*i +: 8] : d.op == OP_L2NORM ? in_b[8*i +: 8] : d.res_shift;  // L2NORM: the pixel's
      q1_pre[8*i +: 8] = scale_sum(x32, m18, d.op == OP_ADD ? b8 : 8'sd0, d.res_mult_b[17:0], s);
      q2_pre[8*i +: 8] = has_res ? rescale2(e1_q[8*i +: 8], e1_b[8*i +: 8], d.res_mult_a[17:0], d.res_mult_b[17:0],
                                            d.res_shift) : e1_q[8*i +: 8];
    end

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      e1_valid <= 1'b0; out_valid <= 1'b0;
    end else begin
      e1_valid <= in_valid;
      e1_b <= in_b;
      e1_oaddr <= in_oaddr; e1_n <= in_n; e1_y <= in_y; e1_x <= in_x;
      for (int i = 0; i < G; i++) begin
        logic signed [7:0] q;
        q = q1_pre[8*i +: 8];
        if (d.op == OP_CONV || d.op == OP_ADD) q = activate(d.act1, q, t1[8*i +: 8]);
        else if (d.op != OP_CONV && d.op != OP_GAP && d.op != OP_SCALE && d.op != OP_L2NORM)
          q = i < V ? in_a[8*i +: 8] : 8'sd0;                     // other ops pass their input
        e1_q[8*i +: 8] <= q;
      end
      out_valid <= e1_valid;
      out_oaddr <= e1_oaddr; out_n <= e1_n; out_y <= e1_y; out_x <= e1_x;
      for (int i = 0; i < G; i++) begin
        logic signed [7:0] q;
        q = q2_pre[8*i +: 8];
        if (has_res || d.op == OP_ADD) q = activate(d.act2, q, t2[8*i +: 8]);
        out_q[8*i +: 8] <= q;
      end
    end
  end
endmodule
