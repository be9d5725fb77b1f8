// The Verilated engine as a C library for the `verilator` backend (fpga_runtime/backends/verilator.py).
//
// One `Sim` is one compute unit: the Verilated engine_top, a driver for its AXI4-Lite control port, and a
// memory model that serves its two AXI4 masters from host memory regions with the board's port width,
// latency, outstanding-request limit and a DDR bandwidth budget shared by both ports (and, for units clocked
// together by sim_run_together, by every unit of the board: sim_share_ddr). Clock cycles are the RTL's.
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <deque>
#include <memory>
#include <vector>

#include "Vengine_top.h"
#include "verilated.h"

namespace {

struct Region {
    uint64_t base, size;
    uint8_t *ptr;
};

struct MemConfig {
    int latency = 40;            // cycles from a request to its first data / its write response
    int port_bytes = 16;         // bytes per cycle one HP port carries
    double ddr_bytes = 64.0;     // bytes per cycle the DDR gives all ports together
    int max_reads = 64;          // read bursts a port accepts before ARREADY falls
};

// DDR bandwidth as a token bucket: every cycle adds ddr_bytes, every beat takes its bytes. Units on one DDR
// (sim_share_ddr) each keep a bucket of their equal share, and what a full bucket cannot hold spills into a pool
// that any of them may draw on: an equal share for a unit that wants it, and no bandwidth left idle while another
// unit wants more (the round robin of the DDR controller's ports).
struct Bandwidth {
    double tokens = 0, rate = 64.0, cap = 256.0;
    Bandwidth *spill = nullptr;
    void tick() {
        tokens += rate;
        if (tokens > cap) {
            if (spill) spill->tokens = std::min(spill->cap, spill->tokens + tokens - cap);
            tokens = cap;
        }
    }
    bool can(int bytes) const { return tokens >= bytes || (spill && spill->tokens >= bytes); }
    void charge(int bytes) {     // a beat that went: from the unit's own share first, else from the pool
        if (tokens < bytes && spill && spill->tokens >= bytes) spill->tokens -= bytes;
        else tokens -= bytes;
    }
    bool take(int bytes) {
        if (!can(bytes)) return false;
        charge(bytes);
        return true;
    }
};

struct Burst {
    uint64_t addr;
    int beats, done;
    uint64_t ready_at;
};

struct Port {
    std::deque<Burst> reads, writes;
    std::deque<uint64_t> acks;   // cycles at which write responses are due
    uint64_t rfree_at = 0, wfree_at = 0;   // one beat per ceil(beat / port_bytes) cycles each way
    bool presenting = false;
};

template <typename T>
void put_bytes(T &sig, const uint8_t *src, int n) {
    for (int w = 0; w < (n + 3) / 4; ++w) {
        uint32_t word = 0;
        std::memcpy(&word, src + 4 * w, (n - 4 * w) >= 4 ? 4 : n - 4 * w);
        sig[w] = word;
    }
}
void put_bytes(QData &sig, const uint8_t *src, int n) { sig = 0; std::memcpy(&sig, src, n); }
template <typename T>
void get_bytes(const T &sig, uint8_t *dst, int n) {
    for (int w = 0; w < (n + 3) / 4; ++w) {
        uint32_t word = sig[w];
        std::memcpy(dst + 4 * w, &word, (n - 4 * w) >= 4 ? 4 : n - 4 * w);
    }
}
void get_bytes(const QData &sig, uint8_t *dst, int n) { std::memcpy(dst, &sig, n); }
template <typename T>
uint64_t word64(const T &sig, int i) { return (uint64_t)sig[2 * i] | ((uint64_t)sig[2 * i + 1] << 32); }

}  // namespace

struct Sim {
    std::unique_ptr<VerilatedContext> ctx;
    std::unique_ptr<Vengine_top> top;
    std::vector<Region> regions;
    MemConfig cfg;
    Bandwidth own_ddr;
    Bandwidth pool{0, 0, 0};     // the spill of the units sharing a DDR with this one as their owner
    Bandwidth *ddr = &own_ddr;
    Port act, cnst;
    uint64_t cycle = 0;
    int fault = 0;               // 1: an access outside every region
    uint64_t fault_addr = 0;

    uint8_t *at(uint64_t addr, int n) {
        for (auto &r : regions)
            if (addr >= r.base && addr + n <= r.base + r.size) return r.ptr + (addr - r.base);
        if (!fault) { fault = 1; fault_addr = addr; }
        return nullptr;
    }

    int beat_cycles() const { return (BEAT + cfg.port_bytes - 1) / cfg.port_bytes; }
    static constexpr int BEAT = ENGINE_VEC;

