// Kernel ABI v3 engine (docs/kernel-abi.md), written for Vitis HLS and compiled with g++ for C-simulation.
// Bit-exact with the numpy reference (fpga_runtime/reference.py): integer arithmetic only.
#include "engine.h"
#include "engine_memory.h"
#include "engine_descriptor.h"
#include "engine_epilogue.h"
#include "engine_window.h"
#include "rsqrt_table.h"

namespace {

void load_requant(const Descriptor &d, const word_t *consts, int c0, int count, int32_t mult[G], int32_t shift[G]) {
    uint8_t raw[8 * G];
    read_bytes<8 * G>(consts, d.requant_addr + 8 * c0, 8 * count, raw);
    for (int i = 0; i < G; ++i) {
#pragma HLS UNROLL
        if (i < count) {
            mult[i] = le32(&raw[8 * i]);
            shift[i] = le32(&raw[8 * i + 4]);
        }
    }
}

void load_channel_params(const Descriptor &d, const word_t *consts, int c0, int count, int32_t bias[G],
                         int32_t mult[G], int32_t shift[G]) {
    uint8_t raw[4 * G];
    read_bytes<4 * G>(consts, d.bias_addr + 4 * c0, 4 * count, raw);
    for (int i = 0; i < G; ++i) {
#pragma HLS UNROLL
        if (i < count) bias[i] = le32(&raw[4 * i]);
    }
    load_requant(d, consts, c0, count, mult, shift);
}

// Under synthesis the weight tile is local to the tile loop's DATAFLOW body, so Vitis HLS makes it a ping-pong
// (PIPO) buffer: the next tile loads while this one computes (WEIGHT_TILE, engine_window.h).
void load_weights(const word_t *consts, uint32_t addr, uint32_t bytes, vec_t wbuf[R][WROWS]) {
    const int per_word = 64 / V;
    for (uint32_t w = 0; w < (bytes + 63) / 64; ++w) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT max=ENGINE_WBUF_BYTES/64
        word_t word = consts[(addr >> 6) + w];
        for (int j = 0; j < per_word; ++j) {
#pragma HLS UNROLL
            const uint32_t k = w * per_word + j;       // the word's j-th V bytes: PE row k % R of weight row k / R
            if (k * V < bytes) wbuf[k % R][k / R] = word.range(8 * V * (j + 1) - 1, 8 * V * j);
        }
    }
}

// The loader process of a standard conv's tile: its weights and its per-channel parameters, the only reads of
// the constant port inside the dataflow region.
void load_tile(const Descriptor d, const word_t *consts, int ot, uint32_t tile_bytes,
               vec_t wbuf[R][WROWS], int32_t bias[G], int32_t mult[G], int32_t shift[G]) {
    load_weights(consts, d.weight_addr + ot * tile_bytes, tile_bytes, wbuf);
    load_channel_params(d, consts, ot * R, R, bias, mult, shift);
}

