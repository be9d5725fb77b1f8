// AXI4-Lite slave with the register map of docs/kernel-abi.md (the layout Vitis HLS generates for
// ap_ctrl_hs), plus read-only status and performance counters after CYCLES.
module axil_control #(
  parameter int NCOUNTERS = 9
) (
  input  logic        clk,
  input  logic        rst_n,
  // AXI4-Lite
  input  logic        s_awvalid, output logic s_awready, input logic [11:0] s_awaddr,
  input  logic        s_wvalid,  output logic s_wready,  input logic [31:0] s_wdata, input logic [3:0] s_wstrb,
  output logic        s_bvalid,  input  logic s_bready,  output logic [1:0] s_bresp,
  input  logic        s_arvalid, output logic s_arready, input logic [11:0] s_araddr,
  output logic        s_rvalid,  input  logic s_rready,  output logic [31:0] s_rdata, output logic [1:0] s_rresp,
  output logic        interrupt,
  // to the engine core
  output logic        ap_start,
  input  logic        ap_ready,          // the core took ap_start
  input  logic        ap_done,           // one-cycle pulse at the end of a run
  input  logic        ap_idle,
  output logic [63:0] program_addr,
  output logic [31:0] layer_count,
  output logic [63:0] act_base,
  output logic [63:0] const_base,
  input  logic [63:0] cycles,            // clock cycles of the last run
  input  logic [31:0] status,            // bit0: the last program was refused (a layer this engine cannot run)
  input  logic [31:0] error_layer,
  input  logic [64*NCOUNTERS-1:0] counters
);
  logic done_sticky, auto_restart, gie;
  logic [1:0] ier, isr;

  // ---- writes: address and data together, one response each --------------------------------------
  wire do_write = s_awvalid && s_wvalid && !s_bvalid;
  assign s_awready = do_write;
  assign s_wready = do_write;
  assign s_bresp = 2'b00;

  function automatic logic [31:0] merge(input logic [31:0] old, input logic [31:0] data, input logic [3:0] strb);
    for (int i = 0; i < 4; i++) if (strb[i]) old[8*i +: 8] = data[8*i +: 8];
    merge = old;
  endfunction

  // ---- reads: the address in a register (and a counter's index decoded from it), the data the cycle after --
  logic rd_q;                          // a read's address is in ar_q: its data next
  logic [11:0] ar_q;
  localparam int CW = $clog2(2 * NCOUNTERS);
  logic [CW-1:0] ctr_idx_q;            // the counter word it reads ...
  logic ctr_on_q;                      // ... if it reads one (an index, not an index plus one: no subtract to pick)
  wire do_read = s_arvalid && !s_rvalid && !rd_q;
  assign s_arready = do_read;
  assign s_rresp = 2'b00;
  always_ff @(posedge clk) begin
    rd_q <= rst_n && do_read;
    if (do_read) begin
      // the counters' words are at 0x50 on, four bytes each: bounds on the address, the index from its low bits
      ar_q <= s_araddr;
      ctr_on_q <= s_araddr >= 12'h50 && 32'(s_araddr) < 32'h50 + 8 * NCOUNTERS;
      ctr_idx_q <= CW'(s_araddr[11:2] - 10'h14);
    end
  end
  function automatic logic [31:0] counter_word(input logic on, input logic [CW-1:0] k);
    counter_word = on && 32'(k) < 2 * NCOUNTERS ? counters[32 * 32'(k) +: 32] : 32'd0;
  endfunction

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      ap_start <= 1'b0; done_sticky <= 1'b0; auto_restart <= 1'b0; gie <= 1'b0; ier <= 2'b0; isr <= 2'b0;
      program_addr <= '0; layer_count <= '0; act_base <= '0; const_base <= '0;
      s_bvalid <= 1'b0; s_rvalid <= 1'b0; s_rdata <= '0;
    end else begin
      if (ap_ready) ap_start <= auto_restart;
      if (ap_done) begin
        done_sticky <= 1'b1;
        if (ier[0]) isr[0] <= 1'b1;
        if (ier[1]) isr[1] <= 1'b1;
      end
      if (s_bvalid && s_bready) s_bvalid <= 1'b0;
      if (do_write) begin
        s_bvalid <= 1'b1;
        case (s_awaddr)
          12'h00: begin
            if (s_wstrb[0] && s_wdata[0]) ap_start <= 1'b1;
            if (s_wstrb[0]) auto_restart <= s_wdata[7];
          end
          12'h04: gie <= s_wdata[0];
          12'h08: ier <= s_wdata[1:0];
          12'h0C: isr <= isr ^ s_wdata[1:0];
          12'h10: program_addr[31:0] <= merge(program_addr[31:0], s_wdata, s_wstrb);
          12'h14: program_addr[63:32] <= merge(program_addr[63:32], s_wdata, s_wstrb);
          12'h1C: layer_count <= merge(layer_count, s_wdata, s_wstrb);
          12'h24: act_base[31:0] <= merge(act_base[31:0], s_wdata, s_wstrb);
          12'h28: act_base[63:32] <= merge(act_base[63:32], s_wdata, s_wstrb);
          12'h30: const_base[31:0] <= merge(const_base[31:0], s_wdata, s_wstrb);
          12'h34: const_base[63:32] <= merge(const_base[63:32], s_wdata, s_wstrb);
          default: ;
        endcase
      end
      if (s_rvalid && s_rready) s_rvalid <= 1'b0;
      if (rd_q) begin
        s_rvalid <= 1'b1;
        case (ar_q)
          12'h00: begin
            s_rdata <= {24'd0, auto_restart, 3'd0, done_sticky, ap_idle, done_sticky, ap_start};
            if (!ap_done) done_sticky <= 1'b0;      // ap_done clears on read
          end
          12'h04: s_rdata <= {31'd0, gie};
          12'h08: s_rdata <= {30'd0, ier};
          12'h0C: s_rdata <= {30'd0, isr};
          12'h10: s_rdata <= program_addr[31:0];
          12'h14: s_rdata <= program_addr[63:32];
          12'h1C: s_rdata <= layer_count;
          12'h24: s_rdata <= act_base[31:0];
          12'h28: s_rdata <= act_base[63:32];
          12'h30: s_rdata <= const_base[31:0];
          12'h34: s_rdata <= const_base[63:32];
          12'h3C: s_rdata <= cycles[31:0];
          12'h40: s_rdata <= cycles[63:32];
          12'h48: s_rdata <= status;
          12'h4C: s_rdata <= error_layer;
          default: s_rdata <= counter_word(ctr_on_q, ctr_idx_q);
        endcase
      end
    end
  end

  assign interrupt = gie && |(isr & ier);
endmodule