    // one clock cycle: settle with the clock low, note the handshakes, raise the clock, drive the memory side
    void step() {
        auto *t = top.get();
#ifdef ENGINE_DSP_2X
        // the DSPs' clock (--dsp-clock 2x): a rising edge in mid cycle, as ap_clk falls, and one with ap_clk's
        t->ap_clk_2x = 0;
        t->eval();
        t->ap_clk_2x = 1;
#endif
        t->ap_clk = 0;
        t->eval();
#ifdef ENGINE_DSP_2X
        t->ap_clk_2x = 0;
        t->eval();
        t->ap_clk_2x = 1;
#endif
        bool ar_a = t->m_axi_act_arvalid && t->m_axi_act_arready;
        bool ar_c = t->m_axi_const_arvalid && t->m_axi_const_arready;
        bool r_a = t->m_axi_act_rvalid && t->m_axi_act_rready;
        bool r_c = t->m_axi_const_rvalid && t->m_axi_const_rready;
        bool aw = t->m_axi_act_awvalid && t->m_axi_act_awready;
        bool w = t->m_axi_act_wvalid && t->m_axi_act_wready;
        Burst new_ar_a{t->m_axi_act_araddr, t->m_axi_act_arlen + 1, 0, cycle + cfg.latency};
        Burst new_ar_c{t->m_axi_const_araddr, t->m_axi_const_arlen + 1, 0, cycle + cfg.latency};
        Burst new_aw{t->m_axi_act_awaddr, t->m_axi_act_awlen + 1, 0, cycle};
        uint8_t wdata[ENGINE_VEC];
        get_bytes(t->m_axi_act_wdata, wdata, ENGINE_VEC);
        uint64_t wstrb = t->m_axi_act_wstrb;
        bool wlast = t->m_axi_act_wlast;
        t->ap_clk = 1;
        t->eval();
        ++cycle;
        ddr->tick();
        if (ar_a) act.reads.push_back(new_ar_a);
        if (ar_c) cnst.reads.push_back(new_ar_c);
        if (r_a) advance_read(act);
        if (r_c) advance_read(cnst);
        if (aw) act.writes.push_back(new_aw);
        if (w && !act.writes.empty()) {
            ddr->charge(BEAT);
            act.wfree_at = cycle - 1 + beat_cycles();   // the beat went on the clock edge before this cycle
            Burst &b = act.writes.front();
            uint8_t *dst = at(b.addr + (uint64_t)b.done * BEAT, BEAT);
            if (dst)
                for (int i = 0; i < BEAT; ++i)
                    if (wstrb >> i & 1) dst[i] = wdata[i];
            ++b.done;
            if (wlast || b.done == b.beats) {
                act.acks.push_back(cycle + cfg.latency);
                act.writes.pop_front();
            }
        }
        drive();
    }

    void advance_read(Port &p) {
        p.presenting = false;
        Burst &b = p.reads.front();
        if (++b.done == b.beats) p.reads.pop_front();
    }

    // present the next read beat of a port once its data has arrived and the port and the DDR have room;
    // a presented beat stays on the bus until it is taken
    template <typename D>
    bool offer_read(Port &p, D &data, CData &last) {
        if (p.presenting) return true;
        if (p.reads.empty()) return false;
        Burst &b = p.reads.front();
        if (cycle < b.ready_at || cycle < p.rfree_at || !ddr->take(BEAT)) return false;
        p.rfree_at = cycle + beat_cycles();
        uint8_t *src = at(b.addr + (uint64_t)b.done * BEAT, BEAT);
        uint8_t zero[ENGINE_VEC] = {0};
        put_bytes(data, src ? src : zero, BEAT);
        last = b.done == b.beats - 1;
        p.presenting = true;
        return true;
    }

    void drive() {
        auto *t = top.get();
        t->m_axi_act_rvalid = offer_read(act, t->m_axi_act_rdata, t->m_axi_act_rlast);
        t->m_axi_const_rvalid = offer_read(cnst, t->m_axi_const_rdata, t->m_axi_const_rlast);
        t->m_axi_act_arready = act.reads.size() < (size_t)cfg.max_reads;
        t->m_axi_const_arready = cnst.reads.size() < (size_t)cfg.max_reads;
        t->m_axi_act_awready = act.writes.size() < (size_t)cfg.max_reads;
        t->m_axi_act_wready = !act.writes.empty() && cycle >= act.wfree_at && ddr->can(BEAT);
        bool bv = !act.acks.empty() && act.acks.front() <= cycle;
        if (bv) act.acks.pop_front();
        t->m_axi_act_bvalid = bv;
    }

    void lite_write(uint32_t addr, uint32_t data) {
        auto *t = top.get();
        t->s_axi_control_awvalid = 1; t->s_axi_control_awaddr = addr;
        t->s_axi_control_wvalid = 1; t->s_axi_control_wdata = data; t->s_axi_control_wstrb = 0xF;
        t->s_axi_control_bready = 1;
        for (int i = 0; i < 100; ++i) {
            t->ap_clk = 0; t->eval();
            bool taken = t->s_axi_control_awready;
            step();
            if (taken) break;
        }
        t->s_axi_control_awvalid = 0; t->s_axi_control_wvalid = 0;
        for (int i = 0; i < 100 && !t->s_axi_control_bvalid; ++i) step();
        step();
    }

