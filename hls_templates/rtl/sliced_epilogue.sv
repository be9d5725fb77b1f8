// The epilogue at E of the G result lanes, applied to a pixel result in G/E passes, one a cycle into its pipeline. Most layers give the
// epilogue a result every few cycles (a 3x3 conv over 2 beats of input channels: one per 18), so a narrower
// epilogue costs cycles only on layers that produce a result per cycle or two (1x1 convs over VEC channels,
// element-wise ops) and saves its multipliers and table lookups (most of a unit's LUTs) on every layer.
// E = G is the full-width epilogue with no pass sequencing.
import engine_pkg::*;

module sliced_epilogue #(
  parameter int V = 16,
  parameter int G = 16,
  parameter int E = 16,             // lanes per pass; divides G
  parameter int PM = 1,             // tiles whose parameters come in (an item names its tile)
  parameter int TB = 16,            // activation-table entries per constant beat
  parameter bit PRIMITIVE = 1'b1,   // products on DSP48E2 instances (dsp_mult.sv)
  parameter bit RESIDUAL = 1'b1,    // the epilogue's second-operand stage (epilogue.sv)
  parameter bit TABLES = 1'b1       // the epilogue's activation tables (epilogue.sv)
) (
  input  logic clk,
  input  logic rst_n,
  input  logic [engine_pkg::DESC_BITS-1:0] desc,
  input  logic [PM*G*18-1:0] mult,
  input  logic [PM*G*8-1:0]  shift,
  input  logic [PM*G*18-1:0] nmult,
  input  logic            lut_we1,
  input  logic            lut_we2,
  input  logic [$clog2(256 / TB)-1:0] lut_waddr,
  input  logic [8*TB-1:0] lut_wdata,
  output logic            in_ready,     // an item popped this cycle is taken
  input  logic            in_valid,
  input  logic [(PM > 1 ? $clog2(PM) : 1)-1:0] in_tile,
  input  logic [G*ACC_W-1:0] in_acc,
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
  localparam int P = G / E;
  engine_pkg::desc_t d;
  assign d = desc;
  // SCALE's gate plus its offset (res_mult_b: 128 for an unsigned gate), each lane's, the epilogue's gate product's
  // B: the sum is made here, so the passes below pick it from registers
  logic signed [9:0] gate_off_q;
  logic [G*18-1:0] gate;
  always_ff @(posedge clk) gate_off_q <= $signed({2'b00, d.res_mult_b[7:0]});
  always_comb
    for (int i = 0; i < G; i++) gate[18*i +: 18] = 18'($signed(in_b[8*i +: 8])) + 18'(gate_off_q);

  if (P == 1) begin : full
    assign in_ready = 1'b1;
    epilogue #(.V(V), .G(G), .TB(TB), .PRIMITIVE(PRIMITIVE), .RESIDUAL(RESIDUAL),
              .TABLES(TABLES)) lanes (
      .clk, .rst_n, .desc, .mult(mult[18*G*in_tile +: 18*G]), .shift(shift[8*G*in_tile +: 8*G]),
      .nmult(nmult[18*G*in_tile +: 18*G]), .lut_we1, .lut_we2,
      .lut_waddr, .lut_wdata,
      .in_valid, .in_acc, .in_b, .in_gate(gate), .in_a, .in_oaddr, .in_n,
      .in_y, .in_x, .out_valid, .out_q, .out_oaddr, .out_n, .out_y, .out_x, .busy);
  end else begin : passes
    localparam int KW = $clog2(P);
    logic active;
    logic [KW-1:0] k;
    logic [G*ACC_W-1:0] acc;
    logic [G*8-1:0] b, a;
    logic [G*18-1:0] g;
    logic [31:0] oaddr;
    logic [15:0] n, y, x;
    // the pass of each result in the epilogue's stages (k_q[EPI_LATENCY-1]: the one leaving it), and the results
    // gathered so far
    logic [EPI_LATENCY*KW-1:0] k_q;
    wire [KW-1:0] k_out = k_q[(EPI_LATENCY-1)*KW +: KW];
    logic [G*8-1:0] gathered;
    logic s_valid, s_busy;
    logic [E*8-1:0] s_q;
    logic [31:0] s_oaddr;
    logic [15:0] s_n, s_y, s_x;

    // in_ready is !active || k == P - 1, kept in a register a cycle ahead: the queue's pop follows from it, and k
    // also selects every lane's operands (a load of 2,146 on 4 x 16 x 16 with 8 lanes: 4.0 ns through the pop)
    logic ready_q;
    assign in_ready = ready_q;

    // The pass's slices among P (a result's) or PM x P (the tables') candidates, picked by one-hot registers kept
    // beside k (k_sel: k; idx_sel: {tile, k}, G = P x E, both powers of two) as an AND-OR of each candidate with its
    // select bit, two LUTs deep for 16 candidates. Not by part-selects at computed offsets, which yosys builds as
    // shifters over the whole vector and, for the 18-bit entries, a multiply on a DSP48E2 without registers
    // (2 x 16 x 16 with an 8-lane epilogue: 9 LUTs and the DSP from k, 124 MHz); not by a chain of compares of k,
    // which it kept as a chain (4 x 16 x 8 with 4 lanes, 16 candidates: 9 LUTs from k at a load of 1,059, 178 MHz)
    logic [P-1:0] k_sel;
    logic [PM*P-1:0] idx_sel;
    logic [ACC_W*E-1:0] acc_k;
    logic [18*E-1:0] mult_k;
    logic [8*E-1:0] b_k, a_k, shift_k;
    logic [18*E-1:0] g_k;
    logic [18*E-1:0] nmult_k;
    always_comb begin
      acc_k = '0; b_k = '0; a_k = '0; g_k = '0;
      for (int j = 0; j < P; j++) begin
        acc_k = acc_k | (acc[ACC_W*E*j +: ACC_W*E] & {ACC_W*E{k_sel[j]}});
        b_k = b_k | (b[8*E*j +: 8*E] & {8*E{k_sel[j]}});
        g_k = g_k | (g[18*E*j +: 18*E] & {18*E{k_sel[j]}});
        a_k = a_k | (a[8*E*j +: 8*E] & {8*E{k_sel[j]}});
      end
      mult_k = '0; shift_k = '0; nmult_k = '0;
      for (int j = 0; j < PM * P; j++) begin
        mult_k = mult_k | (mult[18*E*j +: 18*E] & {18*E{idx_sel[j]}});
        shift_k = shift_k | (shift[8*E*j +: 8*E] & {8*E{idx_sel[j]}});
        nmult_k = nmult_k | (nmult[18*E*j +: 18*E] & {18*E{idx_sel[j]}});
      end
    end

    epilogue #(.V(E), .G(E), .TB(TB), .PRIMITIVE(PRIMITIVE), .RESIDUAL(RESIDUAL),
              .TABLES(TABLES)) lanes (
      .clk, .rst_n, .desc, .mult(mult_k), .shift(shift_k), .nmult(nmult_k), .lut_we1, .lut_we2,
      .lut_waddr, .lut_wdata,
      .in_valid(active), .in_acc(acc_k), .in_b(b_k), .in_gate(g_k), .in_a(a_k),
      .in_oaddr(oaddr), .in_n(n), .in_y(y), .in_x(x), .out_valid(s_valid), .out_q(s_q), .out_oaddr(s_oaddr),
      .out_n(s_n), .out_y(s_y), .out_x(s_x), .busy(s_busy));

    always_ff @(posedge clk) begin
      if (!rst_n) begin
        active <= 1'b0; k <= '0; out_valid <= 1'b0; ready_q <= 1'b1;
      end else begin
        ready_q <= !(in_valid && ready_q) && (!active || k == KW'(P - 1) || k == KW'(P - 2));
        k_q <= {k_q[(EPI_LATENCY-1)*KW-1:0], k};
        if (in_valid && in_ready) begin
          active <= 1'b1; k <= '0;
        end else if (active) begin
          if (k == KW'(P - 1)) active <= 1'b0;
          else k <= k + 1'b1;
        end
        out_valid <= 1'b0;
        if (s_valid) begin
          gathered[8*E*k_out +: 8*E] <= s_q;
          if (k_out == KW'(P - 1)) begin
            out_valid <= 1'b1;
            out_q <= {s_q, gathered[8*E*(P-1)-1:0]};
            out_oaddr <= s_oaddr; out_n <= s_n; out_y <= s_y; out_x <= s_x;
          end
        end
      end
    end
    // the operands load whenever an item could be taken (ready_q), popped or not: none is read before in_valid
    // starts a pass, and while one runs ready_q is up only in its last pass's cycle, whose operands are read as
    // they are replaced. Their enable (a load of hundreds) is then a register, not the pop's LUT
    // the selects load with them (a pass's start takes the values of its cycle; while one runs they shift, and
    // its last cycle reads them as they load), so neither the pop nor the reset is among their enables
    always_ff @(posedge clk)
      if (ready_q) begin
        k_sel <= P'(1);
        idx_sel <= (PM*P)'(1) << ((PM > 1 ? 32'(in_tile) : 32'd0) * P);
      end else if (active) begin
        k_sel <= k_sel << 1;
        idx_sel <= idx_sel << 1;
      end
    always_ff @(posedge clk)
      if (ready_q) begin
        acc <= in_acc; b <= in_b; g <= gate;
        a <= '0;
        a[8*V-1:0] <= in_a;                   // lanes past VEC have no first operand
        oaddr <= in_oaddr; n <= in_n; y <= in_y; x <= in_x;
      end
    assign busy = active || s_busy || out_valid;
  end
endmodule
