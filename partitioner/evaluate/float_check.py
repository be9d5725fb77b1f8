"""`--verify`: each subgraph of the partitioned model against the original model's own tensors at its boundaries,
then the whole chain through onnxruntime against the original's outputs."""
from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from fpga_runtime.checking.frames import original_outputs
from fpga_runtime.onnx_chain import Chain
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
# the `subgraph` of the entries that say how far a float16 model's own rounding moves its outputs (information)
OWN_ROUNDING = "(the original's own rounding)"
# ... and how far a QDQ model's own activation Q/DQ pairs, which the engine takes as its scales, move them
OWN_QUANTISATION = "(the original's own Q/DQ)"
INFORMATION = (OWN_ROUNDING, OWN_QUANTISATION)


@dataclass
class OutputCheck:
    name: str
    max_abs: float
    max_rel: float          # max |a - b| / max |b|; for integer outputs, 1 - row-set agreement
    ok: bool
    own_gap: float = 0.0    # max |a - b| between onnxruntime's unoptimised and optimised runs of the original
    subgraph: str = ""      # the subgraph checked alone at this output of its; "" for the chain at a model output
    bound: float = 0.0      # the largest max_abs that passes


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
    return [_check(name, ref, got[name], tolerance,
                   _max_gap(ref, unoptimised[name]) if unoptimised is not None and name in unoptimised
                   and unoptimised[name].shape == ref.shape and ref.dtype.kind not in "iub" else 0.0)
            for name, ref in reference.items()]


def _quantised_steps(model: onnx.ModelProto) -> dict[str, float]:
    """Tensors a Q/DQ pair the partition keeps (a QDQ model's outputs) writes, and the step of each: float noise
    before a QuantizeLinear flips its rounding by one step where it crosses a boundary, so such a tensor may differ
    by that much from the reference however small the noise."""
    producer = {t: n for n in model.graph.node for t in n.output}
    consts = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    steps = {}
    for n in model.graph.node:
        q = producer.get(n.input[0]) if n.op_type == "DequantizeLinear" else None
        scale = consts.get(n.input[1]) if q is not None and q.op_type == "QuantizeLinear" else None
        if scale is not None and scale.size == 1:
            steps[n.output[0]] = float(abs(scale.reshape(())))
    return steps


def _exposed_reference(model_path: Path, names: set[str], widen: Callable[[onnx.ModelProto], object] | None,
                       strip_qdq: Callable[[onnx.ModelProto], object] | None, folder: Path
                       ) -> tuple[Path, list[str], dict[str, float]]:
    """The original model (widened to float32 by `widen` for a float16 one, without the activation Q/DQ pairs the
    partition absorbed for a QDQ one) with every tensor in `names` that one of its nodes computes as an extra
    output, saved in `folder`; the names so exposed; and the quantisation steps of the tensors Q/DQ pairs write."""
    model = onnx.load(str(model_path))
    if widen is not None:
        widen(model)
    if strip_qdq is not None:
        strip_qdq(model)
    g = model.graph
    have = {o.name for o in g.output}
    computed = {o for n in g.node for o in n.output if o}
    exposed = sorted(n for n in names if n in computed and n not in have)
    for name in exposed:
        g.output.add().name = name              # untyped: onnxruntime takes the type the node gives it
    path = folder / "reference.onnx"
    steps = _quantised_steps(model)
    onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="reference.weights", size_threshold=1024)
    return path, exposed, steps


def _depths(plan: Plan) -> dict[str, int]:
    """Subgraphs on the longest dependency path ending at each subgraph (itself included)."""
    depth: dict[str, int] = {}
    for sg in plan.subgraphs:
        depth[sg.name] = 1 + max((depth.get(d, 0) for d in sg.depends_on), default=0)
    return depth


def _check(name: str, ref: np.ndarray, out: np.ndarray, tolerance: float, own: float, subgraph: str = "",
           step: float = 0.0) -> OutputCheck:
    if ref.dtype.kind in "iub":
        check = _compare_indices(name, ref, out)
    elif ref.shape != out.shape:
        check = OutputCheck(name, float("inf"), float("inf"), False)
    else:
        diff = _max_gap(ref, out)
        finite = ref[np.isfinite(ref)]
        scale = float(np.max(np.abs(finite.astype(np.float64)), initial=0.0))
        bound = max(tolerance * scale + ABS_FLOOR, CONDITIONING_FACTOR * own if np.isfinite(own) else 0.0,
                    step * (1.0 + 1e-6))
        check = OutputCheck(name, diff, diff / scale if scale else diff, diff <= bound, own, bound=bound)
    check.subgraph = subgraph
    return check


