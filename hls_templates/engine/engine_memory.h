// The engine's memory ports: 64-byte words of little-endian bytes (kernel ABI v3, docs/kernel-abi.md). Reads of
// descriptors, parameters and tables take the whole words that hold them; activations move as vectors of one
// word at most.
#pragma once
#include "engine.h"

namespace {

// n <= NMAX bytes from any address, read as the whole 64-byte words that hold them (one burst, a word per
// cycle), never a word past them
template <int NMAX>
void read_bytes(const word_t *mem, uint32_t addr, int n, uint8_t out[NMAX]) {
#pragma HLS INLINE off
    const uint32_t first = addr >> 6;
    const int skip = (int)(addr & 63u);
    const int words = (skip + n + 63) / 64;
    for (int w = 0; w < words; ++w) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT max=(NMAX+127)/64
        word_t word = mem[first + w];
        for (int b = 0; b < 64; ++b) {
#pragma HLS UNROLL
            int at = w * 64 + b - skip;
            if (at >= 0 && at < n) out[at] = (uint8_t)word.range(8 * b + 7, 8 * b).to_uint();
        }
    }
}

int32_t le32(const uint8_t *b) {
#pragma HLS INLINE
    return (int32_t)((uint32_t)b[0] | ((uint32_t)b[1] << 8) | ((uint32_t)b[2] << 16) | ((uint32_t)b[3] << 24));
}

// n bytes at an address aligned to n (n divides 64): never crosses a word
template <int N>
void load_vec(const word_t *mem, uint32_t addr, int8_t out[N]) {
#pragma HLS INLINE
    word_t w = mem[addr >> 6];
    unsigned base = addr & 63u;
    for (int i = 0; i < N; ++i) {
#pragma HLS UNROLL
        unsigned lo = (base + i) * 8u;
        out[i] = (int8_t)(uint8_t)w.range(lo + 7, lo).to_uint();
    }
}

template <int N>
void store_vec(word_t *mem, uint32_t addr, const int8_t in[N]) {
#pragma HLS INLINE
    word_t w = mem[addr >> 6];
    unsigned base = addr & 63u;
    for (int i = 0; i < N; ++i) {
#pragma HLS UNROLL
        unsigned lo = (base + i) * 8u;
        w.range(lo + 7, lo) = (uint8_t)in[i];
    }
    mem[addr >> 6] = w;
}

}  // namespace
