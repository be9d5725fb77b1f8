"""The reference backend's engine: a numpy executor of ABI v3 programs. The golden model for every backend.

Exactness: a product of two int8 values is at most 2^14 in magnitude, so a float32 dot product over up to
1024 channels (< 2^24) is exact; convolutions therefore run as float32 BLAS GEMMs per kernel tap and channel
block of 1024, whose integer results are summed in int64. Everything after the accumulator is the int64
arithmetic abi.py defines.
"""
from __future__ import annotations

import numpy as np

from fpga_runtime import winograd
from fpga_runtime.abi import (
    DESCRIPTOR_SIZE,
    HEADER_SIZE,
    L2NORM_SHIFTS,
    MULT_BITS,
    MULT_LIMIT,
    Act,
    Descriptor,
    EngineConfig,
    Flag,
    Op,
    l2norm_factor,
    requantize,
    requantize_prelu,
    saturate8,
    shift_round,
    unpack_program,
    unpack_requant_word,
)

_EXACT_F32_CHANNELS = 1024


def _region(mem: np.ndarray, addr: int, n: int, h: int, w: int, stride: int) -> np.ndarray:
    return mem[addr:addr + n * h * w * stride].view(np.int8).reshape(n, h, w, stride)


def _read_input(act: np.ndarray, d: Descriptor) -> np.ndarray:
    x = _region(act, d.in_addr, d.batch, d.in_h, d.in_w, d.in_c_stride)[..., d.in_c_offset:d.in_c_offset + d.in_c]
    if d.flags & Flag.UPSAMPLE2:
        x = x.repeat(2, axis=1).repeat(2, axis=2)
    return x


def _requant_table(const: np.ndarray, d: Descriptor) -> np.ndarray:
    """(multiplier, shift) per output channel; the engines read 18-bit multipliers, so a wider one is refused."""
    rq = const[d.requant_addr:d.requant_addr + 8 * d.out_c].view(np.int32).reshape(d.out_c, 2)
    if rq[:, 0].min(initial=0) < 0 or rq[:, 0].max(initial=0) >= MULT_LIMIT:
        raise ValueError(f"layer {d.layer_id}: a requantisation multiplier outside [0, 2^{MULT_BITS}) (ABI v2)")
    return rq


def _write_output(act: np.ndarray, d: Descriptor, y: np.ndarray) -> None:
    if d.out_step > 2 or (d.out_interleaved and (d.op != Op.CONV or d.flags & (Flag.POOL | Flag.RESIDUAL)
                                                 or d.out_phase_y > 1 or d.out_phase_x > 1)):
        raise ValueError(f"layer {d.layer_id}: interleaved output (out_step {d.out_step}) only on a CONV layer "
                         "without pool or residual, phases 0 or 1")
    if d.out_interleaved:
        out = _region(act, d.out_addr, d.batch, 2 * d.out_h, 2 * d.out_w, d.out_c_stride)
        out = out[:, d.out_phase_y::2, d.out_phase_x::2]
    else:
        out = _region(act, d.out_addr, d.batch, d.out_h, d.out_w, d.out_c_stride)
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
    """Padding is -128, so it never wins; windows of ceil_mode that reach past the padding see -128 too. With
    POOL_PAD_ZERO every tap outside the input is 0 instead (a zero Pad in front of the pool)."""
    fill = 0 if d.flags & Flag.POOL_PAD_ZERO else -128
    y = _pad(y, d.pool_pad_t, d.pool_pad_l, d.pool_pad_b, d.pool_pad_r, fill)
    need_h = (oh - 1) * d.pool_sh + d.pool_kh
    need_w = (ow - 1) * d.pool_sw + d.pool_kw
    if need_h > y.shape[1] or need_w > y.shape[2]:
        y = np.pad(y, ((0, 0), (0, max(0, need_h - y.shape[1])), (0, max(0, need_w - y.shape[2])), (0, 0)),
                   constant_values=fill)
    out = None
    for _, _, win in _windows(y, d.pool_kh, d.pool_kw, d.pool_sh, d.pool_sw, 1, 1, oh, ow):
        out = win.copy() if out is None else np.maximum(out, win)
    return out


