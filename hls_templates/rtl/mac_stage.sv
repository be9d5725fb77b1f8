// MAC stage: takes one tagged activation beat per cycle. C1 reads the weight row (R x V bytes) and hands the
// beat to the shared MAC array (mac_array.sv, pixel 0), whose sums per output channel serve a standard conv
// (R x V MACs); a depthwise conv multiplies lane by lane here;
// C2 accumulates (bias first) and, when the tag says a pixel is complete, hands the pixel (C3, a register) to the
// epilogue with its residual or second operand. Ready only while the epilogue queue has room for every stage.
import engine_pkg::*;

module mac_stage #(
  parameter int V = 16,
  parameter bit PACK = 1,          // the lane products two per multiplier (mac_pair)
  parameter int R = 16,
  parameter int WAW = 10,          // weight RAM address bits
  parameter bit LANE_PRODUCTS = 1  // the lane-by-lane products and the L2 norm's factor (a depthwise conv off the
                                   // window path, L2NORM); 0 in a build with neither: the runtime refuses them
) (
  input  logic clk,
  input  logic rst_n,
  input  logic [7:0]  nl,                    // channels of a pixel result: R (standard conv) or V
  input  logic [15:0] c0,                    // first output channel of the tile
  input  logic [(R > V ? R : V)*ACC_W-1:0] bias,
  input  logic        l2,                    // an L2NORM layer: K_GAP beats sum squares, K_COPY beats are scaled
  input  logic signed [31:0] l2_mult,        // its 1 / s_out (res_mult_a, res_shift)
  input  logic [7:0]  l2_shift,
  // tagged beats from the reader
  input  logic        ab_valid,
  output logic        ab_ready,
  input  logic [8*V-1:0] ab_data,
  input  logic [engine_pkg::TAG_BITS-1:0] ab_tag_bits,
  input  logic [23:0] ab_idx,
  input  logic        ab_last,
  input  logic        room,                  // the epilogue queue can take what C1 .. C3 hold
  // weight RAM read port
  output logic [WAW-1:0] w_raddr,
  input  logic [8*V-1:0] w_rdata,           // its first row: a depthwise beat's weights (the array reads all)
  // the shared MAC array: C1's beat in, its R sums out
  output logic [8*V-1:0] array_x,
  input  logic [R*ACC_W-1:0] array_sums,
  // finished pixels
  output logic        item_valid,
  output logic [(R > V ? R : V)*ACC_W-1:0] item_acc,
  output logic [(R > V ? R : V)*8-1:0]  item_b,
  output logic [8*V-1:0] item_a,
  output logic [31:0] item_oaddr,
  output logic [15:0] item_n, item_y, item_x,
  output logic        busy,
  output logic        mac_beat               // a beat went through the array this cycle
);
  localparam int DW = 8 * V;
  localparam int G = R > V ? R : V;
  `include "engine_functions.svh"
  `include "rsqrt_rom.svh"

  // (K, sh) of an L2NORM pixel from its sum of squares (l2norm_factor in fpga_runtime/abi.py), over L2_STAGES
  // cycles after the sum: leading zeros, normalise, the reciprocal-square-root ROM, the multiply (a DSP48E2
  // with its multiplier and output registers), round. The pixel's scaled beats, which read the factor, are held
  // back at the input for as long.
  localparam int L2_STAGES = 6;
  engine_pkg::tag_t ab_tag;
  assign ab_tag = ab_tag_bits;
  logic [2:0] l2_hold_q;                   // cycles the factor of the pixel just summed still takes
  logic l2_free_q;                         // l2_hold_q == 0, set with it: the ready starts from flip-flops
  assign ab_ready = room && l2_free_q;
  wire ab_fire = ab_valid && ab_ready;
  always_ff @(posedge clk) begin
    if (!rst_n) begin
      l2_hold_q <= '0;
      l2_free_q <= 1'b1;
    end else if (ab_fire && l2 && ab_tag.kind == K_GAP && ab_last) begin
      l2_hold_q <= 3'(L2_STAGES);
      l2_free_q <= 1'b0;
    end else if (!l2_free_q) begin
      l2_hold_q <= l2_hold_q - 3'd1;
      l2_free_q <= l2_hold_q == 3'd1;
    end
  end
  assign w_raddr = WAW'(ab_tag.waddr) + WAW'(ab_idx);

  // C1 -> P1 .. P(PS) -> C2: the array's sums of C1's beat are out at P(PS) (engine_pkg::ARRAY_LATENCY after C1)
  localparam int PS = ARRAY_LATENCY;
  localparam int TB = engine_pkg::TAG_BITS;
  logic c1_valid, c1_last;
  logic [DW-1:0] c1_data;
  engine_pkg::tag_t c1_tag;
  logic [23:0] c1_idx;
  logic [PS-1:0] p_valid, p_last;          // P1 .. P(PS) at bit 0 .. PS-1, data and tags alike
  logic [PS*DW-1:0] p_data;
  logic [PS*TB-1:0] p_tags;
  logic [PS*24-1:0] p_idx;
  logic [PS-1:0] p_idx0;                   // ... its beat is the pixel's first (p_idx is 0): compared at P1, so C2's
                                           // picks do not wait on a 24-bit compare
  engine_pkg::tag_t pl_tag, pn_tag;
  assign pl_tag = p_tags[(PS-1)*TB +: TB];
  assign pn_tag = p_tags[(PS-2)*TB +: TB];
  engine_pkg::tag_t pm_tag;                // ... and a stage before
  assign pm_tag = p_tags[(PS-3)*TB +: TB];
  // what C2 sums for the beat at P(PS), decoded a stage before: the select over every lane's 32 bits starts from
  // flip-flops
  logic sel_mac_q, sel_dw_q, sel_sq_q;
  wire [DW-1:0] pl_data = p_data[(PS-1)*DW +: DW];
  // per lane one multiplier pair: a depthwise beat's product x * w and an L2NORM beat's square x * x share x;
  // out at P3 (mac_pair), then waiting for the array's sums (depthwise) or summed in two steps (squares)
  localparam int DD = PS - 3;
  localparam int NG = (V + 3) / 4;
  logic [V*16-1:0] dw_p, sq_p;
  logic [DD*V*16-1:0] dw_q;                // P4 .. P(PS)
  logic signed [17:0] sq_part_q[NG];       // P4: the squares summed by groups of four lanes
  logic signed [31:0] sq_q[PS-4];          // P5 .. P(PS): their sum
  wire [V*16-1:0] dw_out = dw_q[(DD-1)*V*16 +: V*16];
  if (LANE_PRODUCTS) begin : g_products
    for (genvar v = 0; v < V; v++) begin : g_lane
      mac_pair #(.PACK(PACK)) lane_products (.clk_i(clk), .en_i(1'b1), .x_i(c1_data[8*v +: 8]),
        .w_hi_i(c1_data[8*v +: 8]), .w_lo_i(w_rdata[8*v +: 8]), .p_hi_o(sq_p[16*v +: 16]),
        .p_lo_o(dw_p[16*v +: 16]));
    end
  end else begin : g_no_products
    assign sq_p = '0;
    assign dw_p = '0;
    logic unused_weights;                  // a depthwise beat's weights: the lane products' alone
    assign unused_weights = ^w_rdata;
  end
  logic c2_valid, c2_last;
  logic c2_start;                          // the beat starts its pixel's sums (decoded at P3)
  // what C2 does with its accumulators, decoded with c2_start: add the beat's sums (MAC, DW, GAP) to the bias
  // (a MAC or DW pixel's first beat), to 0 (a GAP pixel's) or to the accumulators; no tag decode before the sums
  logic c2_add_q, c2_from_bias_q, c2_from_zero_q;
  logic [31:0] pl_oaddr_q;                 // ... at the last P stage
  logic [16:0] cp_lo_q;                    // ... its halves a stage before
  logic [15:0] cp_hi_q;
  logic [31:0] c2_oaddr;                   // where its result goes (a copied beat's own place)
  engine_pkg::tag_t c2_tag;
  localparam int NS = G * 8 / DW;          // beats of a pixel's result
  // where a residual (K_RES) or second operand (K_B) beat goes in the result, decoded a stage ahead: whole beats
  // into slot k (c2_take_q[k]; K_B and a residual of nl >= V), or a narrow residual's lanes shifted down to the
  // tile's first channel (c2_take_sh_q, from c2_data_sh: c0 does not move while a tile's beats are in flight)
  logic [NS-1:0] c2_take_q;
  logic c2_take_sh_q;
  logic [DW-1:0] c2_data_sh;
  logic [DW-1:0] pl_data_sh;               // ... shifted by whole words of four lanes, a stage ahead (the shift over
                                           // two stages, a 4:1 pick each)
  logic [DW-1:0] c2_data;
  logic signed [31:0] c2_sum[G];
  logic signed [31:0] acc[G];
  logic [G*8-1:0] res;
  logic [DW-1:0] abuf;

  assign array_x = c1_data;

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      c1_valid <= 1'b0; p_valid <= '0; c2_valid <= 1'b0;
    end else begin
      c1_valid <= ab_fire;
      c1_data <= ab_data; c1_tag <= ab_tag; c1_idx <= ab_idx; c1_last <= ab_last;
      p_valid <= {p_valid[PS-2:0], c1_valid};
      p_last <= {p_last[PS-2:0], c1_last};
      p_data <= {p_data[(PS-1)*DW-1:0], c1_data};
      p_tags <= {p_tags[(PS-1)*TB-1:0], TB'(c1_tag)};
      sel_mac_q <= pn_tag.kind == K_MAC;
      sel_dw_q <= LANE_PRODUCTS && pn_tag.kind == K_DW;
      sel_sq_q <= LANE_PRODUCTS && l2 && pn_tag.kind == K_GAP;
      p_idx <= {p_idx[(PS-1)*24-1:0], c1_idx};
      p_idx0 <= {p_idx0[PS-2:0], c1_idx == 24'd0};
      dw_q <= {dw_q[(DD-1)*V*16-1:0], dw_p};
      for (int g = 0; g < NG; g++) begin
        logic signed [17:0] a;
        a = '0;
        for (int v = 4 * g; v < 4 * g + 4 && v < V; v++) a = a + 18'($signed(sq_p[16*v +: 16]));
        sq_part_q[g] <= a;
      end
      begin
        logic signed [31:0] t;
        t = '0;
        for (int g = 0; g < NG; g++) t = t + 32'(sq_part_q[g]);
        sq_q[0] <= t;
        for (int k = 1; k < PS - 4; k++) sq_q[k] <= sq_q[k - 1];
      end
      c2_valid <= p_valid[PS-1];
      c2_data <= pl_data; c2_tag <= pl_tag; c2_last <= p_last[PS-1];
      for (int k = 0; k < NS; k++)
        c2_take_q[k] <= (pl_tag.kind == K_RES && nl >= 8'(V) && p_idx[(PS-1)*24 +: 8] == 8'(k))
                        || (pl_tag.kind == K_B && k == 0);
      c2_take_sh_q <= pl_tag.kind == K_RES && nl < 8'(V);
      pl_data_sh <= p_data[(PS-2)*DW +: DW] >> (8 * (c0 & 16'(V - 1) & ~16'd3));
      c2_data_sh <= pl_data_sh >> (8 * (c0 & 16'(V - 1) & 16'd3));
      c2_start <= pl_tag.first && p_idx0[PS-1];
      c2_add_q <= pl_tag.kind == K_MAC || pl_tag.kind == K_DW || pl_tag.kind == K_GAP;
      c2_from_bias_q <= (pl_tag.kind == K_MAC || pl_tag.kind == K_DW) && pl_tag.first && p_idx0[PS-1];
      c2_from_zero_q <= pl_tag.kind == K_GAP && pl_tag.first && p_idx0[PS-1];
      // a copied beat's own place, summed over the two stages ahead, a half each (the stages shift every cycle)
      begin
        logic [31:0] off;
        off = 32'(p_idx[(PS-3)*24 +: 24]) * 32'(V);
        cp_lo_q <= 17'(pm_tag.oaddr[15:0]) + 17'(off[15:0]);
        cp_hi_q <= pm_tag.oaddr[31:16] + off[31:16];
      end
      pl_oaddr_q <= pn_tag.kind == K_COPY ? {cp_hi_q + 16'(cp_lo_q[16]), cp_lo_q[15:0]} : pn_tag.oaddr;
      c2_oaddr <= pl_oaddr_q;
      for (int i = 0; i < G; i++) begin
        logic signed [31:0] s;
        s = '0;
        if (sel_mac_q) begin
          if (i < R) s = 32'($signed(array_sums[ACC_W*i +: ACC_W]));
        end else if (sel_dw_q) begin
          if (i < V) s = 32'($signed(dw_out[16*i +: 16]));
        end else if (sel_sq_q) begin
          if (i == 0) s = sq_q[PS-5];
        end else if (i < V) begin
          s = 32'($signed(pl_data[8*i +: 8]));
        end
        c2_sum[i] <= s;
      end
    end
  end

  // C2: accumulate and hand the finished pixel to the epilogue
  logic signed [31:0] acc_next[G];
  logic [G*8-1:0] res_next;
  logic [DW-1:0] abuf_next;
  always_comb begin
    logic start;
    start = c2_start;
    res_next = res;
    abuf_next = abuf;
    for (int k = 0; k < NS; k++) if (c2_take_q[k]) res_next[k * DW +: DW] = c2_data;
    if (c2_take_sh_q) res_next[DW-1:0] = c2_data_sh;
    for (int i = 0; i < G; i++)
      acc_next[i] = !c2_add_q ? acc[i]
                    : (c2_from_bias_q ? 32'($signed(bias[ACC_W*i +: ACC_W])) : c2_from_zero_q ? 32'sd0 : acc[i])
                      + c2_sum[i];
    case (c2_tag.kind)
      K_POOL: for (int v = 0; v < V; v++)
                abuf_next[8*v +: 8] = (start || $signed(c2_data[8*v +: 8]) > $signed(abuf[8*v +: 8]))
                                      ? c2_data[8*v +: 8] : abuf[8*v +: 8];
      K_A, K_COPY: abuf_next = c2_data;
      default: ;
    endcase
  end
  // an L2NORM pixel's factor, from the last beat of its sum: ready for its scaled beats, which follow
  logic [ACC_W-1:0] l2_k;                  // K < 2^16: T[i] < 2^22, mult < 2^17
  logic [7:0] l2_sh;
  // the sum's normalisation by its leading zeros rounded down to even (z), in two steps: whole zero bytes (c, at
  // most 3), then the top byte's even leading zeros (0 to 6), z = 8c + those (a sum of 0 is zeroed at the end)
  logic [31:0] l2_ss_q, l2_sc_q;
  logic [1:0] l2_c_q;
  logic [9:0] l2_u_q;                      // the normalised sum's top bits: the ROM's index
  logic [5:0] l2_z2_q, l2_z3_q, l2_z4_q, l2_z5_q;
  logic l2_zero_q, l2_zero2_q, l2_zero3_q, l2_zero4_q, l2_zero5_q;
  logic [22:0] l2_rom;
  assign l2_rom = rsqrt_rom(l2_u_q);
  logic signed [41:0] l2_p;                // T[i] * mult
  logic signed [23:0] l2_a;
  logic signed [17:0] l2_b;
  assign l2_a = {1'b0, l2_rom};
  assign l2_b = l2_mult[17:0];
  // T[i] * mult on a DSP48E2 (operand, product and output registers): the ROM's word goes into its A register
  if (LANE_PRODUCTS) begin : g_l2_factor
    dsp_mult #(.AW(24), .BW(18), .PW(42), .PRIMITIVE(PACK)) l2_product (
      .clk_i(clk), .en_i(1'b1), .a_i(l2_a), .b_i(l2_b), .c_i('0), .p_o(l2_p));
  end else begin : g_no_l2_factor
    assign l2_p = '0;
    logic unused_factor;
    assign unused_factor = ^{l2_a, l2_b};
  end
  always_ff @(posedge clk) begin
    logic signed [41:0] k;
    logic [1:0] c;
    logic [2:0] r;
    if (c2_valid) begin
      for (int i = 0; i < G; i++) acc[i] <= acc_next[i];
      res <= res_next;
      abuf <= abuf_next;
      if (l2 && c2_tag.kind == K_GAP && c2_last) l2_ss_q <= acc_next[0];
    end
    c = l2_ss_q[31:8] == 24'd0 ? 2'd3 : l2_ss_q[31:16] == 16'd0 ? 2'd2 : l2_ss_q[31:24] == 8'd0 ? 2'd1 : 2'd0;
    l2_c_q <= c;                                                              // 1
    l2_sc_q <= l2_ss_q << {c, 3'd0};
    r = l2_sc_q[31:30] != 2'd0 ? 3'd0 : l2_sc_q[29:28] != 2'd0 ? 3'd2 : l2_sc_q[27:26] != 2'd0 ? 3'd4 : 3'd6;
    l2_zero_q <= l2_ss_q == 32'd0;
    l2_u_q <= 10'((l2_sc_q << r) >> 22);                                     // 2; the ROM and A: 3, M: 4, P: 5
    l2_z2_q <= {1'b0, l2_c_q, r};
    {l2_z3_q, l2_z4_q, l2_z5_q} <= {l2_z2_q, l2_z3_q, l2_z4_q};
    {l2_zero2_q, l2_zero3_q, l2_zero4_q, l2_zero5_q} <= {l2_zero_q, l2_zero2_q, l2_zero3_q, l2_zero4_q};
    k = (l2_p + 42'sd4194304) >>> 23;                                         // 6: round(T[i] * mult / 2^23)
    l2_k <= l2_zero5_q ? '0 : k[ACC_W-1:0];
    l2_sh <= l2_zero5_q ? 8'd0 : 8'(l2_shift + 8'd14 - 8'(l2_z5_q >> 1));
  end
  // C3: the finished pixel in registers, so the epilogue queue's write starts from flip-flops, not from C2's sums
  always_ff @(posedge clk) begin
    item_valid <= rst_n && c2_valid && (c2_tag.kind == K_COPY || (c2_tag.last && c2_last));
    for (int i = 0; i < G; i++) item_acc[ACC_W*i +: ACC_W] <= LANE_PRODUCTS && l2 ? l2_k : acc_next[i][ACC_W-1:0];
    for (int i = 0; i < G; i++) item_b[8*i +: 8] <= LANE_PRODUCTS && l2 ? l2_sh : res_next[8*i +: 8];
    item_a <= abuf_next;
    item_oaddr <= c2_oaddr;
    item_n <= c2_tag.n;
    item_y <= c2_tag.y;
    item_x <= c2_tag.x;
  end
  assign busy = c1_valid || |p_valid || c2_valid || item_valid;
  assign mac_beat = c2_valid && (c2_tag.kind == K_MAC || c2_tag.kind == K_DW);
endmodule
