// The integer semantics every conv path of the engine shares (fpga_runtime/abi.py): requantisation, the
// activations, the fused residual's add, the fused max pool's row ring and where a finished pixel goes.
#pragma once
#include "engine.h"
#include "engine_memory.h"

namespace {

const int V = ENGINE_VEC;
const int R = ENGINE_PE_ROWS;
const int G = ENGINE_GRANULE;

// ---- integer semantics (fpga_runtime/abi.py) -----------------------------------------------------------
int8_t sat8(int64_t v) { return v < -128 ? (int8_t)-128 : v > 127 ? (int8_t)127 : (int8_t)v; }

int64_t shift_round(int64_t v, int s) { return s > 0 ? ((v + ((int64_t)1 << (s - 1))) >> s) : v; }

// x times an epilogue multiplier (below 2^17): at most 32x18 (the requantisation's x is 27 bits since ABI v3: one
// DSP48E2), not a 32x32.
int64_t by_mult(int32_t x, int32_t m) {
#pragma HLS INLINE
    ap_int<50> p = (ap_int<32>)x * (mult_t)m;
    return p.to_int64();
}

// The accumulator as the requantisation takes it (ABI v3): its low 27 bits, sign-extended, one DSP48E2 operand.
int32_t requant_input(int32_t acc) {
#pragma HLS INLINE
    ap_int<27> x = acc;
    return x.to_int();
}

// A requantisation entry's second word: the shift in bits 0-7; with F_PRELU, bits 8-25 hold the negative-side
// multiplier (signed 18 bits), which a negative accumulator takes instead of the entry's multiplier.
int rq_shift(int32_t word) { return word & 0xFF; }

int32_t rq_mult(const Descriptor &d, int32_t acc, int32_t mult, int32_t word) {
#pragma HLS INLINE
    if (!(d.flags & F_PRELU) || acc >= 0) return mult;
    int32_t neg = (word >> 8) & 0x3FFFF;
    return neg >= (1 << 17) ? neg - (1 << 18) : neg;
}

int8_t activate(int8_t q, uint8_t kind, const int8_t lut[256], int8_t lo, int8_t hi) {
#pragma HLS INLINE
    if (kind == ACT_CLAMP) return q < lo ? lo : q > hi ? hi : q;
    if (kind == ACT_LUT) return lut[(int)q + 128];
    return q;
}

void load_lut(const word_t *consts, uint32_t addr, int8_t lut[256]) {
    uint8_t raw[256];
    read_bytes<256>(consts, addr, 256, raw);
    for (int i = 0; i < 256; ++i) {
#pragma HLS UNROLL
        lut[i] = (int8_t)raw[i];
    }
}

uint32_t pixel(uint32_t base, int n, int y, int x, int h, int w, int stride) {
    return base + (uint32_t)(((n * h + y) * w + x) * stride);
}

// Where output pixel (n, y, x) of a layer goes: dense, or interleaved into a 2x larger tensor (a transposed
// conv's phase).
uint32_t out_pixel(const Descriptor &d, int n, int y, int x) {
    int s = d.out_step == 2 ? 2 : 1;
    return pixel(d.out_addr, n, y * s + (s == 2 ? d.out_phase_y : 0), x * s + (s == 2 ? d.out_phase_x : 0),
                 d.out_h * s, d.out_w * s, d.out_c_stride) + d.out_c_offset;
}

// The input as a layer reads it: its zero point outside, through the x2 read mode when flagged.
template <int N>
void read_input(const Descriptor &d, const word_t *act, int n, int y, int x, int c, int8_t out[N]) {
#pragma HLS INLINE
    int up = (d.flags & F_UPSAMPLE2) ? 1 : 0;
    if (y < 0 || x < 0 || y >= (d.in_h << up) || x >= (d.in_w << up)) {
        for (int i = 0; i < N; ++i) out[i] = d.in_zero;
        return;
    }
    load_vec<N>(act, pixel(d.in_addr, n, y >> up, x >> up, d.in_h, d.in_w, d.in_c_stride) + d.in_c_offset + c, out);
}

// Requantisation, act1, residual add and act2 of one group of N channels starting at channel c.
template <int N>
void epilogue(const Descriptor &d, const word_t *act, const int32_t acc[N], const int32_t mult[N],
              const int32_t shift[N], const int8_t lut1[256], const int8_t lut2[256], int n, int y, int x, int c,
              int8_t out[N]) {
#pragma HLS INLINE
    int8_t res[N];
    if (d.flags & F_RESIDUAL)
        load_vec<N>(act, pixel(d.in2_addr, n, y, x, d.conv_h, d.conv_w, d.in2_c_stride) + d.in2_c_offset + c, res);
    for (int i = 0; i < N; ++i) {
#pragma HLS UNROLL
        int32_t x = requant_input(acc[i]);
        int8_t q = sat8(shift_round(by_mult(x, rq_mult(d, x, mult[i], shift[i])), rq_shift(shift[i])));
        q = activate(q, d.act1, lut1, d.act_lo, d.act_hi);
        if (d.flags & F_RESIDUAL) {
            int64_t total = by_mult(q, d.res_mult_a) + by_mult(res[i], d.res_mult_b);
            q = activate(sat8(shift_round(total, d.res_shift)), d.act2, lut2, d.act_lo, d.act_hi);
        }
        out[i] = q;
    }
}

// Rows of conv output kept for the fused max pool: the last pool_kh rows, N channels each, in a ring of a
// power-of-two count of rows (indexed by the row's low bits: no modulo by a variable).
const int RING = ENGINE_POOL_RING;
static int8_t ring[RING][ENGINE_MAX_WIDTH][G];

template <int N>
void emit_pooled_rows(const Descriptor &d, word_t *act, int n, int oy, int c, int &py_next) {
    while (py_next < d.out_h) {
        int first = py_next * d.pool_sh - d.pool_pad_t;
        int last = first + d.pool_kh - 1;
        if (last > oy && oy != d.conv_h - 1) break;
        for (int px = 0; px < d.out_w; ++px) {
#pragma HLS LOOP_TRIPCOUNT max=ENGINE_MAX_WIDTH
            int8_t best[N];
            for (int i = 0; i < N; ++i) best[i] = -128;
            for (int ky = 0; ky < d.pool_kh; ++ky) {
                int ry = first + ky;
                for (int kx = 0; kx < d.pool_kw; ++kx) {
#pragma HLS PIPELINE II=1
                    int rx = px * d.pool_sw - d.pool_pad_l + kx;
                    if (ry < 0 || ry >= d.conv_h || rx < 0 || rx >= d.conv_w) {
                        if (d.flags & F_POOL_PAD_ZERO)          // a zero Pad in front: its zeros take part
                            for (int i = 0; i < N; ++i) best[i] = best[i] < 0 ? (int8_t)0 : best[i];
                        continue;
                    }
                    for (int i = 0; i < N; ++i) {
                        int8_t v = ring[ry & (RING - 1)][rx][i];
                        if (v > best[i]) best[i] = v;
                    }
                }
            }
            store_vec<N>(act, pixel(d.out_addr, n, py_next, px, d.out_h, d.out_w, d.out_c_stride) + d.out_c_offset + c,
                         best);
        }
        ++py_next;
    }
}

template <int N>
void finish_row_pixel(const Descriptor &d, word_t *act, const int8_t y[N], int n, int oy, int ox, int c) {
#pragma HLS INLINE
    if (d.flags & F_POOL) {
        for (int i = 0; i < N; ++i) ring[oy & (RING - 1)][ox][i] = y[i];
    } else {
        store_vec<N>(act, out_pixel(d, n, oy, ox) + c, y);
    }
}

}  // namespace
