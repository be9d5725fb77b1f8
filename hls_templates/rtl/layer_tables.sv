// The tables a layer's accumulators and epilogue read, filled from the bytes the controller collected from the
// constant port: per tile group, biases and requantisation entries, G lanes for each of up to PM tiles. The
// activation tables go to the epilogue's lanes.
// A bias is kept in its low engine_pkg::ACC_W bits and a multiplier in its low 18 (every one is below 2^17, ABI v2):
// the accumulators and the epilogue read no more.
//
// Two copies: a group's entries are taken into the staging copy (the next group's, prefetched while this one
// runs, or the first group's) and move into the running copy at `promote`, as the group starts. The running copy
// is what the lanes read, straight from flip-flops: no bank select across every table bit (G x PM x 90 of them:
// 2,880 LUTs on a 2 x 16 x 16 engine, 5,760 on 4 x 16 x 16) and no register of the selected biases.
import engine_pkg::*;

module layer_tables #(
  parameter int G = 16,            // result lanes
  parameter int PM = 1,            // tiles of a group
  parameter int R = 16,            // PE rows
  parameter int B = 16,            // bytes per beat
  parameter int CB = 272           // bytes collected
) (
  input  logic clk,
  input  logic [8*CB-1:0] cbuf,
  input  logic [7:0] c_off,        // where the collected table starts in cbuf
  input  logic take_bias,          // a group's biases are in cbuf: into the staging copy
  input  logic take_rq,            // a group's requantisation entries are
  input  logic promote,            // the group whose entries are staged starts: they become the running ones
  output logic [PM*G*ACC_W-1:0] bias_bits,
  output logic [PM*G*18-1:0] mult_bits,
  output logic [PM*G*8-1:0]  shift_bits,
  output logic [PM*G*18-1:0] nmult_bits    // the negative-side multipliers of a PRELU layer (entry bits 40-57)
);
  // Tables start on 64-byte boundaries (docs/kernel-abi.md), so a tile's biases and requantisation entries
  // start on a beat unless 4 x PE_ROWS bytes are not a whole number of beats: no shifter then.
  localparam bit PARAMS_ALIGNED = (4 * R) % B == 0;
  wire [7:0] p_off = PARAMS_ALIGNED ? 8'd0 : c_off;
  logic [PM*G*ACC_W-1:0] bias_d;
  logic [PM*G*18-1:0] mult_d;
  logic [PM*G*8-1:0]  shift_d;
  logic [PM*G*18-1:0] nmult_d;

  always_ff @(posedge clk) begin
    if (take_bias)
      for (int i = 0; i < G * PM; i++) bias_d[ACC_W*i +: ACC_W] <= cbuf[(32'(p_off) + 4 * i) * 8 +: ACC_W];
    if (take_rq)
      for (int i = 0; i < G * PM; i++) begin
        mult_d[18*i +: 18] <= cbuf[(32'(p_off) + 8 * i) * 8 +: 18];
        shift_d[8*i +: 8] <= cbuf[(32'(p_off) + 8 * i + 4) * 8 +: 8];
        nmult_d[18*i +: 18] <= cbuf[(32'(p_off) + 8 * i + 5) * 8 +: 18];
      end
  end

  always_ff @(posedge clk)
    if (promote) begin
      bias_bits <= bias_d;
      mult_bits <= mult_d;
      shift_bits <= shift_d;
      nmult_bits <= nmult_d;
    end
endmodule
