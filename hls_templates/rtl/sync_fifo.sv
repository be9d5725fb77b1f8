// First-in first-out queue with a fill count, for the credit-based hand-offs between engine stages. With OUT_REG
// the head waits in a register (an item pushed into an empty queue goes straight there): what reads the head
// starts from flip-flops instead of the distributed RAM's read port, at one entry more and no added latency; the
// fill count is a register too.
module sync_fifo #(
  parameter int W = 8,
  parameter int DEPTH = 8,         // power of two
  parameter bit OUT_REG = 1'b0
) (
  input  logic clk,
  input  logic rst_n,
  input  logic         push,
  input  logic [W-1:0] din,
  input  logic         pop,
  output logic [W-1:0] dout,
  output logic         empty,
  output logic [$clog2(DEPTH):0] count
);
  localparam int AW = $clog2(DEPTH);
  localparam int CW = AW + 1;
  logic [W-1:0] mem[DEPTH];
  logic [AW:0] wp, rp;
  wire mem_empty = wp == rp;
  logic mem_push, mem_pop;
  always_ff @(posedge clk) begin
    if (!rst_n) begin
      wp <= '0;
      rp <= '0;
    end else begin
      if (mem_push) begin
        mem[wp[AW-1:0]] <= din;
        wp <= wp + 1'b1;
      end
      if (mem_pop) rp <= rp + 1'b1;
    end
  end

  if (OUT_REG) begin : g_head
    logic hd_v;
    logic [W-1:0] hd_q;
    logic [CW-1:0] count_q;
    wire load = !hd_v || pop;                  // the head takes the next item, if there is one
    assign mem_pop = load && !mem_empty;
    assign mem_push = push && !(load && mem_empty);
    always_ff @(posedge clk) begin
      if (!rst_n) begin
        hd_v <= 1'b0;
        count_q <= '0;
      end else begin
        if (load) hd_v <= !mem_empty || push;
        count_q <= count_q + CW'(push) - CW'(pop && hd_v);
      end
      if (load) hd_q <= mem_empty ? din : mem[rp[AW-1:0]];
    end
    assign dout = hd_q;
    assign empty = !hd_v;
    assign count = count_q;
  end else begin : g_plain
    assign mem_pop = pop && !mem_empty;
    assign mem_push = push;
    assign dout = mem[rp[AW-1:0]];
    assign empty = mem_empty;
    assign count = wp - rp;
  end
endmodule
