// A layer descriptor: its 128 bytes from the program (docs/kernel-abi.md, "Layer descriptor") as fields, and
// whether this engine, generated for this build's kernels, widths and weight tiles, can run it.
#pragma once
#include "engine.h"
#include "engine_memory.h"

namespace {

Descriptor fetch(const word_t *program, uint32_t index) {
    uint8_t b[128];
#pragma HLS ARRAY_PARTITION variable=b complete
    read_bytes<128>(program, 16 + 128 * index, 128, b);       // three words: the header is 16 bytes
#define U8(o) (b[o])
#define U16(o) ((uint16_t)(b[o] | (b[(o) + 1] << 8)))
#define U32(o) ((uint32_t)b[o] | ((uint32_t)b[(o) + 1] << 8) | ((uint32_t)b[(o) + 2] << 16) | ((uint32_t)b[(o) + 3] << 24))
    Descriptor d;
    d.op = U8(0); d.flags = U8(1); d.act1 = U8(2); d.act2 = U8(3);
    d.batch = U16(4); d.in_h = U16(6); d.in_w = U16(8); d.in_c = U16(10); d.in_c_stride = U16(12);
    d.in_c_offset = U16(14); d.out_h = U16(16); d.out_w = U16(18); d.out_c = U16(20); d.out_c_stride = U16(22);
    d.out_c_offset = U16(24); d.conv_h = U16(26); d.conv_w = U16(28);
    d.kh = U8(30); d.kw = U8(31); d.stride_h = U8(32); d.stride_w = U8(33); d.dil_h = U8(34); d.dil_w = U8(35);
    d.pad_t = U8(36); d.pad_l = U8(37); d.pad_b = U8(38); d.pad_r = U8(39);
    d.pool_kh = U8(40); d.pool_kw = U8(41); d.pool_sh = U8(42); d.pool_sw = U8(43);
    d.pool_pad_t = U8(44); d.pool_pad_l = U8(45); d.pool_pad_b = U8(46); d.pool_pad_r = U8(47);
    d.act_lo = (int8_t)U8(48); d.act_hi = (int8_t)U8(49); d.res_shift = U8(50); d.in_zero = (int8_t)U8(51);
    d.in2_c_stride = U16(52); d.in2_c_offset = U16(54);
    d.in_addr = U32(56); d.in2_addr = U32(60); d.weight_addr = U32(64); d.bias_addr = U32(68);
    d.requant_addr = U32(72); d.lut1_addr = U32(76); d.lut2_addr = U32(80); d.out_addr = U32(84);
    d.res_mult_a = (int32_t)U32(88); d.res_mult_b = (int32_t)U32(92); d.layer_id = U32(96);
    d.out_step = U8(100); d.out_phase_y = U8(101); d.out_phase_x = U8(102);
#undef U8
#undef U16
#undef U32
    return d;
}

bool fits(const Descriptor &d) {
    if (d.op < OP_CONV || d.op > OP_L2NORM) return false;
    if (d.op == OP_L2NORM && (d.in_c != d.out_c || d.res_shift < 2 || d.res_shift > 26)) return false;
    if (d.res_mult_a < 0 || d.res_mult_a >= MULT_LIMIT || d.res_mult_b < 0 || d.res_mult_b >= MULT_LIMIT) return false;
    if (d.out_step > 2) return false;
    if (d.out_step == 2 && (d.op != OP_CONV || (d.flags & (F_POOL | F_RESIDUAL)) || d.out_phase_y > 1 || d.out_phase_x > 1))
        return false;
    if (d.op != OP_CONV) return true;
    if (d.kh > ENGINE_MAX_KERNEL || d.kw > ENGINE_MAX_KERNEL) return false;
    if ((d.flags & F_POOL) && (d.conv_w > ENGINE_MAX_WIDTH || d.pool_kh > ENGINE_POOL_RING)) return false;   // the row ring
    if ((d.flags & F_POOL) && d.pool_kh == 1 && d.pool_kw == 1) return false;   // as the RTL's (one tap: pool_unit.sv)
    if (d.in_c % ENGINE_VEC || d.out_c % (d.flags & F_DEPTHWISE ? ENGINE_VEC : ENGINE_PE_ROWS)) return false;
    if (d.flags & F_WINOGRAD)         // a standard 3x3 stride-1 conv, 16 weights per channel pair
        return !(d.flags & (F_DEPTHWISE | F_UPSAMPLE2)) && d.kh == 3 && d.kw == 3 && d.stride_h == 1 &&
               d.stride_w == 1 && d.dil_h == 1 && d.dil_w == 1 && d.out_step != 2 && d.in_c <= 2048 &&
               d.conv_w <= ENGINE_MAX_WIDTH && (uint64_t)16 * d.in_c * ENGINE_PE_ROWS <= ENGINE_WBUF_BYTES;
    return (d.flags & F_DEPTHWISE) || (uint64_t)d.kh * d.kw * d.in_c * ENGINE_PE_ROWS <= ENGINE_WBUF_BYTES;
}

}  // namespace