// The compute process of one output-channel tile: every output pixel accumulates R x V products per cycle
// over kernel taps and input-channel tiles, then the epilogue, then the write (or the fused pool's line
// buffer). It alone touches the activation port inside the dataflow region.
void compute_tile(const Descriptor d, word_t *act, const vec_t wbuf[R][WROWS], const int32_t bias[G],
                  const int32_t mult[G], const int32_t shift[G], const int8_t lut1[256], const int8_t lut2[256],
                  int n, int ot) {
    const int ic_tiles = d.in_c / V;
    int py_next = 0;
    for (int oy = 0; oy < d.conv_h; ++oy) {
        for (int ox = 0; ox < d.conv_w; ++ox) {
#pragma HLS LOOP_TRIPCOUNT max=ENGINE_MAX_WIDTH
            int32_t acc[R];
#pragma HLS ARRAY_PARTITION variable=acc complete
            for (int r = 0; r < R; ++r) acc[r] = bias[r];
            for (int ky = 0; ky < d.kh; ++ky) {
                for (int kx = 0; kx < d.kw; ++kx) {
                    int iy = oy * d.stride_h - d.pad_t + ky * d.dil_h;
                    int ix = ox * d.stride_w - d.pad_l + kx * d.dil_w;
                    for (int it = 0; it < ic_tiles; ++it) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT max=256
                        int8_t xv[V];
                        read_input<V>(d, act, n, iy, ix, it * V, xv);
                        vec_t x;
                        for (int v = 0; v < V; ++v) x.range(8 * v + 7, 8 * v) = (uint8_t)xv[v];
                        const int k = (ky * d.kw + kx) * ic_tiles + it;
                        for (int r = 0; r < R; ++r) {
#pragma HLS UNROLL
                            acc[r] += dot(x, wbuf[r][k]);
                        }
                    }
                }
            }
            int8_t y[R];
            epilogue<R>(d, act, acc, mult, shift, lut1, lut2, n, oy, ox, ot * R, y);
            finish_row_pixel<R>(d, act, y, n, oy, ox, ot * R);
        }
        if (d.flags & F_POOL) emit_pooled_rows<R>(d, act, n, oy, ot * R, py_next);
    }
}

// Standard convolution: output-channel tiles in a canonical dataflow loop body (a loader and a compute process,
// local buffers between them, each port read by one process): the load of tile t+1 overlaps tile t. The count
// of array steps is known from the descriptor, so no process writes a shared counter.
void conv_standard(const Descriptor &d, word_t *act, const word_t *consts, const int8_t lut1[256],
                   const int8_t lut2[256], uint64_t &cycles) {
    const uint32_t tile_bytes = (uint32_t)d.kh * d.kw * (d.in_c / V) * R * V;
    const uint64_t tiles = (uint64_t)d.batch * (d.out_c / R);
    const bool window = on_window_path(d);
    const uint64_t pixel_steps = window ? (uint64_t)d.conv_h * ((d.conv_w + P - 1) / P) : (uint64_t)d.conv_h * d.conv_w;
    ENGINE_STEPS(cycles, tiles * (tile_bytes / 64 + pixel_steps * d.kh * d.kw * (d.in_c / V)));
    for (int n = 0; n < d.batch; ++n) {
        for (int ot = 0; ot < d.out_c / R; ++ot) {
#pragma HLS DATAFLOW
            WEIGHT_TILE(wbuf);
#pragma HLS ARRAY_PARTITION variable=wbuf complete dim=1
            int32_t bias[G], mult[G], shift[G];
#pragma HLS ARRAY_PARTITION variable=bias complete
#pragma HLS ARRAY_PARTITION variable=mult complete
#pragma HLS ARRAY_PARTITION variable=shift complete
            load_tile(d, consts, ot, tile_bytes, wbuf, bias, mult, shift);
            if (window) compute_window_tile(d, act, wbuf, bias, mult, shift, lut1, lut2, n, ot);
            else compute_tile(d, act, wbuf, bias, mult, shift, lut1, lut2, n, ot);
        }
    }
}

// Integer Winograd F(2x2, 3x3), the C model of a CONV flagged WINOGRAD (docs/kernel-abi.md, "Winograd layers";
// fpga_runtime/winograd.py): per 2x2 output tile and input-channel tile, the 4x4 input patch's V = B^T d B
// (adds), then per position one array step of R x V products. Y = A^T M A is linear in M, so no M is kept: each
// step's sums go straight into the tile's four outputs with the signs A^T[i][a] A^T[j][b] of its position (a, b),
// as the RTL's Winograd unit does (window_conv.sv). A row of tiles makes two output rows, which go through the
// epilogue in row order (the fused pool's ring expects them so).
const int WINO_AT[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};

