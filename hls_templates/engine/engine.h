// Kernel ABI v3 engine for Vitis HLS (see docs/kernel-abi.md). One call runs a whole program of layer
// descriptors over two memory regions: activations (int8 NHWC) and constants (weights, biases,
// requantisation and lookup tables, programs). All arithmetic is integer and matches fpga_runtime/abi.py.
#pragma once

#include <stdint.h>
#include <ap_int.h>

#include "engine_config.h"

typedef ap_uint<512> word_t;                 // one 64-byte AXI beat
typedef ap_int<18> mult_t;                   // every epilogue multiplier is below 2^17: one DSP48 port
#define MULT_LIMIT (1 << 17)

enum Op { OP_CONV = 1, OP_ADD = 2, OP_MAXPOOL = 3, OP_COPY = 4, OP_GLOBAL_AVG_POOL = 5, OP_SCALE = 6, OP_L2NORM = 7 };
enum Flag { F_DEPTHWISE = 1, F_RESIDUAL = 2, F_POOL = 4, F_UPSAMPLE2 = 8, F_POOL_PAD_ZERO = 16, F_PRELU = 32,
           F_WINOGRAD = 64 };
enum Act { ACT_NONE = 0, ACT_CLAMP = 1, ACT_LUT = 2 };

// *cycles after a program with a layer this engine was not built for (kernel, width, weight tile, channels)
#define ENGINE_ERROR 0xFFFFFFFFFFFFFFFFull

struct Descriptor {
    uint8_t op, flags, act1, act2;
    uint16_t batch, in_h, in_w, in_c, in_c_stride, in_c_offset;
    uint16_t out_h, out_w, out_c, out_c_stride, out_c_offset, conv_h, conv_w;
    uint8_t kh, kw, stride_h, stride_w, dil_h, dil_w, pad_t, pad_l, pad_b, pad_r;
    uint8_t pool_kh, pool_kw, pool_sh, pool_sw, pool_pad_t, pool_pad_l, pool_pad_b, pool_pad_r;
    int8_t act_lo, act_hi;
    uint8_t res_shift;
    int8_t in_zero;                               // conv: input taps outside the image (its zero point)
    uint16_t in2_c_stride, in2_c_offset;
    uint32_t in_addr, in2_addr, weight_addr, bias_addr, requant_addr, lut1_addr, lut2_addr, out_addr;
    int32_t res_mult_a, res_mult_b;
    uint32_t layer_id;
    uint8_t out_step, out_phase_y, out_phase_x;   // out_step 2: output (y, x) -> (2y + phase_y, 2x + phase_x)
};

// *cycles after a run: on the board, fabric clock cycles from the call's start to its end, the difference of two
// reads of `clock`, a free-running counter the overlay feeds in (ENGINE_CLOCK_PORT). C-simulation has no
// clock: there it is the count of array steps, and so it is where a build has no clock port (Alveo kernels
// take AXI ports only; XRT's profiling times their runs).
void engine(const word_t *program, uint32_t layer_count, word_t *act, const word_t *consts, uint64_t *cycles,
            volatile const uint64_t *clock);

#ifdef __SYNTHESIS__
#include <ap_utils.h>
#define ENGINE_STEPS(count, n)          // synthesis measures clock cycles, not steps
#else
#define ENGINE_STEPS(count, n) ((count) += (n))
#endif
