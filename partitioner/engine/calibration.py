"""Calibration: the float range of every tensor the engine produces, stage intermediates included.

The partitioned float model runs through onnxruntime on the calibration inputs; FPGA subgraphs run with every
intermediate exposed, so fused stages (conv output before its activation, the sum before a post-add
activation) get ranges of their own.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx

from fpga_runtime.onnx_chain import Chain, cpu_session
from fpga_runtime.plan import Plan
from partitioner.errors import ModelError

METHODS = {"max": "max-abs, per tensor, symmetric",
           "percentile": "99.99th percentile of |x|, per tensor, symmetric",
           "mse": "clipping threshold of least int8 mean squared error, per tensor, symmetric"}
TABLE_FILE = "calibration.json"
_BINS = 2048
# a second pass over the frames (percentile, mse) reuses the first pass's float values where they take no more
# memory than this, instead of running onnxruntime again
KEEP_BYTES = 2 << 30


@dataclass
class Calibration:
    """Where the int8 ranges come from: frames run through the float partition, or a table of ranges saved by an
    earlier build (`fpga/calibration.json`), which makes a compile independent of float arithmetic."""

    source: str
    frames: list[dict[str, np.ndarray]] = field(default_factory=list)
    table: dict[str, float] | None = None
    frame_count: int = 0
    method: str = "max"
    bounds: dict[str, tuple[float, float]] = field(default_factory=dict)    # signed min and max per tensor
    means: dict[str, list[float]] = field(default_factory=dict)     # per channel (axis 1), for bias correction

    @property
    def description(self) -> str:
        return METHODS.get(self.method, self.method)

    def ranges(self, plan: Plan) -> dict[str, float]:
        if self.table is None:
            self.table, self.bounds, self.means = calibration_ranges(plan, self.frames, self.method)
            self.frame_count = len(self.frames)
        return self.table

    def save(self, folder: Path) -> None:
        record = {"source": self.source, "frames": self.frame_count, "method": self.method, "ranges": self.table,
                  "bounds": {k: list(v) for k, v in self.bounds.items()}, "means": self.means}
        (folder / TABLE_FILE).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")

    @classmethod
    def from_table(cls, path: Path) -> "Calibration":
        try:
            raw = json.loads(Path(path).read_text())
            ranges = {str(k): float(v) for k, v in raw["ranges"].items()}
            bounds = {str(k): (float(v[0]), float(v[1])) for k, v in raw.get("bounds", {}).items()}
            means = {str(k): [float(x) for x in v] for k, v in raw.get("means", {}).items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ModelError(f"{path}: not a calibration table (a fpga/{TABLE_FILE} of a build): {exc}") from None
        return cls(f"table {path} ({raw.get('source', 'unknown source')})", table=ranges,
                   frame_count=int(raw.get("frames", 0)), method=str(raw.get("method", "max")), bounds=bounds,
                   means=means)


def _exposed(plan: Plan, name: str) -> tuple[Path, list[str]]:
    """A copy of an FPGA subgraph's ONNX file (beside it, sharing its weights) with every node output exposed."""
    src = plan.root / plan.subgraph(name).onnx
    model = onnx.load(str(src), load_external_data=False)
    declared = {o.name for o in model.graph.output}
    extra = [out for n in model.graph.node for out in n.output if out and out not in declared]
    model.graph.output.extend(onnx.helper.make_tensor_value_info(t, onnx.TensorProto.FLOAT, None) for t in extra)
    dst = src.with_name(f"_calibrate_{src.name}")
    onnx.save(model, str(dst))
    return dst, list(dict.fromkeys(out for n in model.graph.node for out in n.output if out))      # execution order


def fpga_float_values(plan: Plan, frames: list[dict[str, np.ndarray]]):
    """Per frame, ({ONNX name: float32 value} of every tensor an FPGA subgraph reads or computes, fused stages
    included, in execution order; {name: FPGA subgraph that computes it}), from the float partition on
    onnxruntime."""
    exposed = {}
    temporary = []
    for sg in plan.subgraphs:
        if sg.device == "fpga":
            path, names = _exposed(plan, sg.name)
            temporary.append(path)
            exposed[sg.name] = (cpu_session(path), names)
    try:
        chain = Chain(plan, sessions=exposed)
        for feeds in frames:
            seen: dict[str, np.ndarray] = {}
            owner: dict[str, str] = {}

            def note(sg, names, values):
                if sg.device == "fpga":
                    owner.update((name, sg.name) for name in names)
                    for name in [t.name for t in sg.inputs] + names:
                        if values[name].dtype == np.float32:
                            seen[name] = values[name]
            chain.run(feeds, after=note)
            yield seen, owner
    finally:
        for path in temporary:
            path.unlink(missing_ok=True)