void winograd_patch(const Descriptor &d, const word_t *act, int n, int ty, int tx, int c, int16_t v[16][V]) {
    int16_t x[4][4][V], t[4][4][V];
    for (int a = 0; a < 4; ++a)
        for (int b = 0; b < 4; ++b) {
            int8_t xv[V];
            read_input<V>(d, act, n, 2 * ty - d.pad_t + a, 2 * tx - d.pad_l + b, c, xv);
            for (int i = 0; i < V; ++i) x[a][b][i] = xv[i];
        }
    for (int b = 0; b < 4; ++b)
        for (int i = 0; i < V; ++i) {
            t[0][b][i] = x[0][b][i] - x[2][b][i];
            t[1][b][i] = x[1][b][i] + x[2][b][i];
            t[2][b][i] = x[2][b][i] - x[1][b][i];
            t[3][b][i] = x[1][b][i] - x[3][b][i];
        }
    for (int a = 0; a < 4; ++a)
        for (int i = 0; i < V; ++i) {
            v[4 * a + 0][i] = t[a][0][i] - t[a][2][i];
            v[4 * a + 1][i] = t[a][1][i] + t[a][2][i];
            v[4 * a + 2][i] = t[a][2][i] - t[a][1][i];
            v[4 * a + 3][i] = t[a][1][i] - t[a][3][i];
        }
}

void conv_winograd(const Descriptor &d, word_t *act, const word_t *consts, const int8_t lut1[256],
                   const int8_t lut2[256], uint64_t &cycles) {
    const int ic_tiles = d.in_c / V;
    const uint32_t tile_bytes = 16u * ic_tiles * R * V;
    const int rows = (d.conv_h + 1) / 2, cols = (d.conv_w + 1) / 2;
    ENGINE_STEPS(cycles, (uint64_t)d.batch * (d.out_c / R) *
                         (tile_bytes / 64 + (uint64_t)rows * ((cols + P - 1) / P) * 16 * ic_tiles));
    static int32_t ybuf[2][ENGINE_MAX_WIDTH + 1][R];
    for (int n = 0; n < d.batch; ++n) {
        for (int ot = 0; ot < d.out_c / R; ++ot) {
            WEIGHT_TILE(wbuf);
            int32_t bias[G], mult[G], shift[G];
            load_tile(d, consts, ot, tile_bytes, wbuf, bias, mult, shift);
            int py_next = 0;
            for (int ty = 0; ty < rows; ++ty) {
                for (int tx = 0; tx < cols; ++tx) {
                    int32_t y[2][2][R];                     // the tile's outputs (i, j), bias first
                    for (int i = 0; i < 2; ++i)
                        for (int j = 0; j < 2; ++j)
                            for (int r = 0; r < R; ++r) y[i][j][r] = bias[r];
                    for (int it = 0; it < ic_tiles; ++it) {
                        int16_t v[16][V];
                        winograd_patch(d, act, n, ty, tx, it * V, v);
                        for (int p = 0; p < 16; ++p)        // a step: position p's V lanes, R rows of weights
                            for (int r = 0; r < R; ++r) {
                                const vec_t &w = wbuf[r][p * ic_tiles + it];
                                int32_t s = 0;
                                for (int i = 0; i < V; ++i) s += (int32_t)v[p][i] * (int32_t)lane(w, i);
                                for (int i = 0; i < 2; ++i)
                                    for (int j = 0; j < 2; ++j)
                                        y[i][j][r] += WINO_AT[i][p / 4] * WINO_AT[j][p % 4] * s;
                            }
                    }
                    for (int i = 0; i < 2; ++i)
                        for (int j = 0; j < 2; ++j)
                            for (int r = 0; r < R; ++r) ybuf[i][2 * tx + j][r] = y[i][j][r];
                }
                for (int i = 0; i < 2 && 2 * ty + i < d.conv_h; ++i) {
                    const int oy = 2 * ty + i;
                    for (int ox = 0; ox < d.conv_w; ++ox) {
                        int8_t y[R];
                        epilogue<R>(d, act, ybuf[i][ox], mult, shift, lut1, lut2, n, oy, ox, ot * R, y);
                        finish_row_pixel<R>(d, act, y, n, oy, ox, ot * R);
                    }
                    if (d.flags & F_POOL) emit_pooled_rows<R>(d, act, n, oy, ot * R, py_next);
                }
            }
        }
    }
}

