// A fused residual's operands on their way to the epilogue: they come down the activation stream as beats,
// wait in a queue of DEPTH beats, and leave as whole pixels (BEATS beats each) from a register, with a spare
// behind it. The pixel out, its valid flag and the queue's ready are registers, so neither the window path's drain
// (and through it the array's advance) nor the activation stream's ready tests a queue pointer. A collector
// gathers the next pixel while the current one waits, so a pixel still leaves every BEATS cycles. A pixel leaves
// shifted down by `shift_i` bytes (a tile narrower than a beat reads its lanes from the beat's low bytes): the
// shift sits before the out register, not behind it on the way to the epilogue.
module residual_queue #(
  parameter int DW = 128,          // beat bits
  parameter int BEATS = 1,         // beats of a pixel
  parameter int DEPTH = 512        // beats queued, power of two
) (
  input  logic                clk_i,
  input  logic                rst_ni,
  input  logic                clear_i,     // a tile begins: nothing is half-collected
  input  logic                push_i,
  input  logic [DW-1:0]       data_i,
  output logic                ready_o,     // the queue can take a beat
  output logic                valid_o,     // a whole pixel is out
  input  logic [$clog2(BEATS*DW/8)-1:0] shift_i,   // bytes, steady while a tile's pixels leave
  output logic [BEATS*DW-1:0] pixel_o,
  input  logic                pop_i        // the pixel out is used; ignored while none is out, so a consumer
                                           // need not test valid_o (its enables then start a LUT from registers)
);
  localparam int CW = $clog2(BEATS + 1);
  localparam int AW = $clog2(DEPTH);
  localparam int QCW = AW + 2;
  localparam logic [AW:0] PTR_ONE = 1;
  // the beats' RAM, read synchronously into the head register: a beat is read the cycle after its write at the
  // earliest, so a read never meets the write of its slot and the block RAM needs no bypass behind its address
  logic [DW-1:0] ram[DEPTH];
  logic [AW:0] wp, rp1;                          // write pointer, read pointer's next (one extra bit: full from empty)
  logic [AW-1:0] rp;                             // the read address, rp1 - 1
  logic ram_valid;                               // the RAM holds a beat not yet read (the pointers differ)
  logic hd_v;                                    // q_head holds a beat
  logic [DW-1:0] q_head;
  logic [QCW-1:0] q_count;                       // beats in the RAM and the head
  logic q_pop;                                   // the collector takes the head
  wire push = push_i && ready_o;
  wire rd = ram_valid && (!hd_v || q_pop);
  always_ff @(posedge clk_i) if (push) ram[wp[AW-1:0]] <= data_i;
  always_ff @(posedge clk_i) if (rd) q_head <= ram[rp];
  always_ff @(posedge clk_i)
    if (!rst_ni) begin
      wp <= '0; rp <= '0; rp1 <= PTR_ONE; ram_valid <= 1'b0; hd_v <= 1'b0; q_count <= '0;
    end else begin
      if (push) wp <= wp + 1'b1;
      if (rd) begin
        rp <= rp1[AW-1:0];
        rp1 <= rp1 + 1'b1;
      end
      if (push && !rd) ram_valid <= 1'b1;
      else if (rd && !push) ram_valid <= rp1 != wp;
      if (rd) hd_v <= 1'b1;
      else if (q_pop) hd_v <= 1'b0;
      q_count <= q_count + QCW'(push) - QCW'(q_pop);
    end
  // a register, as the activation stream's ready (and through it the reader's output enables) reads it: set
  // from the fill the cycle's push and pop leave
  always_ff @(posedge clk_i)
    if (!rst_ni) ready_o <= 1'b1;
    else if (push && !q_pop) ready_o <= 32'(q_count) != 32'(DEPTH - 1);
    else if (q_pop && !push) ready_o <= 1'b1;

  logic [DW-1:0] coll_q[BEATS];
  logic [CW-1:0] count_q;                        // beats collected
  // a collected pixel leaves the collector for the out register or, while that waits on its pop, a spare behind
  // it: the collector (and through it the head and the RAM's read) moves on registers alone, the pop enables
  // only the out register and the spare
  logic [BEATS*DW-1:0] spare_q, collected;
  logic spare_v_q;
  wire full = count_q == CW'(BEATS);
  wire move = full && !spare_v_q;
  wire out_take = !valid_o || pop_i;             // the out register takes the next pixel, or empties
  assign q_pop = hd_v && (!full || !spare_v_q);
  wire [CW-1:0] slot = move ? '0 : count_q;
  always_comb for (int k = 0; k < BEATS; k++) collected[k*DW +: DW] = coll_q[k];
  always_ff @(posedge clk_i) begin
    if (!rst_ni || clear_i) begin
      count_q <= '0;
      valid_o <= 1'b0;
      spare_v_q <= 1'b0;
    end else begin
      if (q_pop) count_q <= slot + CW'(1);
      else if (move) count_q <= '0;
      if (out_take) valid_o <= spare_v_q || move;
      if (out_take) spare_v_q <= 1'b0;
      else if (move) spare_v_q <= 1'b1;
    end
    if (q_pop) coll_q[slot] <= q_head;
    if (out_take) pixel_o <= (spare_v_q ? spare_q : collected) >> (8 * 32'(shift_i));
    if (move && !out_take) spare_q <= collected;
  end
endmodule
