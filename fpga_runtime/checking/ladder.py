"""`fpga-run check`: the verification ladder. One set of frames through every backend named, subgraph after
subgraph, keeping every tensor a subgraph produces (read back from engine memory too, where it would stay there);
each integer backend against `reference` (bit for bit, or the first tensor that differs), every backend's
outputs against onnxruntime on the float original, and time and engine cycles per frame."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fpga_runtime.backends import BackendError
from fpga_runtime.checking.accuracy import compare, summarise
from fpga_runtime.checking.frames import original_outputs
from fpga_runtime.plan import PlanError
from fpga_runtime.run.session import Session

# name in --backends -> (Session backend, options, what its cycle count is)
RUNGS = {
    "reference": ("reference", {}, None),
    "csim": ("csim", {}, "C-sim iterations"),
    "verilator": ("verilator", {}, "RTL clock cycles"),
    "pynq-sim": ("pynq", {"simulate": "verilator"}, "RTL clock cycles"),
    "pynq-sim-csim": ("pynq", {"simulate": "csim"}, "C-sim iterations"),
    "pynq": ("pynq", {}, "board clock cycles"),
}
DEFAULT_RUNGS = ["reference", "csim", "verilator", "pynq-sim"]


@dataclass
class Rung:
    name: str
    exact: bool | None = None            # None: not comparable (it did not run, or it is the reference)
    verdict: str = ""
    cosine: float | None = None
    snr_db: float | None = None
    ms_per_frame: float | None = None
    cycles_per_frame: float | None = None
    cycle_kind: str | None = None
    tensors: list[dict[str, np.ndarray]] = field(default_factory=list, repr=False)
    outputs: list[dict[str, np.ndarray]] = field(default_factory=list, repr=False)


def trace_frames(session: Session, feeds: list[dict]) -> tuple[list[dict], list[dict], float]:
    """Every tensor of every frame in plan order (FPGA results read back from engine memory), the model
    outputs, and the seconds taken."""
    image = session.image if session.backend else None
    tensors, outputs = [], []
    t0 = time.perf_counter()
    for frame in feeds:
        values = dict(frame)
        seen: dict[str, np.ndarray] = {}
        for sg in session.plan.subgraphs:
            values.update(session.run_subgraph(sg, values))
            for t in sg.outputs:
                if sg.device == "fpga" and t.name in image.tensors:
                    seen[t.name] = session.backend.read(image.tensors[t.name])
                elif t.name in values:
                    seen[t.name] = values[t.name]
        tensors.append(seen)
        outputs.append({n: values[n] for n in session.output_names})
    return tensors, outputs, time.perf_counter() - t0


def first_difference(ref: list[dict], got: list[dict]) -> str | None:
    """The first tensor (frame, plan order) that is not bit-identical, described; None where all are."""
    for k, (a, b) in enumerate(zip(ref, got)):
        for name, x in a.items():
            y = b.get(name)
            if y is None or x.shape != y.shape or x.dtype != y.dtype:
                return f"frame {k}, tensor {name}: missing or of another shape/type"
            if not np.array_equal(x, y, equal_nan=x.dtype.kind == "f"):
                diff = np.abs(x.astype(np.float64) - y.astype(np.float64))
                return (f"frame {k}, tensor {name}: {int(np.count_nonzero(diff))} of {x.size} values differ "
                        f"(max |diff| {diff.max():.4g})")
    return None


def run_rung(build: Path, name: str, feeds: list[dict], compute_units: int | None) -> Rung:
    backend, options, kind = RUNGS[name]
    rung = Rung(name, cycle_kind=kind)
    try:
        with Session(build, backend, compute_units, **options) as session:
            rung.tensors, rung.outputs, seconds = trace_frames(session, feeds)
            rung.ms_per_frame = 1e3 * seconds / len(feeds)
            if kind and session.stats:
                rung.cycles_per_frame = sum(s.cycles for s in session.stats) / len(feeds)
    except (BackendError, PlanError, OSError, ValueError) as exc:
        rung.verdict = f"did not run: {exc}"
    return rung


def check(build: Path, names: list[str], feeds: list[dict], model: Path | None,
          compute_units: int | None = None, progress=print) -> tuple[list[Rung], Rung | None, bool]:
    """The rungs, the float row (None without the original model) and whether every integer backend agreed."""
    unknown = [n for n in names if n not in RUNGS]
    if unknown:
        raise ValueError(f"--backends: unknown {unknown}; choose from {', '.join(RUNGS)}")
    if "reference" not in names:
        names = ["reference", *names]
    rungs = []
    for name in names:
        progress(f"check: {name} ...")
        rungs.append(run_rung(build, name, feeds, compute_units))
    ref = rungs[0]
    if ref.verdict:
        return rungs, None, False
    ref.exact, ref.verdict = True, "the reference"
    for rung in rungs[1:]:
        if not rung.verdict:
            diff = first_difference(ref.tensors, rung.tensors)
            rung.exact = diff is None
            rung.verdict = "bit-exact with reference" if diff is None else f"DIFFERS: {diff}"
    float_row = None
    if model is not None and model.is_file():
        t0 = time.perf_counter()
        originals = [original_outputs(model, f) for f in feeds]
        float_row = Rung("onnxruntime float", verdict="the float original",
                         ms_per_frame=1e3 * (time.perf_counter() - t0) / len(feeds))
        for rung in rungs:
            if rung.outputs:
                summary = summarise([compare(o, g) for o, g in zip(originals, rung.outputs)])
                if summary.outputs:
                    rung.cosine = min(o.cosine for o in summary.outputs)
                    rung.snr_db = min(o.snr_db for o in summary.outputs)
    return rungs, float_row, all(r.exact for r in rungs)


def table(rungs: list[Rung], float_row: Rung | None) -> str:
    def num(v, fmt):
        return "-" if v is None else format(v, fmt)

    lines = ["| backend | integer results | worst cosine vs float | worst SNR dB | ms / frame | cycles / frame |",
             "|---|---|---:|---:|---:|---:|"]
    for r in rungs + ([float_row] if float_row else []):
        cycles = "-" if r.cycles_per_frame is None else f"{r.cycles_per_frame:,.0f} ({r.cycle_kind})"
        lines.append(f"| {r.name} | {r.verdict} | {num(r.cosine, '.5f')} | {num(r.snr_db, '.1f')} | "
                     f"{num(r.ms_per_frame, ',.1f')} | {cycles} |")
    return "\n".join(lines)