// Depthwise convolution: V channels at a time, each with its own kernel.
void conv_depthwise(const Descriptor &d, word_t *act, const word_t *consts, const int8_t lut1[256],
                    const int8_t lut2[256], uint64_t &cycles) {
    const uint32_t tile_bytes = (uint32_t)d.kh * d.kw * V;
    for (int n = 0; n < d.batch; ++n) {
        for (int ct = 0; ct < d.out_c / V; ++ct) {
            uint8_t wt[ENGINE_MAX_KERNEL * ENGINE_MAX_KERNEL * V];
            read_bytes<ENGINE_MAX_KERNEL * ENGINE_MAX_KERNEL * V>(consts, d.weight_addr + ct * tile_bytes, tile_bytes, wt);
            int32_t bias[G], mult[G], shift[G];
#pragma HLS ARRAY_PARTITION variable=bias complete
#pragma HLS ARRAY_PARTITION variable=mult complete
#pragma HLS ARRAY_PARTITION variable=shift complete
            load_channel_params(d, consts, ct * V, V, bias, mult, shift);
            int py_next = 0;
            for (int oy = 0; oy < d.conv_h; ++oy) {
                for (int ox = 0; ox < d.conv_w; ++ox) {
                    int32_t acc[V];
                    for (int v = 0; v < V; ++v) acc[v] = bias[v];
                    for (int ky = 0; ky < d.kh; ++ky) {
                        for (int kx = 0; kx < d.kw; ++kx) {
#pragma HLS PIPELINE II=1
                            int8_t xv[V];
                            read_input<V>(d, act, n, oy * d.stride_h - d.pad_t + ky * d.dil_h,
                                          ox * d.stride_w - d.pad_l + kx * d.dil_w, ct * V, xv);
                            for (int v = 0; v < V; ++v) acc[v] += (int32_t)xv[v] * (int32_t)(int8_t)wt[(ky * d.kw + kx) * V + v];
                            ENGINE_STEPS(cycles, 1);
                        }
                    }
                    int8_t y[V];
                    epilogue<V>(d, act, acc, mult, shift, lut1, lut2, n, oy, ox, ct * V, y);
                    finish_row_pixel<V>(d, act, y, n, oy, ox, ct * V);
                }
                if (d.flags & F_POOL) emit_pooled_rows<V>(d, act, n, oy, ct * V, py_next);
            }
        }
    }
}

// Global average pool: V channels at a time, one input pixel per cycle into int32 sums, then the per-channel
// requantisation (the multiplier holds 1 / pixels).
void global_avg_pool(const Descriptor &d, word_t *act, const word_t *consts, uint64_t &cycles) {
    for (int n = 0; n < d.batch; ++n)
        for (int c = 0; c < d.out_c; c += V) {
            int32_t sum[V];
#pragma HLS ARRAY_PARTITION variable=sum complete
            for (int v = 0; v < V; ++v) sum[v] = 0;
            for (int y = 0; y < d.in_h; ++y)
                for (int x = 0; x < d.in_w; ++x) {
#pragma HLS PIPELINE II=1
                    int8_t xv[V];
                    read_input<V>(d, act, n, y, x, c, xv);
                    for (int v = 0; v < V; ++v) sum[v] += xv[v];
                    ENGINE_STEPS(cycles, 1);
                }
            int32_t mult[G], shift[G];
            load_requant(d, consts, c, V, mult, shift);
            int8_t out[V];
            for (int v = 0; v < V; ++v) {
#pragma HLS UNROLL
                out[v] = sat8(shift_round(by_mult(requant_input(sum[v]), mult[v]), rq_shift(shift[v])));
            }
            store_vec<V>(act, pixel(d.out_addr, n, 0, 0, 1, 1, d.out_c_stride) + d.out_c_offset + c, out);
        }
}

