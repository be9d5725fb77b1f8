// The performance counters readable over AXI-Lite (docs/kernel-abi.md register map): a free-running clock, and
// per run (cleared when a run starts) MAC-busy cycles, the array's stalls by cause and the bytes each port
// moved, as {act written, const read, act read, drain, output, weights, input, MAC, clock}.
module perf_counters (
  input  logic clk,
  input  logic rst_n,
  input  logic clear,                 // a run starts
  input  logic mac_beat,              // the array took a step
  input  logic wait_input,            // ... waits for input
  input  logic wait_weights,          // ... for a tile's weights and tables
  input  logic wait_output,           // ... for the epilogue or the writer
  input  logic draining,              // ... for a tile's tail to leave
  input  logic [63:0] act_bytes_read, const_bytes_read, act_bytes_written,   // the ports' running totals
  output logic [9*64-1:0] counters
);
  logic [63:0] clock, n_mac, n_in, n_wt, n_out, n_drain, base_act_rd, base_act_wr, base_const;
  always_ff @(posedge clk) begin
    if (!rst_n) begin
      clock <= '0;
      n_mac <= '0; n_in <= '0; n_wt <= '0; n_out <= '0; n_drain <= '0;
      base_act_rd <= '0; base_act_wr <= '0; base_const <= '0;
    end else begin
      clock <= clock + 64'd1;
      if (clear) begin
        n_mac <= '0; n_in <= '0; n_wt <= '0; n_out <= '0; n_drain <= '0;
        base_act_rd <= act_bytes_read; base_act_wr <= act_bytes_written; base_const <= const_bytes_read;
      end else begin
        if (mac_beat) n_mac <= n_mac + 64'd1;
        if (wait_input) n_in <= n_in + 64'd1;
        if (wait_weights) n_wt <= n_wt + 64'd1;
        if (wait_output) n_out <= n_out + 64'd1;
        if (draining) n_drain <= n_drain + 64'd1;
      end
    end
  end
  // registered, a cycle behind the counts: the register map's read mux starts from flip-flops, not subtractors
  always_ff @(posedge clk)
    counters <= {act_bytes_written - base_act_wr, const_bytes_read - base_const, act_bytes_read - base_act_rd,
                 n_drain, n_out, n_wt, n_in, n_mac, clock};
endmodule
