"""The reference backend: a numpy executor of ABI v1 programs over the memory image. The golden model.

Exactness: int8 x int8 products summed in float64 are exact while the sum stays below 2^53 (a 7x7x4096 conv
sums 2e5 products of at most 2^14: far below), so convolutions run as float64 BLAS GEMMs and are then
rounded back to integers; everything after the accumulator is int64 arithmetic as abi.py defines it.
"""
from __future__ import annotations

import numpy as np

from .abi import (DESCRIPTOR_SIZE, HEADER_SIZE, Act, Descriptor, EngineConfig, Flag, Op, requantize, saturate8,
                  shift_round, unpack_program)


def _region(mem: np.ndarray, addr: int, n: int, h: int, w: int, stride: int) -> np.ndarray:
    return mem[addr:addr + n * h * w * stride].view(np.int8).reshape(n, h, w, stride)


def _read_input(mem: np.ndarray, d: Descriptor) -> np.ndarray:
    x = _region(mem, d.in_addr, d.batch, d.in_h, d.in_w, d.in_c_stride)[..., d.in_c_offset:d.in_c_offset + d.in_c]
    if d.flags & Flag.UPSAMPLE2:
        x = x.repeat(2, axis=1).repeat(2, axis=2)
    return x


def _write_output(mem: np.ndarray, d: Descriptor, y: np.ndarray) -> None:
    out = _region(mem, d.out_addr, d.batch, d.out_h, d.out_w, d.out_c_stride)
    out[..., d.out_c_offset:d.out_c_offset + d.out_c] = y


def _windows(x: np.ndarray, kh: int, kw: int, sh: int, sw: int, dh: int, dw: int, oh: int, ow: int):
    for ky in range(kh):
        for kx in range(kw):
            yield ky, kx, x[:, ky * dh: ky * dh + (oh - 1) * sh + 1: sh, kx * dw: kx * dw + (ow - 1) * sw + 1: sw, :]


def _pad(x: np.ndarray, t: int, l: int, b: int, r: int, value: int) -> np.ndarray:
    if not (t or l or b or r):
        return x
    return np.pad(x, ((0, 0), (t, b), (l, r), (0, 0)), constant_values=value)


def _maxpool(y: np.ndarray, d: Descriptor, oh: int, ow: int) -> np.ndarray:
    y = _pad(y, d.pool_pad_t, d.pool_pad_l, d.pool_pad_b, d.pool_pad_r, -128)
    need_h = (oh - 1) * d.pool_sh + d.pool_kh
    need_w = (ow - 1) * d.pool_sw + d.pool_kw
    if need_h > y.shape[1] or need_w > y.shape[2]:     # ceil_mode windows that reach past the padding
        y = np.pad(y, ((0, 0), (0, max(0, need_h - y.shape[1])), (0, max(0, need_w - y.shape[2])), (0, 0)),
                   constant_values=-128)
    out = None
    for _, _, win in _windows(y, d.pool_kh, d.pool_kw, d.pool_sh, d.pool_sw, 1, 1, oh, ow):
        out = win.copy() if out is None else np.maximum(out, win)
    return out


