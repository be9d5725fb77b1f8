// AXI4 read master fed by "runs": a run is `beats` consecutive beats from `addr`, or (pad) `beats` beats
// of a fill byte that cost no memory access. Runs are cut into INCR bursts of at most 256 beats that never
// cross a 4 KiB boundary; up to MAX_OUT bursts are in flight. Beats come out in run order, each with its
// run's tag, its index in the run and a last flag, so the consumer needs no loop nest of its own.
// Pipelined for the clock: a run is taken into a register before the queue, and the address side is two
// register stages (the run being cut, the AR channel): a run's first burst is on the AR channel three cycles
// after the run is offered. A run's first burst ends at the next MAXB-beat boundary (MAXB divides the 4 KiB
// page), so every later one is MAXB beats at an aligned address: the burst lengths and whether a burst ends its
// run are registers, not a compare with the page's end. On the data side the head run's length, pad flag and
// tag are in registers (loaded from the queue as the run before it ends); beats leave from a register, a cycle
// after they arrive, with a skid register behind it, so the consumer's ready reaches no further than these two.
module axi_run_reader #(
  parameter int DW = 128,          // data bits (one beat)
  parameter int TAGW = 8,
  parameter int QDEPTH = 64,       // runs in flight, power of two, >= 4
  parameter int MAX_OUT = 16,      // outstanding bursts
  parameter int AW = 40            // address bits computed with (engine_pkg::ADDR_W); m_araddr's above are 0
) (
  input  logic clk,
  input  logic rst_n,
  // runs
  input  logic            run_valid,
  output logic            run_ready,
  input  logic [63:0]     run_addr,      // beat aligned
  input  logic [23:0]     run_beats,     // >= 1
  input  logic            run_pad,
  input  logic [7:0]      run_fill,
  input  logic [TAGW-1:0] run_tag,
  // beats
  output logic            beat_valid,
  input  logic            beat_ready,
  output logic [DW-1:0]   beat_data,
  output logic [TAGW-1:0] beat_tag,
  output logic [23:0]     beat_idx,
  output logic            beat_last,
  output logic            idle,
  output logic            beat_read,      // a beat came from memory last cycle (the byte counters)
  // AXI4 read channels
  output logic            m_arvalid,
  input  logic            m_arready,
  output logic [63:0]     m_araddr,
  output logic [7:0]      m_arlen,
  output logic [2:0]      m_arsize,
  output logic [1:0]      m_arburst,
  input  logic            m_rvalid,
  output logic            m_rready,
  input  logic [DW-1:0]   m_rdata,
  input  logic            m_rlast
);
  localparam int B = DW / 8;
  localparam int QW = $clog2(QDEPTH);
  localparam int BEAT_SHIFT = $clog2(B);
  localparam int PAGE = 4096 / B;                 // beats in a 4 KiB page
  localparam int MAXB = PAGE < 256 ? PAGE : 256;  // beats in a burst: AXI4's 256, and one page
  localparam int MW = $clog2(MAXB);
  localparam int CAPW = MW + 1;

  // ---- runs in: one registered stage, then the queue (LUT RAM) ---------------------------------------
  logic            in_q;
  logic [AW-1:0] in_addr_q;
  logic [23:0]     in_beats_q;
  logic            in_pad_q;
  logic [7:0]      in_fill_q;
  logic [TAGW-1:0] in_tag_q;
  logic [CAPW-1:0] in_cap_q;         // the first burst's most beats: to the next MAXB-beat boundary
  logic [AW-1:0] q_addr [QDEPTH];
  logic [23:0]     q_beats[QDEPTH];
  logic [23:0]     q_pen  [QDEPTH];  // beats - 2 and whether beats is 1: the data side's last-beat flag is
  logic            q_lone [QDEPTH];  // set a beat ahead, with no subtract
  logic            q_pad  [QDEPTH];
  logic [7:0]      q_fill [QDEPTH];
  logic [TAGW-1:0] q_tag  [QDEPTH];
  logic [CAPW-1:0] q_cap  [QDEPTH];
  logic            q_one  [QDEPTH];  // the run is one burst
  logic [QW:0] wr, iss, rd;          // one extra bit tells full from empty
  logic [QW:0] iss_p1, rd_p1;        // iss + 1, rd + 1, kept beside them: the queue's flags compare, not add
  // room, from last cycle's fill: that cycle's run (in_q now) and this cycle's may still arrive
  logic room_q;
  assign run_ready = room_q;
  always_ff @(posedge clk) begin
    in_addr_q <= AW'(run_addr); in_beats_q <= run_beats; in_pad_q <= run_pad; in_fill_q <= run_fill; in_tag_q <= run_tag;
    in_cap_q <= CAPW'(MAXB) - CAPW'(run_addr[BEAT_SHIFT +: MW]);
  end
  wire in_one = in_beats_q <= 24'(in_cap_q);

  // ---- address side: the run being cut into bursts, the burst on the AR channel ------------------------
  // The current run is taken from the queue, or straight from the input register when the queue has nothing
  // older, as its predecessor issues its last burst, so one-burst runs still go out one per cycle; a pad run
  // is passed over there.
  localparam int OW = $clog2(MAX_OUT + 1);
  logic [OW-1:0] outstanding;        // bursts on the AR channel or with data still to come
  logic          out_full_q;         // outstanding == MAX_OUT, a register kept beside it
  wire [QW-1:0] ii = iss[QW-1:0];
  logic          cu_v, ar_v;
  logic [AW-1:0] cu_addr;
  logic [23:0]   cu_left;
  logic [CAPW-1:0] cu_cap;           // the burst's beats unless it ends the run
  logic          cu_last;            // this burst ends the run
  wire [CAPW-1:0] burst = cu_last ? CAPW'(cu_left) : cu_cap;
  // a burst never crosses a page, so only the low 12 address bits add; their carry steps the page number
  wire [12:0] cu_low_next = {1'b0, cu_addr[11:0]} + 13'(32'(burst) << BEAT_SHIFT);
  wire [AW-13:0] cu_next_page = cu_addr[AW-1:12] + 1'b1;
  // a burst issues into the AR register, or into a skid register when the AR register is held: what issues
  // tests the skid's register, not the channel's ready
  logic          sk_v;
  logic [AW-1:0] sk_addr;
  logic [7:0]    sk_len;
  wire ar_move = !ar_v || m_arready;           // the AR register takes the next burst
  // a burst issues: cu_v && !sk_v && !out_full_q, a register of its own set from the three's next values, so the
  // current run's enables (its address, length, the take of the next run) start a LUT from it
  logic issue_q;
  wire issue = issue_q;
  wire cu_free = !cu_v || (issue && cu_last);
  logic queued;                      // iss != wr (runs written, not yet taken), a register kept beside them
  wire take = (queued || in_q) && cu_free;
  wire src_pad = queued ? q_pad[ii] : in_pad_q;
  wire [AW-1:0] src_addr = queued ? q_addr[ii] : in_addr_q;
  wire [23:0] src_beats = queued ? q_beats[ii] : in_beats_q;
  wire [CAPW-1:0] src_cap = queued ? q_cap[ii] : in_cap_q;
  wire src_one = queued ? q_one[ii] : in_one;
  assign m_arvalid = ar_v;
  assign m_arsize = 3'(BEAT_SHIFT);
  assign m_arburst = 2'b01;

  // ---- data side: beats in run order, pad runs from the queue without a memory access -------------------
  // the head run in registers, loaded from the queue at `rd` when the head register is empty or its run ends
  logic          hd_v, hd_pad;
  logic [23:0]   hd_pen, rd_off;     // the head run's beats - 2; beats of it already taken
  logic          hd_last_q;          // rd_off is the head run's last beat (rd_off == beats - 1), set a beat ahead
  logic [7:0]    hd_fill;
  logic [TAGW-1:0] hd_tag;
  // two registers out: the beat offered, and a skid register that catches the one arriving as the consumer
  // stalls, so what the reader takes (m_rready) waits on its own register, not on the consumer's ready
  localparam int OUTW = DW + TAGW + 24 + 1;
  logic out_v, skid_v;
  logic [OUTW-1:0] skid_q;
  wire h_valid = hd_v && (hd_pad || m_rvalid);
  wire h_last = hd_last_q;
  assign m_rready = hd_v && !hd_pad && !skid_v;
  wire beat_fire = h_valid && !skid_v;         // the head beat is taken into one of the two registers
  wire hd_end = beat_fire && h_last;
  logic runs_q;                                 // the queue holds a run the data side has not taken (rd != wr)
  wire hd_load = (!hd_v || hd_end) && runs_q;
  always_ff @(posedge clk)
    if (!rst_n) runs_q <= 1'b0;
    else if (in_q && !hd_load) runs_q <= 1'b1;
    else if (hd_load && !in_q) runs_q <= rd_p1 != wr;
  wire [QW-1:0] ri = rd[QW-1:0];
  wire [OUTW-1:0] h_beat = {hd_pad ? {B{hd_fill}} : m_rdata, hd_tag, rd_off, h_last};
  wire out_move = !out_v || beat_ready;        // the offered register takes the next beat
  // the skid's flag from the consumer's ready in one term of its own, not through out_move (the enable of every
  // output register, a net of hundreds of loads)
  always_ff @(posedge clk) begin
    if (!rst_n) out_v <= 1'b0;
    else if (out_move) out_v <= skid_v || beat_fire;
    skid_v <= rst_n && out_v && !beat_ready && (skid_v || beat_fire);
    if (out_move) {beat_data, beat_tag, beat_idx, beat_last} <= skid_v ? skid_q : h_beat;
    // the skid follows the head while it is empty (it is read only once it holds a beat), so its enable is its own
    // flag and not the consumer's ready
    if (!skid_v) skid_q <= h_beat;
    if (hd_load) begin
      hd_pad <= q_pad[ri]; hd_pen <= q_pen[ri]; hd_fill <= q_fill[ri]; hd_tag <= q_tag[ri];
    end
  end
  assign beat_valid = out_v;
  // idle from a register: idle last cycle and no run taken then (nothing else wakes the reader), so what waits on
  // it (the controller's drain test) tests no pointer compare; a cycle late going idle, never early
  logic idle_q;
  always_ff @(posedge clk)
    idle_q <= !rst_n || (!in_q && (wr == rd) && !hd_v && (outstanding == 0) && !out_v && !skid_v
                         && !(run_valid && run_ready));
  assign idle = idle_q;

  wire rlast_fire = m_rvalid && m_rready && m_rlast;
  wire sk_v_d = ar_move ? 1'b0 : issue ? 1'b1 : sk_v;
  wire cu_v_d = take ? !src_pad : cu_free ? 1'b0 : cu_v;
  wire out_full_d = issue && !rlast_fire ? outstanding == OW'(MAX_OUT - 1) : rlast_fire && !issue ? 1'b0 : out_full_q;

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      in_q <= 1'b0; room_q <= 1'b0; wr <= '0; iss <= '0; rd <= '0; rd_off <= '0; outstanding <= '0; beat_read <= 1'b0;
      iss_p1 <= (QW + 1)'(1); rd_p1 <= (QW + 1)'(1);
      queued <= 1'b0; cu_v <= 1'b0; ar_v <= 1'b0; sk_v <= 1'b0; hd_v <= 1'b0; out_full_q <= 1'b0; issue_q <= 1'b0;
    end else begin
      sk_v <= sk_v_d; cu_v <= cu_v_d; out_full_q <= out_full_d;
      issue_q <= cu_v_d && !sk_v_d && !out_full_d;
      in_q <= run_valid && run_ready;
      // an entry is free once both sides have passed it: the data side may run ahead over pad runs and the head
      room_q <= wr - rd <= (QW + 1)'(QDEPTH - 4) && wr - iss <= (QW + 1)'(QDEPTH - 4);
      if (in_q) begin
        q_addr[wr[QW-1:0]] <= in_addr_q;
        q_beats[wr[QW-1:0]] <= in_beats_q;
        q_pen[wr[QW-1:0]] <= in_beats_q - 24'd2;
        q_lone[wr[QW-1:0]] <= in_beats_q == 24'd1;
        q_pad[wr[QW-1:0]] <= in_pad_q;
        q_fill[wr[QW-1:0]] <= in_fill_q;
        q_tag[wr[QW-1:0]] <= in_tag_q;
        q_cap[wr[QW-1:0]] <= in_cap_q;
        q_one[wr[QW-1:0]] <= in_one;
        wr <= wr + 1'b1;
      end
      if (ar_move) begin
        ar_v <= sk_v || issue;
        m_araddr <= 64'(sk_v ? sk_addr : cu_addr);
        m_arlen <= sk_v ? sk_len : 8'(burst - 1'b1);
      end
      if (issue) begin
        sk_addr <= cu_addr;
        sk_len <= 8'(burst - 1'b1);
        cu_addr[11:0] <= cu_low_next[11:0];
        cu_addr[AW-1:12] <= cu_low_next[12] ? cu_next_page : cu_addr[AW-1:12];
        cu_left <= cu_left - 24'(cu_cap);          // what is left matters only when the burst did not end the run
        cu_cap <= CAPW'(MAXB);
        cu_last <= cu_left <= 24'(cu_cap) + 24'(MAXB);
      end
      if (in_q && !take) queued <= 1'b1;
      else if (take && !in_q) queued <= iss_p1 != wr;
      if (take) begin                  // a pad run only passes the issue pointer
        iss <= iss_p1;
        iss_p1 <= iss_p1 + 1'b1;
        cu_addr <= src_addr;
        cu_left <= src_beats;
        cu_cap <= src_cap;
        cu_last <= src_one;
      end
      outstanding <= outstanding + OW'(issue) - OW'(rlast_fire);
      beat_read <= m_rvalid && m_rready;
      if (hd_load) begin
        rd <= rd_p1;
        rd_p1 <= rd_p1 + 1'b1;
        hd_v <= 1'b1;
      end else if (hd_end) begin
        hd_v <= 1'b0;
      end
      if (hd_end) rd_off <= '0;
      else if (beat_fire) rd_off <= rd_off + 24'd1;
      if (hd_load) hd_last_q <= q_lone[ri];
      else if (beat_fire) hd_last_q <= rd_off == hd_pen;
    end
  end
endmodule
