"""The DDR that a board's compute units share: the bandwidth one unit gets while the others run their frames,
and a layer's time at that bandwidth.

A layer neither computes nor moves bytes at an even rate: it loads a tile's weights, then computes, so near the
point where its bytes take as long as its compute it stalls more than max(compute, bytes / bandwidth) says.
`layer_s` joins the two as (c^P + m^P)^(1/P): P = 6 fits one unit of the RTL alone at 8-32 bytes a cycle
(YOLOv3-tiny at 96 x 96, frames within 3.3 %, where the plain max was 10.4 % short) and holds out of sample on
SSD-MobileNet-v1 at 96 x 96 (4-24 bytes a cycle: within 3.0 %, the max 4.6 %).

A unit runs its layers back to back, each taking layer_s(compute, bytes / the bandwidth it gets). Two simple
answers bound the truth: every unit with the whole DDR (the other units idle: too fast), and every unit with an
equal 1/k of it at all times (all units in the same memory-bound layer at once: too slow, and what a static
split of the bandwidth gives). Units that run frames out of phase mostly meet a compute-bound neighbour, so this
model gives a unit what the others leave on average (a mean field): k - 1 units, each moving F bytes a frame
time T, use (k - 1) F / T, which leaves

    A(T) = max(B - (k - 1) F / T, B / k)

(never below an equal share: the controller's round robin gives one to a unit that wants it). A frame takes
T = fixed + sum_i layer_s(c_i, b_i / A(T)); the right side falls as T grows, so there is one root, found by
bisection. One unit gives the unshared sum; at the root k F / T <= B, so the aggregate bound needs no extra cap.
The RTL check (benchmarks/shared_ddr.py) clocks k Verilated units together on one DDR token bucket.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

_ITERATIONS = 64
OVERLAP = 6.0


def layer_s(compute_s, memory_s):
    """A layer's time from its compute time and its bytes' time at the bandwidth it gets (floats or arrays)."""
    c = np.maximum(np.asarray(compute_s, dtype=float), 0.0)
    m = np.maximum(np.asarray(memory_s, dtype=float), 0.0)
    top = np.maximum(c, m)
    unit = np.where(top > 0, top, 1.0)             # scaled by the larger, so no power under- or overflows
    t = top * ((c / unit) ** OVERLAP + (m / unit) ** OVERLAP) ** (1.0 / OVERLAP)
    return float(t) if t.ndim == 0 else t


def unit_bandwidth(compute_s: Sequence[float], nbytes: Sequence[float], units: int, ddr_bytes_s: float,
                   fixed_s: float = 0.0) -> float:
    """Bytes/s the DDR gives one of `units` units running a frame of layers (compute seconds, DDR bytes) plus
    `fixed_s` without DDR traffic, while the others run theirs."""
    c = np.asarray(compute_s, dtype=float)
    b = np.asarray(nbytes, dtype=float)
    total = float(b.sum())
    if units <= 1 or total <= 0.0 or not np.isfinite(ddr_bytes_s):
        return ddr_bytes_s
    share = ddr_bytes_s / units

    def left(frame_s: float) -> float:
        return max(ddr_bytes_s - (units - 1) * total / frame_s, share)

    def frame(bandwidth: float) -> float:
        return fixed_s + float(layer_s(c, b / bandwidth).sum())

    lo = max(frame(ddr_bytes_s), total / share)      # the right side is at least lo there
    hi = frame(share)                                # and at most hi anywhere
    for _ in range(_ITERATIONS):
        mid = 0.5 * (lo + hi)
        if frame(left(mid)) > mid:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return left(hi)


def unit_layer_s(compute_s: Sequence[float], nbytes: Sequence[float], units: int, ddr_bytes_s: float,
                 fixed_s: float = 0.0) -> list[float]:
    """Each layer's seconds on one of `units` units sharing the DDR (unit_bandwidth)."""
    bandwidth = unit_bandwidth(compute_s, nbytes, units, ddr_bytes_s, fixed_s)
    return [float(t) for t in layer_s(compute_s, np.asarray(nbytes, dtype=float) / bandwidth)]