// L2NORM: per pixel, the sum of squares over its channels (V per cycle), 1 / sqrt of it from the table
// (l2norm_factor in fpga_runtime/abi.py), then the channels again, scaled.
void l2_normalize(const Descriptor &d, word_t *act, uint64_t &cycles) {
    for (int n = 0; n < d.batch; ++n)
        for (int y = 0; y < d.out_h; ++y)
            for (int x = 0; x < d.out_w; ++x) {
                int32_t ss = 0;
                for (int c = 0; c < d.in_c; c += V) {
#pragma HLS PIPELINE II=1
                    int8_t xv[V];
                    read_input<V>(d, act, n, y, x, c, xv);
                    for (int v = 0; v < V; ++v) ss += (int32_t)xv[v] * xv[v];
                    ENGINE_STEPS(cycles, 1);
                }
                int64_t k = 0;
                int sh = 0;
                if (ss > 0) {
                    int z = 0;
                    while (!((uint32_t)ss & (0x80000000u >> z))) ++z;     // leading zeros of a 32-bit word
                    z &= ~1;
                    uint32_t idx = ((uint32_t)ss << z) >> 22;
                    k = shift_round(by_mult(RSQRT_TABLE[idx], d.res_mult_a), 23);     // below 2^17
                    sh = d.res_shift + 14 - z / 2;
                }
                for (int c = 0; c < d.in_c; c += V) {
#pragma HLS PIPELINE II=1
                    int8_t xv[V], out[V];
                    read_input<V>(d, act, n, y, x, c, xv);
                    for (int v = 0; v < V; ++v) out[v] = sat8(shift_round(by_mult(xv[v], (int32_t)k), sh));
                    store_vec<V>(act, out_pixel(d, n, y, x) + c, out);
                    ENGINE_STEPS(cycles, 1);
                }
            }
}

// ADD, MAXPOOL, COPY and SCALE work on V channels per cycle.
void elementwise(const Descriptor &d, word_t *act, const int8_t lut1[256], const int8_t lut2[256],
                 uint64_t &cycles) {
    for (int n = 0; n < d.batch; ++n)
        for (int y = 0; y < d.out_h; ++y)
            for (int x = 0; x < d.out_w; ++x)
                for (int c = 0; c < d.out_c; c += V) {
#pragma HLS PIPELINE II=1
                    int8_t out[V];
                    if (d.op == OP_MAXPOOL) {
                        for (int v = 0; v < V; ++v) out[v] = -128;
                        for (int ky = 0; ky < d.pool_kh; ++ky)
                            for (int kx = 0; kx < d.pool_kw; ++kx) {
                                int iy = y * d.pool_sh - d.pool_pad_t + ky, ix = x * d.pool_sw - d.pool_pad_l + kx;
                                int up = (d.flags & F_UPSAMPLE2) ? 1 : 0;
                                if (iy < 0 || ix < 0 || iy >= (d.in_h << up) || ix >= (d.in_w << up)) {
                                    if (d.flags & F_POOL_PAD_ZERO)
                                        for (int v = 0; v < V; ++v) out[v] = out[v] < 0 ? (int8_t)0 : out[v];
                                    continue;
                                }
                                int8_t v8[V];
                                read_input<V>(d, act, n, iy, ix, c, v8);
                                for (int v = 0; v < V; ++v) out[v] = v8[v] > out[v] ? v8[v] : out[v];
                            }
                    } else {
                        read_input<V>(d, act, n, y, x, c, out);
                        if (d.op == OP_SCALE) {
                            int8_t g[V];
                            load_vec<V>(act, pixel(d.in2_addr, n, 0, 0, 1, 1, d.in2_c_stride) + d.in2_c_offset + c, g);
                            for (int v = 0; v < V; ++v)
                                out[v] = sat8(shift_round(by_mult(out[v] * (g[v] + d.res_mult_b), d.res_mult_a),
                                                          d.res_shift));      // res_mult_b: the gate's offset
                        }
                        if (d.op == OP_ADD) {
                            int8_t b[V];
                            load_vec<V>(act, pixel(d.in2_addr, n, y, x, d.out_h, d.out_w, d.in2_c_stride) + d.in2_c_offset + c, b);
                            for (int v = 0; v < V; ++v) {
                                int64_t total = by_mult(out[v], d.res_mult_a) + by_mult(b[v], d.res_mult_b);
                                int8_t q = activate(sat8(shift_round(total, d.res_shift)), d.act1, lut1, d.act_lo, d.act_hi);
                                out[v] = activate(q, d.act2, lut2, d.act_lo, d.act_hi);
                            }
                        }
                    }
                    store_vec<V>(act, out_pixel(d, n, y, x) + c, out);
                    ENGINE_STEPS(cycles, 1);
                }
}

}  // namespace