def verify(plan: Plan, model_path: Path, feeds: dict[str, np.ndarray], tolerance: float = DEFAULT_TOLERANCE,
           widen: Callable[[onnx.ModelProto], object] | None = None,
           strip_qdq: Callable[[onnx.ModelProto], object] | None = None) -> list[OutputCheck]:
    """Each subgraph alone, fed the original model's own tensors at its inputs, against the original's tensors at
    its outputs (bound `tolerance`: a wrong subgraph is caught and named); then the chain of subgraphs at the model's
    outputs, bound `tolerance` times the number of subgraphs in series before each output (float rounding
    compounds along the chain). A float16 model (`widen` given) is checked against itself widened to float32,
    which is what the partition computes; its own float16 rounding is measured and reported beside (the entries
    whose subgraph is OWN_ROUNDING). A QDQ model (`strip_qdq` given: passes/qdq.strip_absorbed_qdq) is checked
    against itself without the activation Q/DQ pairs the engine took as its scales, which is what the partition's
    float graph computes (the int8 report measures the engine against the QDQ original); how far those pairs move the
    outputs is reported beside (OWN_QUANTISATION). A tensor a kept Q/DQ pair writes (a QDQ model's output) may
    differ by one step of its pair: float noise that crosses a rounding boundary flips it."""
    chain = Chain(plan)
    boundary = {t.name for sg in plan.subgraphs for t in sg.inputs + sg.outputs}
    with tempfile.TemporaryDirectory() as tmp:
        path, exposed, steps = _exposed_reference(model_path, boundary, widen, strip_qdq, Path(tmp))
        ref = original_outputs(path, feeds)
        ref_plain = original_outputs(path, feeds, optimise=False)
    own = {name: ref[name] for name in exposed}              # the original's tensors at the boundaries
    compared = set(exposed) | {t.name for t in plan.outputs}
    values = chain.run(feeds)

    def check(name: str, got: np.ndarray, bound: float, subgraph: str = "") -> OutputCheck:
        return _check(name, ref[name], got, bound, _max_gap(ref[name], ref_plain[name]), subgraph,
                      steps.get(name, 0.0))

    checks: list[OutputCheck] = []
    for sg, session, names in chain.steps:
        got = session.run(names, {t.name: own.get(t.name, values[t.name]) for t in sg.inputs})
        checks += [check(name, value, tolerance, sg.name) for name, value in zip(names, got) if name in compared]
    depth = _depths(plan)
    producer = {t.name: sg.name for sg in plan.subgraphs for t in sg.outputs}
    checks += [check(t.name, values[t.name], tolerance * depth.get(producer.get(t.name, ""), 1))
               for t in plan.outputs]
    if (widen is not None or strip_qdq is not None) and plan.original_takes_numpy:
        original = original_outputs(model_path, feeds)
        what = OWN_ROUNDING if widen is not None else OWN_QUANTISATION
        for t in plan.outputs:
            if original[t.name].dtype.kind == "f":
                gap = _max_gap(original[t.name], ref[t.name])
                scale = float(np.max(np.abs(original[t.name].astype(np.float64)), initial=0.0))
                checks.append(OutputCheck(t.name, gap, gap / scale if scale else gap, True, gap, what))
    return checks


def first_failure(checks: list[OutputCheck]) -> str | None:
    """What to say of a failed verify: the first subgraph that differs from the original at its outputs, or the
    chain's outputs where every subgraph agrees alone."""
    alone = [c for c in checks if c.subgraph and c.subgraph not in INFORMATION and not c.ok]
    if alone:
        c = alone[0]
        return (f"subgraph {c.subgraph!r} differs from the original model at its output {c.name!r} when fed the "
                f"original's own tensors (max abs {c.max_abs:.3g}, bound {c.bound:.3g})")
    chained = [c for c in checks if not c.subgraph and not c.ok]
    if chained:
        return (f"every subgraph agrees with the original alone, but chained they differ at output(s) "
                f"{', '.join(repr(c.name) for c in chained)} beyond the bound for their depth")
    return None
