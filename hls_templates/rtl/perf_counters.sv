// The performance counters readable over AXI-Lite (docs/kernel-abi.md register map): a free-running clock, and
// per run (cleared when a run starts) MAC-busy cycles, the array's stalls by cause and the bytes each port
// moved, as {act written, const read, act read, drain, output, weights, input, MAC, clock}. Each is a
// split_counter (two 32-bit halves); the ports' bytes are their beats counted, times the beat's bytes.
module perf_counters #(
  parameter int B = 16                // bytes per beat of the AXI ports
) (
  input  logic clk,
  input  logic rst_n,
  input  logic clear,                 // a run starts
  input  logic mac_beat,              // the array took a step
  input  logic wait_input,            // ... waits for input
  input  logic wait_weights,          // ... for a tile's weights and tables
  input  logic wait_output,           // ... for the epilogue or the writer
  input  logic draining,              // ... for a tile's tail to leave
  input  logic act_beat_read, const_beat_read, act_beat_written,   // a beat moved on the port (a register)
  output logic [9*64-1:0] counters
);
  localparam int BS = $clog2(B);
  // what each counts this cycle, in registers first: the stall causes are decoded from the pipeline's state, and
  // each goes into its counter's carry chain
  logic [8:0] step;
  logic [9*64-1:0] count;
  always_ff @(posedge clk)
    step <= {act_beat_written, const_beat_read, act_beat_read, draining, wait_output, wait_weights, wait_input,
             mac_beat, 1'b1};
  for (genvar k = 0; k < 9; k++) begin : g_count
    split_counter #(.IW(1)) counter (.clk_i(clk), .rst_ni(rst_n), .clear_i(k != 0 && clear), .inc_i(step[k]),
                                     .count_o(count[64*k +: 64]));
  end
  // registered: the register map's read mux starts from flip-flops
  always_ff @(posedge clk)
    counters <= {count[8*64 +: 64] << BS, count[7*64 +: 64] << BS, count[6*64 +: 64] << BS, count[0 +: 6*64]};
endmodule
