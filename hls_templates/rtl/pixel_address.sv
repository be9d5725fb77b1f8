// The byte address of pixel (n, y, x) of an NHWC tensor, base + ((n * h + y) * w + x) * stride + add, over three
// pipelined stages with one multiply each. The caller passes n * h, already multiplied. All arithmetic wraps at
// 32 bits, as the reference's addresses do; `wide_i` adds `add_i` in 33 bits instead (the runs whose offset the old
// address generator added in 64 bits), `align_i` clears the address's low bits to a beat, `zero_i` gives 0.
module pixel_address #(
  parameter int B = 16                 // bytes per beat (align_i)
) (
  input  logic        clk_i,
  input  logic        en_i,            // the pipeline moves
  input  logic [31:0] nh_i,            // n * h
  input  logic [31:0] y_i,
  input  logic [31:0] x_i,
  input  logic [15:0] w_i,
  input  logic [15:0] stride_i,
  input  logic [31:0] base_i,
  input  logic [31:0] add_i,
  input  logic        wide_i,
  input  logic        align_i,
  input  logic        zero_i,
  output logic [63:0] addr_o           // three cycles of en_i later
);
  logic [31:0] row_q, x_q, base_q, base2_q, add_q, add2_q, px_q;
  logic [15:0] stride_q;
  logic [1:0]  wide_q, align_q, zero_q;
  function automatic logic [32:0] sum_at(input logic [31:0] base, input logic [31:0] px, input logic [31:0] add,
                                         input logic wide);
    logic [31:0] pixel;
    logic [32:0] total;
    pixel = base + px;
    total = {1'b0, pixel} + {1'b0, add};
    sum_at = wide ? total : {1'b0, total[31:0]};
  endfunction
  always_ff @(posedge clk_i) begin
    if (en_i) begin
      row_q <= (nh_i + y_i) * 32'(w_i);                 // stage 1
      x_q <= x_i; stride_q <= stride_i; base_q <= base_i; add_q <= add_i;
      px_q <= (row_q + x_q) * 32'(stride_q);            // stage 2
      base2_q <= base_q; add2_q <= add_q;
      wide_q <= {wide_q[0], wide_i}; align_q <= {align_q[0], align_i}; zero_q <= {zero_q[0], zero_i};
      addr_o <= zero_q[1] ? 64'd0 : align_q[1] ? 64'(sum_at(base2_q, px_q, add2_q, wide_q[1])) & ~64'(B - 1)
                : 64'(sum_at(base2_q, px_q, add2_q, wide_q[1]));      // stage 3
    end
  end

endmodule