class ReferenceEngine:
    """Runs programs on a memory image; `cycles` stays 0 (the reference has no timing)."""

    def __init__(self, config: EngineConfig):
        self.config = config

    def _weights(self, mem: np.ndarray, d: Descriptor, depthwise: bool) -> np.ndarray:
        cfg = self.config
        if depthwise:
            raw = mem[d.weight_addr:d.weight_addr + d.out_c * d.kh * d.kw].view(np.int8)
            return raw.reshape(d.out_c // cfg.vec, d.kh, d.kw, cfg.vec).transpose(0, 3, 1, 2).reshape(d.out_c, d.kh,
                                                                                                      d.kw)
        raw = mem[d.weight_addr:d.weight_addr + d.out_c * d.kh * d.kw * d.in_c].view(np.int8)
        w = raw.reshape(d.out_c // cfg.pe_rows, d.kh, d.kw, d.in_c // cfg.vec, cfg.pe_rows, cfg.vec)
        return w.transpose(0, 4, 1, 2, 3, 5).reshape(d.out_c, d.kh, d.kw, d.in_c)

    def _conv(self, mem: np.ndarray, d: Descriptor) -> None:
        depthwise = bool(d.flags & Flag.DEPTHWISE)
        x = _pad(_read_input(mem, d), d.pad_t, d.pad_l, d.pad_b, d.pad_r, 0)
        w = self._weights(mem, d, depthwise)
        oh, ow = d.conv_h, d.conv_w
        if depthwise:
            acc = np.zeros((d.batch, oh, ow, d.out_c), np.int64)
            for ky, kx, win in _windows(x, d.kh, d.kw, d.stride_h, d.stride_w, d.dil_h, d.dil_w, oh, ow):
                acc += win.astype(np.int64) * w[:, ky, kx].astype(np.int64)
        else:
            xf = x.astype(np.float64)
            wf = w.astype(np.float64)
            accf = np.zeros((d.batch * oh * ow, d.out_c), np.float64)
            for ky, kx, win in _windows(xf, d.kh, d.kw, d.stride_h, d.stride_w, d.dil_h, d.dil_w, oh, ow):
                accf += win.reshape(-1, d.in_c) @ wf[:, ky, kx, :].T
            acc = np.rint(accf).astype(np.int64).reshape(d.batch, oh, ow, d.out_c)
        acc += mem[d.bias_addr:d.bias_addr + 4 * d.out_c].view(np.int32)
        rq = mem[d.requant_addr:d.requant_addr + 8 * d.out_c].view(np.int32).reshape(d.out_c, 2)
        y = requantize(acc, rq[:, 0], rq[:, 1])
        y = self._activation(mem, y, d.act1, d.lut1_addr, d)
        if d.flags & Flag.RESIDUAL:
            y = self._add(mem, y, d, oh, ow)
            y = self._activation(mem, y, d.act2, d.lut2_addr, d)
        if d.flags & Flag.POOL:
            y = _maxpool(y, d, d.out_h, d.out_w)
        _write_output(mem, d, y)

    @staticmethod
    def _activation(mem: np.ndarray, y: np.ndarray, act: int, lut_addr: int, d: Descriptor) -> np.ndarray:
        if act == Act.CLAMP:
            return np.clip(y, d.act_lo, d.act_hi).astype(np.int8)
        if act == Act.LUT:
            table = mem[lut_addr:lut_addr + 256].view(np.int8)
            return table[y.astype(np.int16) + 128]
        return y

    @staticmethod
    def _add(mem: np.ndarray, a: np.ndarray, d: Descriptor, h: int, w: int) -> np.ndarray:
        b = _region(mem, d.in2_addr, d.batch, h, w, d.in2_c_stride)[..., d.in2_c_offset:d.in2_c_offset + d.out_c]
        total = a.astype(np.int64) * d.res_mult_a + b.astype(np.int64) * d.res_mult_b
        return saturate8(shift_round(total, d.res_shift))

    def run_layer(self, mem: np.ndarray, d: Descriptor) -> None:
        if d.op == Op.CONV:
            self._conv(mem, d)
        elif d.op == Op.ADD:
            y = self._add(mem, _read_input(mem, d), d, d.out_h, d.out_w)
            y = self._activation(mem, y, d.act1, d.lut1_addr, d)
            _write_output(mem, d, self._activation(mem, y, d.act2, d.lut2_addr, d))
        elif d.op == Op.MAXPOOL:
            _write_output(mem, d, _maxpool(_read_input(mem, d), d, d.out_h, d.out_w))
        elif d.op == Op.COPY:
            _write_output(mem, d, _read_input(mem, d))
        else:
            raise ValueError(f"layer {d.layer_id}: unknown op {d.op}")

    def run(self, mem: np.ndarray, program_addr: int, layers: int) -> int:
        raw = mem[program_addr:program_addr + HEADER_SIZE + layers * DESCRIPTOR_SIZE].tobytes()
        for d in unpack_program(raw)[:layers]:
            self.run_layer(mem, d)
        return 0
