// The byte address of pixel (n, y, x) of an NHWC tensor, base + ((n * h + y) * w + x) * stride + add, over
// engine_pkg::ADDRESS_LATENCY (6) pipelined stages, each a multiply or adds: n * h + y, times w, plus x,
// times stride, plus base, plus add. The caller passes n * h, already multiplied. All arithmetic wraps at 32 bits,
// as the reference's addresses do; `wide_i` adds `add_i` in 33 bits instead (the runs whose offset the old
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
  output logic [63:0] addr_o           // ADDRESS_LATENCY cycles of en_i later
);
  localparam int S = 4;                // stages before the last
  // Each 32 x 16-bit product (its low 32 bits) is two 16 x 16-bit products, one DSP each with nothing after it in
  // the stage: the low half's full product and the high half's low 16 bits. The next stage adds them.
  logic [31:0] ny_q, rx_q, row_lo_q, px_lo_q;
  logic [15:0] w_q, row_hi_q, px_hi_q;
  logic [2*32-1:0] x_q;                // x to stage 3, stride to stage 4, the rest to stage 5
  logic [3*16-1:0] stride_q;
  logic [S*32-1:0] base_q, add_q;
  logic [S-1:0] wide_q, align_q, zero_q;
  always_ff @(posedge clk_i) begin
    if (en_i) begin
      ny_q <= nh_i + y_i;                                                      // stage 1
      w_q <= w_i;
      row_lo_q <= 32'(ny_q[15:0]) * 32'(w_q);                                  // stage 2
      row_hi_q <= 16'(ny_q[31:16] * w_q);
      rx_q <= row_lo_q + {row_hi_q, 16'd0} + x_q[32 +: 32];                    // stage 3
      px_lo_q <= 32'(rx_q[15:0]) * 32'(stride_q[32 +: 16]);                    // stage 4
      px_hi_q <= 16'(rx_q[31:16] * stride_q[32 +: 16]);
      x_q <= {x_q[31:0], x_i};
      stride_q <= {stride_q[2*16-1:0], stride_i};
      base_q <= {base_q[(S-1)*32-1:0], base_i};
      add_q <= {add_q[(S-1)*32-1:0], add_i};
      wide_q <= {wide_q[S-2:0], wide_i}; align_q <= {align_q[S-2:0], align_i}; zero_q <= {zero_q[S-2:0], zero_i};
    end
  end
  logic [31:0] pixel_q, add5_q;
  logic wide5_q, align5_q, zero5_q;
  logic [32:0] total;
  always_comb begin
    total = {1'b0, pixel_q} + {1'b0, add5_q};
    if (!wide5_q) total[32] = 1'b0;
  end
  always_ff @(posedge clk_i)
    if (en_i) begin
      pixel_q <= base_q[(S-1)*32 +: 32] + px_lo_q + {px_hi_q, 16'd0};                         // stage 5
      add5_q <= add_q[(S-1)*32 +: 32];
      wide5_q <= wide_q[S-1]; align5_q <= align_q[S-1]; zero5_q <= zero_q[S-1];
      addr_o <= zero5_q ? 64'd0 : align5_q ? 64'(total) & ~64'(B - 1) : 64'(total);           // stage 6
    end
endmodule
