// The tables a layer's accumulators and epilogue read, filled from the bytes the controller collected from the
// constant port: per tile group, two banks (the running group's and the one prefetched beside it) of biases and
// requantisation entries, G lanes for each of up to PM tiles. The activation tables go to the epilogue's lanes.
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
  input  logic take_bias,          // a group's biases are in cbuf: into bank take_bank
  input  logic take_rq,            // a group's requantisation entries are
  input  logic take_bank,
  input  logic cur_bank,           // the bank the running group reads
  output logic [PM*G*32-1:0] bias_bits,
  output logic [PM*G*32-1:0] mult_bits,
  output logic [PM*G*8-1:0]  shift_bits,
  output logic [PM*G*18-1:0] nmult_bits    // the negative-side multipliers of a PRELU layer (entry bits 40-57)
);
  // Tables start on 64-byte boundaries (docs/kernel-abi.md), so a tile's biases and requantisation entries
  // start on a beat unless 4 x PE_ROWS bytes are not a whole number of beats: no shifter then.
  localparam bit PARAMS_ALIGNED = (4 * R) % B == 0;
  wire [7:0] p_off = PARAMS_ALIGNED ? 8'd0 : c_off;
  logic signed [31:0] bias[2*G*PM], mult[2*G*PM];
  logic [7:0] shift[2*G*PM];
  logic [17:0] nmult[2*G*PM];

  always_ff @(posedge clk) begin
    if (take_bias)
      for (int i = 0; i < G * PM; i++) bias[32'(take_bank) * G * PM + i] <= cbuf[(32'(p_off) + 4 * i) * 8 +: 32];
    if (take_rq)
      for (int i = 0; i < G * PM; i++) begin
        mult[32'(take_bank) * G * PM + i] <= cbuf[(32'(p_off) + 8 * i) * 8 +: 32];
        shift[32'(take_bank) * G * PM + i] <= cbuf[(32'(p_off) + 8 * i + 4) * 8 +: 8];
        nmult[32'(take_bank) * G * PM + i] <= cbuf[(32'(p_off) + 8 * i + 5) * 8 +: 18];
      end
  end

  // the biases in registers, a cycle after the bank or a take: the accumulators' first sums start from flip-flops,
  // not from a select on the bank flag that fans out to every table bit (a group's first sum comes many cycles
  // after either)
  always_ff @(posedge clk)
    for (int i = 0; i < G * PM; i++) bias_bits[32*i +: 32] <= bias[32'(cur_bank) * G * PM + i];
  always_comb begin
    for (int i = 0; i < G * PM; i++) begin
      mult_bits[32*i +: 32] = mult[32'(cur_bank) * G * PM + i];
      shift_bits[8*i +: 8] = shift[32'(cur_bank) * G * PM + i];
      nmult_bits[18*i +: 18] = nmult[32'(cur_bank) * G * PM + i];
    end
  end
endmodule