    uint32_t lite_read(uint32_t addr) {
        auto *t = top.get();
        t->s_axi_control_arvalid = 1; t->s_axi_control_araddr = addr; t->s_axi_control_rready = 1;
        for (int i = 0; i < 100; ++i) {
            t->ap_clk = 0; t->eval();
            bool taken = t->s_axi_control_arready;
            step();
            if (taken) break;
        }
        t->s_axi_control_arvalid = 0;
        for (int i = 0; i < 100 && !t->s_axi_control_rvalid; ++i) step();
        uint32_t v = t->s_axi_control_rdata;
        step();
        return v;
    }
};

#define SIM_API __attribute__((visibility("default")))

extern "C" {

SIM_API Sim *sim_new(void) {
    auto *s = new Sim;
    s->ctx.reset(new VerilatedContext);
    s->top.reset(new Vengine_top(s->ctx.get(), "engine"));
    auto *t = s->top.get();
    t->ap_rst_n = 0;
    for (int i = 0; i < 8; ++i) { t->ap_clk = 0; t->eval(); t->ap_clk = 1; t->eval(); }
    t->ap_rst_n = 1;
    s->drive();
    return s;
}

SIM_API void sim_free(Sim *s) { delete s; }

SIM_API void sim_config(Sim *s, int latency, int port_bytes, double ddr_bytes_per_cycle, int max_reads) {
    s->cfg.latency = latency;
    s->cfg.port_bytes = port_bytes;
    s->cfg.max_reads = max_reads;
    s->own_ddr.rate = ddr_bytes_per_cycle;
    s->own_ddr.cap = 4 * ddr_bytes_per_cycle + 2 * ENGINE_VEC;
}

SIM_API void sim_clear_regions(Sim *s) { s->regions.clear(); s->fault = 0; }
SIM_API void sim_map(Sim *s, uint64_t base, uint8_t *ptr, uint64_t size) { s->regions.push_back({base, size, ptr}); }

SIM_API void sim_reg_write(Sim *s, uint32_t addr, uint32_t data) { s->lite_write(addr, data); }
SIM_API uint32_t sim_reg_read(Sim *s, uint32_t addr) { return s->lite_read(addr); }
SIM_API uint64_t sim_cycle(Sim *s) { return s->cycle; }
SIM_API uint32_t sim_layer(Sim *s) { return s->top->layer_index; }
SIM_API int sim_fault(Sim *s, uint64_t *addr) { *addr = s->fault_addr; return s->fault; }
SIM_API int sim_idle(Sim *s) { return s->top->idle; }
SIM_API int sim_interrupt(Sim *s) { return s->top->__SYM__interrupt; }

// Units on one DDR (call it for every unit, the owner included): `s`'s bucket, configured (sim_config) with its
// equal share of the DDR, spills into `owner`'s pool.
SIM_API void sim_share_ddr(Sim *s, Sim *owner) {
    s->own_ddr.spill = &owner->pool;
    owner->pool.cap += s->own_ddr.cap;
}

// Clock `n` units together until one raises its interrupt or `max_cycles` pass; the cycles clocked. Each cycle
// clocks every unit once, the first of them rotating so that none always draws on a shared DDR first.
SIM_API uint64_t sim_run_together(Sim **sims, int n, uint64_t max_cycles) {
    for (uint64_t c = 0; c < max_cycles; ++c) {
        for (int i = 0; i < n; ++i)
            if (sims[i]->top->__SYM__interrupt) return c;
        for (int i = 0; i < n; ++i) sims[(c + i) % n]->step();
    }
    return max_cycles;
}

// Step up to `max_cycles`, stopping early once the engine is idle (a simulated board advances its engine this
// way while the host polls); returns the cycles stepped.
SIM_API uint64_t sim_run(Sim *s, uint64_t max_cycles) {
    uint64_t n = 0;
    while (n < max_cycles && !s->top->idle) { s->step(); ++n; }
    return n;
}

// Step until the interrupt line rises (ap_done with GIE and IER set) or `max_cycles` pass (returns 1).
// Every layer change appends a row to `profile` (capacity `rows`): layer, cycle, then the 9 counters.
SIM_API int sim_wait(Sim *s, uint64_t max_cycles, uint64_t *profile, uint32_t rows, uint32_t *used) {
    auto *t = s->top.get();
    uint32_t last_layer = 0xFFFFFFFFu;
    uint64_t start = s->cycle;
    *used = 0;
    auto snapshot = [&](uint32_t layer) {
        if (*used >= rows) return;
        uint64_t *row = profile + (size_t)(*used) * 11;
        row[0] = layer;
        row[1] = s->cycle;
        // the run clears its counters (all but the free-running clock, counter 0) as it starts: the first row's
        // baseline for them is 0, not the last run's totals
        for (int i = 0; i < 9; ++i) row[2 + i] = *used == 0 && i > 0 ? 0 : word64(t->perf, i);
        ++*used;
    };
    while (!t->__SYM__interrupt) {
        if (s->cycle - start >= max_cycles) return 1;
        if (t->layer_index != last_layer) {
            last_layer = t->layer_index;
            snapshot(last_layer);
        }
        s->step();
    }
    snapshot(0xFFFFFFFFu);
    return 0;
}

}  // extern "C"
