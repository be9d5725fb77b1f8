// First-in first-out queue with a fill count, for the credit-based hand-offs between engine stages. With OUT_REG
// the head waits in a register (an item pushed into an empty queue goes straight there): what reads the head
// starts from flip-flops instead of the distributed RAM's read port, at one entry more and no added latency; the
// fill count is a register too, its next value a pick.
module sync_fifo #(
  parameter int W = 8,
  parameter int DEPTH = 8,         // power of two
  parameter bit OUT_REG = 1'b0
) (
  input  logic clk,
  input  logic rst_n,
  input  logic         push,
  input  logic [W-1:0] din,
  input  logic         pop,        // ignored while the queue is empty: a consumer need not test valid
  input  logic         pop_ctl,    // pop again, for the pointers, the fill and the head's flag (with OUT_REG pop
                                   // moves only the head's data): a consumer whose pop loads a wide head gives a
                                   // copy made from registers of its own, so those do not wait on that load
  output logic [W-1:0] dout,
  output logic         valid,      // an item is at the head (a register)
  output logic         valid_copy, // the same, a register of its own for a second consumer (OUT_REG), away from
                                   // valid's load; no reset, so synthesis keeps it apart: it follows valid from a
                                   // reset's second cycle
  output logic [$clog2(DEPTH):0] count
);
  localparam int AW = $clog2(DEPTH);
  localparam int CW = AW + 1;
  localparam logic [AW:0] PTR_ONE = 1;
  logic [W-1:0] mem[DEPTH];
  logic [AW:0] wp, rp1;                 // write pointer, and the read pointer's next (one extra bit: full from empty)
  logic [AW-1:0] rp;                    // the read address, rp1 - 1: the next is a pick, no add
  logic mem_push, mem_pop;
  always_ff @(posedge clk) begin
    if (!rst_n) begin
      wp <= '0;
      rp <= '0;
      rp1 <= PTR_ONE;
    end else begin
      if (mem_push) wp <= wp + 1'b1;
      if (mem_pop) begin
        rp <= rp1[AW-1:0];
        rp1 <= rp1 + 1'b1;
      end
    end
  end
  // every push writes the RAM's free slot, whether or not the item stays there (one that goes straight to the head
  // leaves the write pointer where it was): the RAM's write enable waits on no pop
  always_ff @(posedge clk)
    if (push) mem[wp[AW-1:0]] <= din;
  // whether the RAM holds an item (the pointers differ), a register kept beside them: what pops or pushes tests no
  // pointer compare
  logic mem_valid;
  always_ff @(posedge clk)
    if (!rst_n) mem_valid <= 1'b0;
    else if (mem_push && !mem_pop) mem_valid <= 1'b1;
    else if (mem_pop && !mem_push) mem_valid <= rp1 != wp;

  if (OUT_REG) begin : g_head
    logic hd_v;
    logic [W-1:0] hd_q;
    // the count and its two neighbours, each a register: a push or pop picks one of them and adds nothing (with the
    // sums on the count itself synthesis shares one adder between them, behind the push)
    logic [CW-1:0] count_q, count_up_q, count_dn_q;
    wire load = !hd_v || pop;                  // the head takes the next item, if there is one
    wire load_ctl = !hd_v || pop_ctl;
    wire count_up = push && !(pop_ctl && hd_v);
    wire count_dn = !push && pop_ctl && hd_v;
    assign mem_pop = load_ctl && mem_valid;
    assign mem_push = push && (mem_valid || !load_ctl);
    always_ff @(posedge clk) begin
      if (!rst_n) begin
        hd_v <= 1'b0;
        count_q <= '0;
        count_up_q <= CW'(1);
        count_dn_q <= '1;
      end else begin
        if (load_ctl) hd_v <= mem_valid || push;
        if (count_up) begin
          count_q <= count_up_q;
          count_up_q <= count_up_q + 1'b1;
          count_dn_q <= count_q;
        end else if (count_dn) begin
          count_q <= count_dn_q;
          count_up_q <= count_q;
          count_dn_q <= count_dn_q - 1'b1;
        end
      end
      if (load) hd_q <= mem_valid ? mem[rp] : din;
    end
    assign dout = hd_q;
    assign valid = hd_v;
    logic hd_v_copy;
    always_ff @(posedge clk)
      if (load) hd_v_copy <= mem_valid || push;
    assign valid_copy = hd_v_copy;
    assign count = count_q;
  end else begin : g_plain
    assign mem_pop = pop_ctl && mem_valid;
    assign mem_push = push;
    logic unused_pop;                          // the RAM's read port is the head: pop_ctl moves it
    assign unused_pop = pop;
    assign dout = mem[rp];
    assign valid = mem_valid;
    assign valid_copy = mem_valid;
    assign count = wp - rp1 + PTR_ONE;
  end
endmodule
