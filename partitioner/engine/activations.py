"""The engine's table activations: a smooth function applied as 256 int8 entries indexed by the stage code, and
where its input range can stop (a function flat beyond a point needs no codes there)."""
from __future__ import annotations

import math

import numpy as np

from fpga_runtime.abi import saturate8
from partitioner.ir.graph import Activation, ActKind

_erf = np.vectorize(math.erf, otypes=[np.float64])      # tables have 256 entries: no need for a fast erf


def activation_fn(act: Activation):
    k = act.kind
    if k is ActKind.RELU:
        return lambda x: np.maximum(x, 0)
    if k is ActKind.RELU6:
        return lambda x: np.clip(x, 0, 6)
    if k is ActKind.CLIP:
        return lambda x: np.clip(x, -np.inf if act.lo is None else act.lo, np.inf if act.hi is None else act.hi)
    if k is ActKind.LEAKY_RELU:
        return lambda x: np.where(x >= 0, x, x * act.alpha)
    if k is ActKind.SIGMOID:
        return lambda x: 1 / (1 + np.exp(-x))
    if k is ActKind.SILU:
        return lambda x: x / (1 + np.exp(-x))
    if k is ActKind.HARD_SIGMOID:
        return lambda x: np.clip(act.alpha * x + act.beta, 0, 1)
    if k is ActKind.MISH:
        return lambda x: x * np.tanh(np.logaddexp(0, x))
    if k is ActKind.TANH:
        return np.tanh
    if k is ActKind.SOFTPLUS:
        return lambda x: np.logaddexp(0, x)
    if k is ActKind.ELU:
        return lambda x: np.where(x >= 0, x, act.alpha * np.expm1(np.minimum(x, 0)))
    if k is ActKind.SELU:
        return lambda x: act.beta * np.where(x >= 0, x, act.alpha * np.expm1(np.minimum(x, 0)))
    if k is ActKind.GELU:
        return lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2.0)))
    if k is ActKind.GELU_TANH:
        return lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    return lambda x: x * np.clip(x / 6 + 0.5, 0, 1)          # HardSwish


def lut(act: Activation, s_in: float, s_out: float, zero_out: int = 0, zero_in: int = 0) -> np.ndarray:
    """256 int8 entries: LUT[q + 128] = saturate(rint(f((q - zero_in) * s_in) / s_out) + zero_out)."""
    q = np.arange(-128, 128, dtype=np.float64)
    return saturate8(np.rint(activation_fn(act)((q - zero_in) * s_in) / s_out) + zero_out)


FLAT = 1 / 8          # of an output step: how far f may move over a stretch of input the stage codes leave out


def useful_span(act: Activation, s_out: float, lo: float, hi: float) -> tuple[float, float, bool, bool]:
    """The part of [lo, hi] where the table's input still matters: beyond it f stays within FLAT of an output step
    of its value at the end (SiLU below about -6, a sigmoid's tails), so a stage clipped there loses at most a
    fraction of a step. Also whether each end was clipped so (a clipped end has no room to miss)."""
    if not hi > lo or not s_out > 0:
        return lo, hi, False, False
    x = np.linspace(lo, hi, 4097)
    y = activation_fn(act)(x)
    moved_lo = np.abs(y - y[0]) >= FLAT * s_out
    moved_hi = np.abs(y - y[-1]) >= FLAT * s_out
    if not moved_lo.any():
        return lo, hi, False, False
    first, last = int(np.argmax(moved_lo)), len(x) - 1 - int(np.argmax(moved_hi[::-1]))
    cut_lo, cut_hi = first > 2, last < len(x) - 3       # more than the grid's own resolution
    return (float(x[first - 1]) if cut_lo else lo), (float(x[last + 1]) if cut_hi else hi), cut_lo, cut_hi
