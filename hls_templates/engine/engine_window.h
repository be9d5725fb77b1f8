// The array's operands and the window path of a standard conv, the HLS twin of window_conv.sv
// (docs/kernel-abi.md, "Window path"): input rows stream once per output-channel tile into an on-chip window
// of P banks, and each step multiplies P neighbouring output pixels of a row by one weight row (R x V bytes),
// P x R x V MACs. Steps walk (ky, kx, input-channel tile) for each group of P pixels, groups along the row.
// One pipelined loop per output row does three things a cycle, as the RTL's units do side by side: the load
// of one input vector of a later row (below `load_limit`, so the rows the current row reads stay), one array
// step, and the epilogue of one pixel of the group finished before.
#pragma once
#include "engine.h"
#include "engine_epilogue.h"

namespace {

const int P = ENGINE_PIXELS;
const int WROWS = ENGINE_WEIGHT_ROWS;
typedef ap_uint<8 * ENGINE_VEC> vec_t;        // V input channels of one pixel: a window word

// A weight tile as the array reads it: bank r holds PE row r's V bytes of every (tap, input tile) row, so one
// step reads R x V bytes in one cycle (bank r's row k is the tile's bytes [(k R + r) V, (k R + r + 1) V)).
#ifdef __SYNTHESIS__
#define WEIGHT_TILE(name) vec_t name[R][WROWS]
#else
#define WEIGHT_TILE(name) static vec_t name[R][WROWS]
#endif

int8_t lane(const vec_t &x, int i) {
#pragma HLS INLINE
    return (int8_t)(uint8_t)x.range(8 * i + 7, 8 * i).to_uint();
}

int32_t dot(const vec_t &x, const vec_t &w) {
#pragma HLS INLINE
    int32_t sum = 0;
    for (int v = 0; v < V; ++v) {
#pragma HLS UNROLL
        sum += (int32_t)lane(x, v) * (int32_t)lane(w, v);
    }
    return sum;
}

vec_t splat(int8_t b) {
    vec_t x = 0;
    for (int v = 0; v < V; ++v) x.range(8 * v + 7, 8 * v) = (uint8_t)b;
    return x;
}

// A row position's bank (its remainder modulo P) and its column in the bank (the quotient, rounded down: a position
// left of the row, in the padding, has a negative one); P need not be a power of two.
int bank_of(int pos) {
#pragma HLS INLINE
    const int m = pos % P;
    return m < 0 ? m + P : m;
}

int column_of(int pos) {
#pragma HLS INLINE
    return (pos - bank_of(pos)) / P;
}

int pow2_at_least(int v) {
    int p = 1;
    while (p < v) p *= 2;
    return p;
}

// Input rows the window holds for a layer (layer_descriptor.sv's ahead_fits_q, least_fits_q): kh + stride + 1
// rows, a power of two up to 8, so later rows load while these are read; else kh; 0: the layer takes the per-tap path.
int window_slots(const Descriptor &d, int row_words) {
    const int sizes[2] = {pow2_at_least(d.kh + d.stride_h + 1), pow2_at_least(d.kh)};
    for (int i = 0; i < 2; ++i)
        if (sizes[i] <= 8 && sizes[i] * row_words <= ENGINE_WINDOW_WORDS) return sizes[i];
    return 0;
}

// A row's words per bank: each stride phase of the row spread over the P banks, a word per V input channels.
int window_row_words(const Descriptor &d) {
    const int sh = d.stride_w == 2 ? 1 : 0;
    const int cols = ((((int)d.in_w + sh) >> sh) + P - 1) / P;
    return (1 << sh) * cols * (d.in_c / V);
}

// The layers the window path runs (the `win` decision of layer_descriptor.sv, less its residual-queue limit:
// here the residual operand is read where the epilogue needs it): standard, undilated, square stride 1 or 2,
// no x2 read mode, and a window that holds the rows.
bool on_window_path(const Descriptor &d) {
    return P > 1 && d.op == OP_CONV && !(d.flags & (F_DEPTHWISE | F_UPSAMPLE2)) && d.dil_h == 1 && d.dil_w == 1
           && d.stride_h == d.stride_w && (d.stride_w == 1 || d.stride_w == 2)
           && window_slots(d, window_row_words(d)) > 0;
}

// The window: bank b holds the row positions (column >> stride bit) equal to b modulo P, so the P pixels of a
// step, at consecutive positions of one stride phase, read P different banks.
#ifdef __SYNTHESIS__
#define WINDOW(name) vec_t name[P][ENGINE_WINDOW_WORDS]
#else
#define WINDOW(name) static vec_t name[P][ENGINE_WINDOW_WORDS]
#endif

struct WindowLayout {
    int sh, it_n, phase_words, slot_mask;