void engine(const word_t *program, uint32_t layer_count, word_t *act, const word_t *consts, uint64_t *cycles,
            volatile const uint64_t *clock) {
// depths: the build's regions in 64-byte words (co-simulation sizes its memories by them)
#pragma HLS INTERFACE m_axi port=program offset=slave bundle=gmem0 depth=ENGINE_CONST_WORDS
#pragma HLS INTERFACE m_axi port=act offset=slave bundle=gmem1 depth=ENGINE_ACT_WORDS max_read_burst_length=64 max_write_burst_length=64
#pragma HLS INTERFACE m_axi port=consts offset=slave bundle=gmem2 depth=ENGINE_CONST_WORDS max_read_burst_length=64
#pragma HLS INTERFACE s_axilite port=layer_count
#pragma HLS INTERFACE s_axilite port=cycles
#pragma HLS INTERFACE s_axilite port=return
#if ENGINE_CLOCK_PORT
#pragma HLS INTERFACE ap_none port=clock
#endif
    uint64_t count = 0;
#if defined(__SYNTHESIS__) && ENGINE_CLOCK_PORT
    const uint64_t start = *clock;
#endif
    int8_t lut1[256], lut2[256];          // every lane looks up in the same cycle: registers, not a RAM
#pragma HLS ARRAY_PARTITION variable=lut1 complete
#pragma HLS ARRAY_PARTITION variable=lut2 complete
    for (uint32_t i = 0; i < layer_count; ++i) {
#pragma HLS LOOP_TRIPCOUNT max=256
        Descriptor d = fetch(program, i);
        if (!fits(d)) {             // a program compiled for a bigger engine: refuse, never overrun a buffer
            *cycles = ENGINE_ERROR;
            return;
        }
        if (d.act1 == ACT_LUT) load_lut(consts, d.lut1_addr, lut1);
        if (d.act2 == ACT_LUT) load_lut(consts, d.lut2_addr, lut2);
        if (d.op == OP_CONV) {
            if (d.flags & F_DEPTHWISE) conv_depthwise(d, act, consts, lut1, lut2, count);
            else if (d.flags & F_WINOGRAD) conv_winograd(d, act, consts, lut1, lut2, count);
            else conv_standard(d, act, consts, lut1, lut2, count);
        } else if (d.op == OP_GLOBAL_AVG_POOL) {
            global_avg_pool(d, act, consts, count);
        } else if (d.op == OP_L2NORM) {
            l2_normalize(d, act, count);
        } else {
            elementwise(d, act, lut1, lut2, count);
        }
    }
#if defined(__SYNTHESIS__) && ENGINE_CLOCK_PORT
    ap_wait();                      // the second read after every write of the program, not hoisted above it
    *cycles = *clock - start;
#else
    (void)clock;
    *cycles = count;
#endif
}
