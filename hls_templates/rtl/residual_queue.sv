// A fused residual's operands on their way to the epilogue: they come down the activation stream as beats,
// wait in a queue of DEPTH beats, and leave as whole pixels (BEATS beats each) from a register. The pixel out,
// its valid flag and the queue's ready are registers, so neither the window path's drain (and through it the
// array's advance) nor the activation stream's ready tests a queue pointer. A collector gathers the next pixel
// while the current one waits, so a pixel still leaves every BEATS cycles.
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
  output logic [BEATS*DW-1:0] pixel_o,
  input  logic                pop_i        // the pixel out is used
);
  localparam int CW = $clog2(BEATS + 1);
  logic q_pop, q_empty;
  logic [DW-1:0] q_head;
  logic [$clog2(DEPTH):0] q_count;
  sync_fifo #(.W(DW), .DEPTH(DEPTH)) beats (
    .clk(clk_i), .rst_n(rst_ni), .push(push_i && ready_o), .din(data_i), .pop(q_pop), .dout(q_head),
    .empty(q_empty), .count(q_count));
  // a register, as the activation stream's ready (and through it the reader's output enables) reads it: set
  // from the fill the cycle's push and pop leave
  always_ff @(posedge clk_i)
    if (!rst_ni) ready_o <= 1'b1;
    else if (push_i && ready_o && !q_pop) ready_o <= 32'(q_count) != 32'(DEPTH - 1);
    else if (q_pop && !(push_i && ready_o)) ready_o <= 1'b1;

  logic [DW-1:0] coll_q[BEATS];
  logic [CW-1:0] count_q;                        // beats collected
  wire full = count_q == CW'(BEATS);
  wire move = full && (!valid_o || pop_i);       // the collected pixel goes out
  assign q_pop = !q_empty && (!full || move);
  wire [CW-1:0] slot = move ? '0 : count_q;
  always_ff @(posedge clk_i) begin
    if (!rst_ni || clear_i) begin
      count_q <= '0;
      valid_o <= 1'b0;
    end else begin
      if (q_pop) count_q <= slot + CW'(1);
      else if (move) count_q <= '0;
      if (move) valid_o <= 1'b1;
      else if (pop_i) valid_o <= 1'b0;
    end
    if (q_pop) coll_q[slot] <= q_head;
    if (move) for (int k = 0; k < BEATS; k++) pixel_o[k*DW +: DW] <= coll_q[k];
  end
endmodule