    int addr(int iy, int pos, int phase, int it) const {
#pragma HLS INLINE
        return (((iy & slot_mask) << sh) + phase) * phase_words + column_of(pos) * it_n + it;
    }
};

// The compute process of one output-channel tile on the window path.
void compute_window_tile(const Descriptor d, word_t *act, const vec_t w[R][WROWS], const int32_t bias[G],
                         const int32_t mult[G], const int32_t shift[G], const int8_t lut1[256],
                         const int8_t lut2[256], int n, int ot) {
    WINDOW(window);
#pragma HLS ARRAY_PARTITION variable=window complete dim=1
#pragma HLS DEPENDENCE variable=window inter false
    const int it_n = d.in_c / V;
    const int sh = d.stride_w == 2 ? 1 : 0;
    const int row_words = window_row_words(d);
    const int slots = window_slots(d, row_words);
    const WindowLayout at = {sh, it_n, row_words >> sh, slots - 1};
    const int groups = ((int)d.conv_w + P - 1) / P;
    const vec_t outside = splat(d.in_zero);

    int loaded = 0, lx = 0, lit = 0;          // the next input vector to load: row, column, input tile
    word_t held = 0;                          // the activation word the last load read
    uint32_t held_at = 0xFFFFFFFFu;
    int32_t acc[P][R], done[P][R];           // the group in the array, and the finished group in the epilogue
#pragma HLS ARRAY_PARTITION variable=acc complete dim=0
#pragma HLS ARRAY_PARTITION variable=done complete dim=0
    int py_next = 0;
    for (int oy = 0; oy < d.conv_h; ++oy) {
#pragma HLS LOOP_TRIPCOUNT max=ENGINE_MAX_WIDTH
        const int first = oy * d.stride_h - d.pad_t;
        const int need = first + d.kh < d.in_h ? first + d.kh : d.in_h;     // rows this output row reads
        const int limit_rows = (first > 0 ? first : 0) + slots;
        const int limit = limit_rows < d.in_h ? limit_rows : d.in_h;        // rows that may be in the window
        int g = 0, ky = 0, kx = 0, it = 0, pending = 0, pending_g = 0;
        bool computing = true;
        for (int p = 0; p < P; ++p)
            for (int r = 0; r < R; ++r) acc[p][r] = bias[r];
        while (computing || pending > 0 || loaded < need) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT max=ENGINE_MAX_WIDTH*ENGINE_MAX_KERNEL*ENGINE_MAX_KERNEL*16
            // the epilogue: one finished pixel
            if (pending > 0) {
                const int p = P - pending;
                const int ox = pending_g * P + p;
                if (ox < d.conv_w) {
                    int8_t y[R];
                    epilogue<R>(d, act, done[p], mult, shift, lut1, lut2, n, oy, ox, ot * R, y);
                    finish_row_pixel<R>(d, act, y, n, oy, ox, ot * R);
                }
                --pending;
            }
            // the load: one input vector, read in address order along the row
            const bool load = loaded < limit;
            if (load) {
                const uint32_t a = pixel(d.in_addr, n, loaded, lx, d.in_h, d.in_w, d.in_c_stride) + d.in_c_offset
                                   + lit * V;
                if ((a >> 6) != held_at) {          // each word once, in increasing address order: a burst
                    held = act[a >> 6];
                    held_at = a >> 6;
                }
                const unsigned lo = (a & 63u) * 8u;
                const vec_t x = held.range(lo + 8 * V - 1, lo);
                const int pos = lx >> sh;
                window[bank_of(pos)][at.addr(loaded, pos, lx & sh, lit)] = x;
                if (++lit == it_n) {
                    lit = 0;
                    if (++lx == d.in_w) {
                        lx = 0;
                        ++loaded;
                    }
                }
            }
            // the array: one step of group g, once the rows it reads are in and the epilogue has room
            const bool last = ky == d.kh - 1 && kx == d.kw - 1 && it == it_n - 1;
            if (computing && loaded >= need && !(last && pending > 0)) {
                const int iy = first + ky;
                const int base = g * P + ((kx - (int)d.pad_l) >> sh);      // position of pixel 0
                const int phase = (kx - (int)d.pad_l) & sh;
                const int k = (ky * d.kw + kx) * it_n + it;
                vec_t x[P];
#pragma HLS ARRAY_PARTITION variable=x complete
                for (int b = 0; b < P; ++b) {          // one read per bank, rotated to its pixel
#pragma HLS UNROLL
                    const int p = bank_of(b - base);
                    const int pos = base + p;
                    const int ix = (pos << sh) + phase;
                    const bool inside = iy >= 0 && iy < d.in_h && ix >= 0 && ix < d.in_w;
                    x[p] = inside ? window[b][at.addr(iy, pos, phase, it)] : outside;
                }
                for (int p = 0; p < P; ++p) {
#pragma HLS UNROLL
                    for (int r = 0; r < R; ++r) {
#pragma HLS UNROLL
                        acc[p][r] += dot(x[p], w[r][k]);
                    }
                }
                if (last) {
                    for (int p = 0; p < P; ++p)
                        for (int r = 0; r < R; ++r) {
                            done[p][r] = acc[p][r];
                            acc[p][r] = bias[r];
                        }
                    pending = P;
                    pending_g = g;
                    computing = ++g < groups;
                }
                if (++it == it_n) {
                    it = 0;
                    if (++kx == d.kw) {
                        kx = 0;
                        if (++ky == d.kh) ky = 0;
                    }
                }
            }
        }
        if (d.flags & F_POOL) emit_pooled_rows<R>(d, act, n, oy, ot * R, py_next);
    }
}

}  // namespace
