// The window's writes (window_conv.sv): the layer's input rows as the activation stream brings them, each row
// into the window slot its number picks (the slots a power of two, a ring), a pixel's channel beats one after
// another, pixels round the P banks (at stride 2 the two phases of a bank first), so the step sequencer reads P
// neighbouring columns at one address. It counts the rows written, which the step sequencer waits on.
module window_writer #(
  parameter int V = 16,
  parameter int P = 4,
  parameter int WA = 11                         // window address bits
) (
  input  logic                              clk_i,
  input  logic                              rst_ni,
  input  logic                              start_i,        // a tile starts: the window fills from its first row
  input  logic                              beat_valid_i,   // a window beat of the stream (not a residual's)
  input  logic                              beat_last_i,    // ... its row's last
  input  logic [8*V-1:0]                    beat_data_i,
  input  logic [31:0]                       slot_mask_i,    // slots - 1
  input  logic [31:0]                       row_words_i,    // words of a row in each bank
  input  logic [31:0]                       phase_words_i,  // ... of a row's stride phase
  input  logic                              stride2_i,
  input  logic [15:0]                       cbs_i,          // channel beats of a pixel
  input  logic [15:0]                       cb_pen_i,       // ... less two
  input  logic                              cb_one_i,       // ... is one
  output logic                              we_o,
  output logic [(P > 1 ? $clog2(P) : 1)-1:0] bank_o,
  output logic [WA-1:0]                     addr_o,
  output logic [8*V-1:0]                    data_o,
  output logic [31:0]                       rows_loaded_o
);
  localparam int PB = P > 1 ? $clog2(P) : 1;
  logic [31:0] slot_base_q;                     // first word of the slot the row being written goes to
  logic [15:0] cb_q, colw_q;                    // channel beat; column * cbs
  logic cb_end_q;                               // cb_q is the pixel's last, a flag kept beside it
  logic phase_q, last_q;
  // the stream's beats a cycle late, from registers: the counters and the RAM's enables then start from
  // flip-flops, not from the reader's valid gated by the layer's path
  always_ff @(posedge clk_i) begin
    we_o <= rst_ni && !start_i && beat_valid_i;
    last_q <= beat_last_i;
    data_o <= beat_data_i;
  end
  assign addr_o = WA'(slot_base_q + (phase_q ? phase_words_i : 32'd0) + 32'(colw_q) + 32'(cb_q));

  // the counters are set on a tile's start alone (writes come only after one, and the count is used only after one):
  // the reset's fan-out stays off their paths
  always_ff @(posedge clk_i) begin
    if (start_i) begin
      rows_loaded_o <= '0;
      slot_base_q <= '0; cb_q <= '0; colw_q <= '0; bank_o <= '0; phase_q <= 1'b0; cb_end_q <= cb_one_i;
    end else if (we_o) begin
      if (last_q) begin
        rows_loaded_o <= rows_loaded_o + 32'd1;
        // the row written was a slot cycle's last (rows_loaded + 1 a multiple of the power-of-two slots): no add
        slot_base_q <= (rows_loaded_o & slot_mask_i) == slot_mask_i ? 32'd0 : slot_base_q + row_words_i;
        cb_q <= '0; colw_q <= '0; bank_o <= '0; phase_q <= 1'b0; cb_end_q <= cb_one_i;
      end else if (!cb_end_q) begin
        cb_q <= cb_q + 16'd1;
        cb_end_q <= cb_q == cb_pen_i;
      end else begin                            // the next pixel: the other phase, or the next bank and column
        cb_q <= '0;
        cb_end_q <= cb_one_i;
        if (stride2_i && !phase_q) phase_q <= 1'b1;
        else begin
          phase_q <= 1'b0;
          bank_o <= bank_o + PB'(1);
          if (P == 1 || bank_o == PB'(P - 1)) colw_q <= colw_q + cbs_i;
        end
      end
    end
  end
endmodule
