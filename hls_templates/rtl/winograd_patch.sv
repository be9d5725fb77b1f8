// The input side of a Winograd layer on the window path (docs/kernel-abi.md, "Winograd layers"): P tiles side by
// side read the 4 x (2P + 2) input patch of one channel beat. Window reads of P consecutive columns (three per
// patch row) fill a strip; the step at the beat's last position turns the strip into the rows of B^T d for every
// column (the four row sums, shared by the two tiles a column belongs to), which the next 16 steps read, so loading
// beat k overlaps computing beat k - 1. At T1 each step gives every tile its V = (B^T d) B at the step's position
// (a, b): the row sums of a, two of the tile's columns added or subtracted, 10-bit per lane, into the array.
module winograd_patch #(
  parameter int V = 16,
  parameter int P = 4                    // tiles per group (>= 2: three reads of P columns cover 2P + 2)
) (
  input  logic clk_i,
  input  logic en_i,                     // the window path's pipeline moves
  // T1: the step whose window words are out, at position (a, b)
  input  logic t1_step_i,
  input  logic t1_load_i,                // it read patch row a, strip columns b * P .. (b < 3)
  input  logic [1:0] t1_a_i,
  input  logic [1:0] t1_b_i,
  input  logic [P*8*V-1:0] t1_words_i,   // column p's V bytes at [p*8V +: 8V] (the zero point outside the input)
  input  logic t1_snap_i,                // its position is the last: the strip becomes the patch
  output logic [P*10*V-1:0] v_o          // tile p's V lanes at [p*10V +: 10V], for the step at T1
);
  localparam int SC = 3 * P;             // strip columns
  localparam int PC = 2 * P + 2;         // the patch's columns
  logic [8*V-1:0] strip_q[4][SC];
  logic signed [8:0] rows_q[4][PC][V];   // B^T d: row sum a of column c, lane l
  always_ff @(posedge clk_i)
    if (en_i && t1_step_i && t1_load_i)
      for (int p = 0; p < P; p++)
        for (int s = 0; s < 3; s++)
          if (2'(s) == t1_b_i) strip_q[t1_a_i][s * P + p] <= t1_words_i[p*8*V +: 8*V];
  // B^T's rows: d0 - d2, d1 + d2, d2 - d1, d1 - d3
  always_ff @(posedge clk_i)
    if (en_i && t1_step_i && t1_snap_i)
      for (int c = 0; c < PC; c++)
        for (int l = 0; l < V; l++) begin
          logic signed [8:0] e[4];
          for (int i = 0; i < 4; i++) e[i] = 9'($signed(strip_q[i][c][8*l +: 8]));
          rows_q[0][c][l] <= e[0] - e[2];
          rows_q[1][c][l] <= e[1] + e[2];
          rows_q[2][c][l] <= e[2] - e[1];
          rows_q[3][c][l] <= e[1] - e[3];
        end
  // B's columns for b: (first, second, subtract) = (0, 2, 1), (1, 2, 0), (2, 1, 1), (1, 3, 1)
  wire [1:0] first = t1_b_i == 2'd0 ? 2'd0 : t1_b_i == 2'd2 ? 2'd2 : 2'd1;
  wire [1:0] second = t1_b_i == 2'd2 ? 2'd1 : t1_b_i == 2'd3 ? 2'd3 : 2'd2;
  wire subtract = t1_b_i != 2'd1;
  always_comb
    for (int p = 0; p < P; p++)
      for (int l = 0; l < V; l++) begin
        logic signed [9:0] f, s;
        f = 10'(rows_q[t1_a_i][2*p + 32'(first)][l]);
        s = 10'(rows_q[t1_a_i][2*p + 32'(second)][l]);
        v_o[(p*V + l)*10 +: 10] = subtract ? f - s : f + s;
      end
endmodule
