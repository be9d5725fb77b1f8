// The input side of a Winograd layer on the window path (docs/kernel-abi.md, "Winograd layers"): P tiles side by
// side read the 4 x (2P + 2) input patch of one channel beat. Window reads of P consecutive columns (three per
// patch row, at the beat's first twelve positions) fill a strip; the step at position 13 copies the strip into the
// patch, which the next beat's 16 steps read, so loading beat k overlaps computing beat k - 1. The window path
// hands the words over at TX (window_conv.sv), a step's V = (B^T d) B for every tile at its position (a, b) is
// formed over the two stages before, each into a register: at TB row a of B^T d for every column (shared by the
// two tiles a column belongs to), at T1 two of the tile's columns of it added or subtracted (10-bit per lane),
// which the array reads at TX. So the steps at TB and T1 when the patch forms (positions 14 and 15) still read the
// beat before, and the next beat's first reads it. Each sum is one adder behind two selects, the subtraction its
// carry-in: holding the patch's bytes rather than its four row sums takes three of every four adders away.
module winograd_patch #(
  parameter int V = 16,
  parameter int P = 4                    // tiles per group (>= 2: three reads of P columns cover 2P + 2)
) (
  input  logic clk_i,
  input  logic en_i,                     // the window path's pipeline moves
  // position (a, b) of the step two cycles before its words come (a) and of the one a cycle before (b)
  input  logic [1:0] sel_a_i,
  input  logic [1:0] sel_b_i,
  // the step whose window words come now
  input  logic step_i,
  input  logic load_i,                   // it read patch row a, strip columns b * P .. (b < 3)
  input  logic [1:0] load_a_i,
  input  logic [1:0] load_b_i,
  input  logic [P*8*V-1:0] words_i,      // column p's V bytes at [p*8V +: 8V] (the zero point outside the input)
  input  logic snap_i,                   // the strip is whole: it becomes the patch
  output logic [P*10*V-1:0] v_o          // tile p's V lanes at [p*10V +: 10V], for the step whose words come
);
  localparam int SC = 3 * P;             // strip columns
  localparam int PC = 2 * P + 2;         // the patch's columns
  // f + s, or f - s as f + ~s + 1 (sign-extended 10-bit operands): one adder, the subtraction its carry-in
  function automatic logic [9:0] sum_or_difference(input logic [9:0] f, input logic [9:0] s, input logic sub);
    sum_or_difference = 10'(({f, 1'b1} + {s ^ {10{sub}}, sub}) >> 1);
  endfunction
  // packed and indexed by constants or explicit selects only: yosys turns an unpacked array read at a variable
  // index into a memory with one read port per lane, whose mux trees do not fit its wasm build
  logic [3:0][SC-1:0][8*V-1:0] strip_q;
  always_ff @(posedge clk_i)
    if (en_i && step_i && load_i)
      for (int a = 0; a < 4; a++)
        for (int s = 0; s < 3; s++)
          if (2'(a) == load_a_i && 2'(s) == load_b_i)
            for (int p = 0; p < P; p++) strip_q[a][s * P + p] <= words_i[p*8*V +: 8*V];
  logic [3:0][PC-1:0][8*V-1:0] patch_q;
  always_ff @(posedge clk_i)
    if (en_i && step_i && snap_i)
      for (int i = 0; i < 4; i++)
        for (int c = 0; c < PC; c++) patch_q[i][c] <= strip_q[i][c];
  // row a of B^T d for every column, first + or - second: d0 - d2, d1 + d2, d2 - d1, d1 - d3
  logic [PC-1:0][9*V-1:0] row_a;
  always_ff @(posedge clk_i)
    if (en_i)
      for (int c = 0; c < PC; c++)
        for (int l = 0; l < V; l++) begin
          logic [7:0] f, s;
          unique case (sel_a_i)
            2'd0: begin f = patch_q[0][c][8*l +: 8]; s = patch_q[2][c][8*l +: 8]; end
            2'd1: begin f = patch_q[1][c][8*l +: 8]; s = patch_q[2][c][8*l +: 8]; end
            2'd2: begin f = patch_q[2][c][8*l +: 8]; s = patch_q[1][c][8*l +: 8]; end
            default: begin f = patch_q[1][c][8*l +: 8]; s = patch_q[3][c][8*l +: 8]; end
          endcase
          row_a[c][9*l +: 9] <= 9'(sum_or_difference({{2{f[7]}}, f}, {{2{s[7]}}, s}, sel_a_i != 2'd1));
        end
  // B's columns for b, of the tile's four: first + or - second = 0 - 2, 1 + 2, 2 - 1, 1 - 3
  logic [P*10*V-1:0] v_d;
  always_comb
    for (int p = 0; p < P; p++) begin
      logic [9*V-1:0] f, s;
      unique case (sel_b_i)
        2'd0: begin f = row_a[2*p]; s = row_a[2*p + 2]; end
        2'd1: begin f = row_a[2*p + 1]; s = row_a[2*p + 2]; end
        2'd2: begin f = row_a[2*p + 2]; s = row_a[2*p + 1]; end
        default: begin f = row_a[2*p + 1]; s = row_a[2*p + 3]; end
      endcase
      for (int l = 0; l < V; l++)
        v_d[(p*V + l)*10 +: 10] = sum_or_difference({f[9*l + 8], f[9*l +: 9]}, {s[9*l + 8], s[9*l +: 9]},
                                                    sel_b_i != 2'd1);
    end
  always_ff @(posedge clk_i)
    if (en_i) v_o <= v_d;
endmodule
