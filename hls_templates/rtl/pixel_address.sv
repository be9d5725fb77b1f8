// The byte address of pixel (n, y, x) of an NHWC tensor, base + ((n * h + y) * w + x) * stride + add, over
// engine_pkg::ADDRESS_LATENCY (8) pipelined stages: n * h + y; then ((n * h + y) * w + x) and (that * stride +
// base), each on one DSP48E2 with every register (dsp_mult: operands, product, output plus C); then add. The
// caller passes n * h, already multiplied. The DSPs take 27-bit signed operands: a pixel's row n * h + y and its
// index in the tensor lie below 2^26 (fpga_runtime.abi.MAX_PIXELS, refused by the program check otherwise), so
// every address of a tensor's pixel equals the 32-bit wrapping sum the reference computes; a padded tap's (out of
// range, never read) may differ. `wide_i` adds `add_i` in 33 bits instead (the runs whose offset the old address
// generator added in 64 bits), `align_i` clears the address's low bits to a beat, `zero_i` gives 0.
module pixel_address #(
  parameter int B = 16,                // bytes per beat (align_i)
  parameter bit PRIMITIVE = 1'b1       // dsp_mult's: the DSP48E2 primitive in synthesis (UltraScale+)
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
  localparam int S = 7;                // stages before the last
  logic [26:0] ny_q;                   // n * h + y, as the DSP takes it
  logic [3*32-1:0] x_q;                // x to stage 3 (the row product's C at stage 4)
  logic [15:0] w_q;                    // w beside n * h + y: the row product's B
  logic [4*16-1:0] stride_q;           // stride to stage 4 (the pixel product's B at stage 5)
  logic [6*32-1:0] base_q;             // base to stage 6 (the pixel product's C at stage 7)
  logic [S*32-1:0] add_q;
  logic [S-1:0] wide_q, align_q, zero_q;
  always_ff @(posedge clk_i)
    if (en_i) begin
      ny_q <= 27'(nh_i + y_i);                                                    // stage 1
      x_q <= {x_q[2*32-1:0], x_i};
      w_q <= w_i;
      stride_q <= {stride_q[3*16-1:0], stride_i};
      base_q <= {base_q[5*32-1:0], base_i};
      add_q <= {add_q[(S-1)*32-1:0], add_i};
      wide_q <= {wide_q[S-2:0], wide_i}; align_q <= {align_q[S-2:0], align_i}; zero_q <= {zero_q[S-2:0], zero_i};
    end
  logic signed [26:0] rx_p;            // the pixel's index in the tensor
  logic signed [31:0] px_p;            // its address
  dsp_mult #(.AW(27), .BW(18), .PW(27), .USE_C(1'b1), .PRIMITIVE(PRIMITIVE)) row_product (    // stages 2-4
    .clk_i, .en_i, .a_i(ny_q), .b_i({2'b00, w_q}), .c_i(27'(x_q[2*32 +: 32])), .p_o(rx_p));
  dsp_mult #(.AW(27), .BW(18), .PW(32), .USE_C(1'b1), .PRIMITIVE(PRIMITIVE)) pixel_product (  // stages 5-7
    .clk_i, .en_i, .a_i(rx_p), .b_i({2'b00, stride_q[3*16 +: 16]}), .c_i(base_q[5*32 +: 32]),
    .p_o(px_p));
  logic [32:0] total;
  always_comb begin
    total = {1'b0, px_p} + {1'b0, add_q[(S-1)*32 +: 32]};
    if (!wide_q[S-1]) total[32] = 1'b0;
  end
  always_ff @(posedge clk_i)
    if (en_i)                                                                                  // stage 8
      addr_o <= zero_q[S-1] ? 64'd0 : align_q[S-1] ? 64'(total) & ~64'(B - 1) : 64'(total);
endmodule
