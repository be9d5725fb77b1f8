"""One layer of a build as a program of its own, over a compact activation region: for measuring and
profiling layers one at a time (benchmarks/rtl_cycles.py) with the build's real weights and tables."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from fpga_runtime.abi import ALIGN, DESCRIPTOR_SIZE, HEADER_SIZE, Descriptor, Flag, Op, pack_program, unpack_program


def _aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def layer_key(d: Descriptor) -> tuple:
    """What decides a layer's cycles: everything but addresses, offsets, tables and its id."""
    return (d.op, d.flags, d.batch, d.in_h, d.in_w, d.in_c, d.out_h, d.out_w, d.out_c, d.conv_h, d.conv_w, d.kh,
            d.kw, d.stride_h, d.stride_w, d.dil_h, d.dil_w, d.pool_kh, d.pool_kw, d.pool_sh, d.pool_sw, d.out_step)


def program_descriptors(const: np.ndarray, addr: int, layers: int) -> list[Descriptor]:
    return unpack_program(const[addr:addr + HEADER_SIZE + layers * DESCRIPTOR_SIZE].tobytes())


def standalone(d: Descriptor, const: np.ndarray, seed: int = 0) -> tuple[np.ndarray, np.ndarray, int]:
    """(activation region with random int8 inputs, constant region with the program appended, program address)
    for descriptor `d`, its input, second input and output moved to the start of a fresh region."""
    rng = np.random.default_rng(seed)
    in_h, in_w = d.in_h, d.in_w
    in_bytes = d.batch * in_h * in_w * d.in_c_stride
    if d.op == Op.SCALE:
        in2_bytes = d.batch * d.in2_c_stride
    elif d.op == Op.ADD:
        in2_bytes = d.batch * d.out_h * d.out_w * d.in2_c_stride
    elif d.op == Op.CONV and d.flags & Flag.RESIDUAL:
        in2_bytes = d.batch * d.conv_h * d.conv_w * d.in2_c_stride
    else:
        in2_bytes = 0
    out_bytes = d.batch * d.out_h * d.out_w * d.out_c_stride * (4 if d.out_interleaved else 1)
    in2_addr = _aligned(in_bytes)
    out_addr = in2_addr + _aligned(in2_bytes)
    act = np.zeros(out_addr + _aligned(out_bytes), np.uint8)
    act[:in2_addr + in2_bytes] = rng.integers(0, 256, in2_addr + in2_bytes, dtype=np.uint8)
    moved = replace(d, in_addr=0, in2_addr=in2_addr, out_addr=out_addr)
    program = np.frombuffer(pack_program([moved]), np.uint8)
    addr = _aligned(const.size)
    full = np.zeros(_aligned(addr + program.size), np.uint8)     # regions are whole 64-byte blocks
    full[:const.size] = const
    full[addr:addr + program.size] = program
    return act, full, addr