class ReferenceEngine:
    def __init__(self, config: EngineConfig):
        self.config = config
        self._float_weights: dict[tuple[int, int], np.ndarray] = {}     # (const region id, address) -> float32

    def _float_tap_weights(self, const: np.ndarray, d: Descriptor) -> tuple[np.ndarray, np.ndarray]:
        """[kh, kw, live in, out] float32 weights of a standard conv and the input channels they read, cached
        (the constant region never changes). Channels whose weights are all zero (padding) contribute nothing
        and are skipped."""
        key = (id(const), d.weight_addr, d.kh, d.kw, d.in_c, d.out_c)
        cached = self._float_weights.get(key)
        if cached is None:
            w = self._weights(const, d, False)
            live = np.flatnonzero(np.any(w != 0, axis=(0, 1, 2)))
            cached = (np.ascontiguousarray(w[..., live].astype(np.float32).transpose(1, 2, 3, 0)), live)
            self._float_weights[key] = cached
        return cached

    def _weights(self, const: np.ndarray, d: Descriptor, depthwise: bool) -> np.ndarray:
        cfg = self.config
        if depthwise:
            raw = const[d.weight_addr:d.weight_addr + d.out_c * d.kh * d.kw].view(np.int8)
            w = raw.reshape(d.out_c // cfg.vec, d.kh, d.kw, cfg.vec).transpose(0, 3, 1, 2)
            return w.reshape(d.out_c, d.kh, d.kw)
        kh, kw = (4, 4) if d.flags & Flag.WINOGRAD else (d.kh, d.kw)       # a Winograd layer's 4x4 positions
        raw = const[d.weight_addr:d.weight_addr + d.out_c * kh * kw * d.in_c].view(np.int8)
        w = raw.reshape(d.out_c // cfg.pe_rows, kh, kw, d.in_c // cfg.vec, cfg.pe_rows, cfg.vec)
        return w.transpose(0, 4, 1, 2, 3, 5).reshape(d.out_c, kh, kw, d.in_c)

    def _winograd_accumulate(self, act: np.ndarray, const: np.ndarray, d: Descriptor) -> np.ndarray:
        x = winograd.pad_to_tiles(_read_input(act, d), d.pad_t, d.pad_l, d.conv_h, d.conv_w, d.in_zero)
        return winograd.accumulate(x, self._weights(const, d, False), d.conv_h, d.conv_w)

    def _accumulate(self, x: np.ndarray, w: np.ndarray | None, d: Descriptor, depthwise: bool,
                    wt: np.ndarray | None = None, live: np.ndarray | None = None) -> np.ndarray:
        oh, ow = d.conv_h, d.conv_w
        if depthwise:
            acc = np.zeros((d.batch, oh, ow, d.out_c), np.int32)
            for ky, kx, win in _windows(x, d.kh, d.kw, d.stride_h, d.stride_w, d.dil_h, d.dil_w, oh, ow):
                acc += win.astype(np.int32) * w[:, ky, kx].astype(np.int32)
            return acc.astype(np.int64)
        xf = (x if len(live) == d.in_c else x[..., live]).astype(np.float32)
        channels = max(len(live), 1)
        if len(live) == 0:
            return np.zeros((d.batch, oh, ow, d.out_c), np.int64)
        taps = [(ky, kx) for ky in range(d.kh) for kx in range(d.kw)]
        rows = d.batch * oh * ow
        if channels < 64 and channels * len(taps) <= _EXACT_F32_CHANNELS:
            # few channels: one GEMM over all taps at once (im2col), still within the exact range
            cols = np.concatenate([win.reshape(rows, channels) for _, _, win in
                                   _windows(xf, d.kh, d.kw, d.stride_h, d.stride_w, d.dil_h, d.dil_w, oh, ow)], axis=1)
            return (cols @ wt.reshape(-1, d.out_c)).astype(np.int64).reshape(d.batch, oh, ow, d.out_c)
        chunk = min(channels, _EXACT_F32_CHANNELS)
        per_group = max(1, _EXACT_F32_CHANNELS // chunk)
        total = None
        for c0 in range(0, channels, chunk):
            for t0 in range(0, len(taps), per_group):
                part = None                 # float32 sums over at most 1024 products: exact
                for ky, kx in taps[t0:t0 + per_group]:
                    win = xf[:, ky * d.dil_h: ky * d.dil_h + (oh - 1) * d.stride_h + 1: d.stride_h,
                             kx * d.dil_w: kx * d.dil_w + (ow - 1) * d.stride_w + 1: d.stride_w, c0:c0 + chunk]
                    if chunk >= 64:     # one BLAS GEMM; a few channels run faster as numpy's stacked matmul
                        term = win.reshape(-1, win.shape[-1]) @ wt[ky, kx, c0:c0 + chunk]
                    else:
                        term = (win @ wt[ky, kx, c0:c0 + chunk]).reshape(-1, d.out_c)
                    if part is None:
                        part = term
                    else:
                        part += term
                if total is None:
                    total = part.astype(np.int64)
                else:
                    np.add(total, part, out=total, casting="unsafe")   # exact: part holds integers < 2^24
        return total.reshape(d.batch, oh, ow, d.out_c)

    def _conv(self, act: np.ndarray, const: np.ndarray, d: Descriptor) -> None:
        depthwise = bool(d.flags & Flag.DEPTHWISE)
        if d.flags & Flag.WINOGRAD:
            acc = self._winograd_accumulate(act, const, d)
        else:
            x = _pad(_read_input(act, d), d.pad_t, d.pad_l, d.pad_b, d.pad_r, d.in_zero)   # the zero point
            acc = (self._accumulate(x, self._weights(const, d, True), d, True) if depthwise
                   else self._accumulate(x, None, d, False, *self._float_tap_weights(const, d)))
        acc += const[d.bias_addr:d.bias_addr + 4 * d.out_c].view(np.int32)
        rq = _requant_table(const, d)
        if d.flags & Flag.PRELU:
            shift, neg = unpack_requant_word(rq[:, 1])
            y = requantize_prelu(acc, rq[:, 0], neg, shift)
        else:
            y = requantize(acc, rq[:, 0], rq[:, 1], overwrite=True)
        y = self._activation(const, y, d.act1, d.lut1_addr, d)
        if d.flags & Flag.RESIDUAL:
            y = self._add(act, y, d, d.conv_h, d.conv_w)
            y = self._activation(const, y, d.act2, d.lut2_addr, d)
        if d.flags & Flag.POOL:
            y = _maxpool(y, d, d.out_h, d.out_w)
        _write_output(act, d, y)

    @staticmethod
    def _activation(const: np.ndarray, y: np.ndarray, kind: int, lut_addr: int, d: Descriptor) -> np.ndarray:
        if kind == Act.CLAMP:
            return np.clip(y, d.act_lo, d.act_hi).astype(np.int8)
        if kind == Act.LUT:
            return const[lut_addr:lut_addr + 256].view(np.int8)[y.view(np.uint8) ^ np.uint8(128)]   # q + 128
        return y

    @staticmethod
    def _add(act: np.ndarray, a: np.ndarray, d: Descriptor, h: int, w: int) -> np.ndarray:
        b = _region(act, d.in2_addr, d.batch, h, w, d.in2_c_stride)[..., d.in2_c_offset:d.in2_c_offset + d.out_c]
        total = a.astype(np.int64) * d.res_mult_a + b.astype(np.int64) * d.res_mult_b
        return saturate8(shift_round(total, d.res_shift))

    def run_layer(self, act: np.ndarray, const: np.ndarray, d: Descriptor) -> None:
        if not (0 <= d.res_mult_a < MULT_LIMIT and 0 <= d.res_mult_b < MULT_LIMIT) or \
                d.op == Op.L2NORM and not L2NORM_SHIFTS[0] <= d.res_shift <= L2NORM_SHIFTS[1]:
            raise ValueError(f"layer {d.layer_id}: multipliers must lie in [0, 2^{MULT_BITS}) and an L2NORM shift in "
                             f"{L2NORM_SHIFTS} (ABI v2)")
        if d.op == Op.CONV:
            self._conv(act, const, d)
        elif d.op == Op.ADD:
            y = self._add(act, _read_input(act, d), d, d.out_h, d.out_w)
            y = self._activation(const, y, d.act1, d.lut1_addr, d)
            _write_output(act, d, self._activation(const, y, d.act2, d.lut2_addr, d))
        elif d.op == Op.MAXPOOL:
            _write_output(act, d, _maxpool(_read_input(act, d), d, d.out_h, d.out_w))
        elif d.op == Op.COPY:
            _write_output(act, d, _read_input(act, d))
        elif d.op == Op.GLOBAL_AVG_POOL:
            total = _read_input(act, d).astype(np.int64).sum(axis=(1, 2), keepdims=True)
            rq = _requant_table(const, d)
            _write_output(act, d, requantize(total, rq[:, 0], rq[:, 1], overwrite=True))
        elif d.op == Op.L2NORM:
            x = _read_input(act, d).astype(np.int64)
            k, sh = l2norm_factor(np.sum(x * x, axis=-1), d.res_mult_a, d.res_shift)
            _write_output(act, d, saturate8(shift_round(x * k[..., None], sh[..., None])))
        elif d.op == Op.SCALE:
            gate = _region(act, d.in2_addr, d.batch, 1, 1, d.in2_c_stride)[..., d.in2_c_offset:d.in2_c_offset + d.out_c]
            product = _read_input(act, d).astype(np.int64) * (gate.astype(np.int64) + d.res_mult_b)  # its offset
            _write_output(act, d, saturate8(shift_round(product * d.res_mult_a, d.res_shift)))
        else:
            raise ValueError(f"layer {d.layer_id}: unknown op {d.op}")

    def run(self, act: np.ndarray, const: np.ndarray, program_addr: int, layers: int) -> int:
        """Run `layers` descriptors of the program at `program_addr` (const region); returns cycles (none here)."""
        raw = const[program_addr:program_addr + HEADER_SIZE + layers * DESCRIPTOR_SIZE].tobytes()
        for d in unpack_program(raw)[:layers]:
            self.run_layer(act, const, d)
        return 0
