"""`--verify`: the partitioned model, chained through onnxruntime, against the original model."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fpga_runtime.checking.frames import original_outputs
from fpga_runtime.onnx_chain import run_plan_on_onnxruntime
from fpga_runtime.plan import Plan

# BN folding and re-association change float rounding: errors are relative to the output's magnitude, with an
# absolute floor (as numpy.allclose combines atol and rtol) for outputs whose values are all small (a sigmoid
# map near zero: float32 rounding of the O(1) values behind it is ~1e-7 absolute, a large part of 1e-3).
DEFAULT_TOLERANCE = 1e-4
ABS_FLOOR = 1e-6
# Integer outputs computed from float comparisons (NMS selections) may flip on exact ties between scores
# that differ by rounding only: their rows are compared as sets, and this much disagreement is allowed.
INDEX_AGREEMENT = 0.99
# A model can be so ill-conditioned that onnxruntime's own graph optimisations (fusions that re-associate sums)
# move an output further than the tolerance. No partition can be held closer to the original than onnxruntime
# is to itself: the bound is at least this many times the gap between its unoptimised and optimised runs.
CONDITIONING_FACTOR = 4.0


@dataclass
class OutputCheck:
    name: str
    max_abs: float
    max_rel: float          # max |a - b| / max |b|; for integer outputs, 1 - row-set agreement
    ok: bool
    own_gap: float = 0.0    # max |a - b| between onnxruntime's unoptimised and optimised runs of the original


def _compare_indices(name: str, ref: np.ndarray, out: np.ndarray) -> OutputCheck:
    if ref.shape == out.shape and np.array_equal(ref, out):
        return OutputCheck(name, 0.0, 0.0, True)
    a = {tuple(r) for r in ref.reshape(len(ref), -1).tolist()} if ref.ndim else {ref.item()}
    b = {tuple(r) for r in out.reshape(len(out), -1).tolist()} if out.ndim else {out.item()}
    agreement = len(a & b) / max(len(a | b), 1)
    return OutputCheck(name, float("nan"), 1.0 - agreement, agreement >= INDEX_AGREEMENT)


def _max_gap(ref: np.ndarray, out: np.ndarray) -> float:
    ref, out = ref.astype(np.float64), out.astype(np.float64)
    same_nan = np.isnan(ref) & np.isnan(out)                  # NaN where the original has NaN is agreement
    ref, out = np.where(same_nan, 0.0, ref), np.where(same_nan, 0.0, out)
    with np.errstate(invalid="ignore"):
        gap = np.where(ref == out, 0.0, np.abs(out - ref))      # equal infinities agree too
    return float(np.max(np.where(np.isnan(gap), np.inf, gap))) if ref.size else 0.0


def compare(reference: dict[str, np.ndarray], got: dict[str, np.ndarray], tolerance: float,
            unoptimised: dict[str, np.ndarray] | None = None) -> list[OutputCheck]:
    """`unoptimised`: the original run with onnxruntime's graph optimisations off, to measure its conditioning."""
    checks = []
    for name, ref in reference.items():
        out = got[name]
        if ref.dtype.kind in "iub":
            checks.append(_compare_indices(name, ref, out))
            continue
        if ref.shape != out.shape:
            checks.append(OutputCheck(name, float("inf"), float("inf"), False))
            continue
        diff = _max_gap(ref, out)
        own = _max_gap(ref, unoptimised[name]) if unoptimised is not None and name in unoptimised and \
            unoptimised[name].shape == ref.shape else 0.0
        finite = ref[np.isfinite(ref)]
        scale = float(np.max(np.abs(finite.astype(np.float64)), initial=0.0))
        rel = diff / scale if scale else diff
        bound = max(tolerance * scale + ABS_FLOOR, CONDITIONING_FACTOR * own if np.isfinite(own) else 0.0)
        checks.append(OutputCheck(name, diff, rel, diff <= bound, own))
    return checks


def verify(plan: Plan, model_path: Path, feeds: dict[str, np.ndarray], tolerance: float = DEFAULT_TOLERANCE
           ) -> list[OutputCheck]:
    return compare(original_outputs(model_path, feeds), run_plan_on_onnxruntime(plan, feeds), tolerance,
                   original_outputs(model_path, feeds, optimise=False))