def calibration_ranges(plan: Plan, frames: list[dict[str, np.ndarray]], method: str = "max"
                       ) -> tuple[dict[str, float], dict[str, tuple[float, float]], dict[str, list[float]]]:
    """The int8 range per ONNX tensor name, for every tensor computed in an FPGA subgraph or read by one: max |x|
    over all frames, or (a second pass, over a histogram of |x| up to that max) its 99.99th percentile or the
    clipping threshold that minimises the int8 mean squared error (rounding below it, clipping above). Also the
    signed min and max, from which the compiler sees where a zero point pays (a ReLU's output has no negatives),
    and the mean per channel of every NCHW or [N, C] tensor, over the frames (bias correction, layers.py)."""
    peak: dict[str, float] = {}
    bounds: dict[str, tuple[float, float]] = {}
    sums: dict[str, np.ndarray] = {}
    kept: list[dict[str, np.ndarray]] = []          # the first pass's values, for the second, while they fit
    kept_bytes = 0
    for seen, _ in fpga_float_values(plan, frames):
        if method != "max" and kept_bytes <= KEEP_BYTES:
            kept_bytes += sum(v.nbytes for v in seen.values())
            kept.append(seen)
        for name, v in seen.items():
            if v.size:
                lo, hi = float(np.min(v)), float(np.max(v))
                peak[name] = max(peak.get(name, 0.0), max(-lo, hi))
                old = bounds.get(name, (lo, hi))
                bounds[name] = (min(old[0], lo), max(old[1], hi))
                if v.ndim in (2, 4) and np.all(np.isfinite(v)):
                    sums[name] = sums.get(name, 0.0) + v.mean(axis=(0,) + tuple(range(2, v.ndim)), dtype=np.float64)
    means = {name: [float(x) for x in total / len(frames)] for name, total in sums.items()}
    if method == "max":
        return peak, bounds, means
    hist: dict[str, np.ndarray] = {}
    second = kept if kept_bytes <= KEEP_BYTES else (seen for seen, _ in fpga_float_values(plan, frames))
    for seen in second:
        for name, v in seen.items():
            if v.size and peak[name] > 0 and np.isfinite(peak[name]):
                counts, _ = np.histogram(np.abs(v), _BINS, (0.0, peak[name]))
                hist[name] = hist.get(name, 0) + counts
    choose = _percentile if method == "percentile" else _least_squared_error
    return ({name: (choose(hist[name], peak[name]) if name in hist else value) for name, value in peak.items()},
            bounds, means)


def _percentile(counts: np.ndarray, peak: float, q: float = 0.9999) -> float:
    cdf = np.cumsum(counts) / max(1, counts.sum())
    return float((np.searchsorted(cdf, q) + 1) / len(counts) * peak)


def _least_squared_error(counts: np.ndarray, peak: float) -> float:
    """argmin over thresholds T of sum_x [x <= T] (T / 127)^2 / 12 + [x > T] (x - T)^2, on bin centres: every
    candidate at once from suffix sums of the counts and their first and second moments (one pass per tensor,
    not one per candidate)."""
    n = len(counts)
    centres = (np.arange(n) + 0.5) / n * peak
    c = counts.astype(np.float64)
    tail = lambda v: np.concatenate([np.cumsum(v[::-1])[::-1], [0.0]])     # tail(v)[k] = sum of v[k:]
    n_over, s1, s2 = tail(c), tail(c * centres), tail(c * centres ** 2)
    ks = np.arange(n // 16, n + 1, 8)
    t = ks / n * peak
    err = (c.sum() - n_over[ks]) * (t / 127) ** 2 / 12 + (s2[ks] - 2 * t * s1[ks] + t ** 2 * n_over[ks])
    return float(t[int(np.argmin(err))])
