"""Parallel branches where they pay: for each detector and board with `--objective latency`, the best design
with one FPGA subgraph per region against the best with the regions cut at their forks (explore/draft.py), the
built plan's latency against its critical-path bound and its units' utilisation (virtual time); the same for
engines fixed by hand with several units; and one frame of split subgraphs on two Verilator units against the
cycle model.

    python benchmarks/branch_splits.py [--boards zcu104 kv260] [--corpus build/corpus] [--no-rtl]

The RTL table runs YOLOv3-tiny-416, YOLOv8n and YOLOv3-416 on two 2x16x16 units (YOLOv3: 64 million cycles,
about 4 minutes under Verilator here).

Every time is at the engine clock the build uses (the table says which): the design's estimated Fmax rounded
down (partitioner/explore/clock.py), reachable by the timing estimate (+-15 %), not confirmed by place and route.
YOLOv8n comes from the export corpus (`bash scripts/export_corpus.sh`, 320x320) when it is there.
"""
from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

import numpy as np
from _zoo import partitioned

from fpga_runtime.abi import EngineConfig
from fpga_runtime.boards import board
from fpga_runtime.plan import read_plan
from fpga_runtime.prediction.virtual_time import frame_engine_cycles, model_engine_cycles, predict
from partitioner.build import PartitionConfig, run_partition
from partitioner.errors import ModelError
from partitioner.explore.design_space import explore
from partitioner.explore.draft import branch_splits

ZOO = ("yolov3", "yolov3-tiny", "ssd300-vgg16")
FIXED = {"zcu104": EngineConfig(vec=16, pe_rows=16, pixels=2, compute_units=2),
         "kv260": EngineConfig(vec=8, pe_rows=8, pixels=2, compute_units=2)}
SMALL = EngineConfig(vec=8, pe_rows=8, pixels=1, compute_units=2)
RTL_CASES = (("two-branch", 64, SMALL), ("yolov3-tiny", 128, SMALL), ("yolov3-tiny", 416, FIXED["zcu104"]),
             ("yolov8n", 320, FIXED["zcu104"]), ("yolov3", 416, FIXED["zcu104"]))


def _builds(corpus: Path | None):
    for name in ZOO:
        yield name, None
    if corpus is not None and (corpus / "yolov8n.onnx").exists():
        yield "yolov8n", corpus / "yolov8n.onnx"


def _build(name: str, path: Path | None, folder: Path, bname: str, **kw):
    if path is None:
        return partitioned(name, folder, bname, accuracy=False, objective="latency", **kw)
    tag = "-".join(f"{k}" for k in kw) or "explored"
    return run_partition(PartitionConfig(model=path, out_dir=folder / f"build-{name}-{bname}-{tag}", board=bname,
                                         picture=False, accuracy=False, objective="latency", **kw))


def _pieces(d) -> str:
    return f"{d.config.describe()}, {d.split.fpga_subgraphs} FPGA subgraphs"


def _plan_row(root: Path) -> tuple[str, str, str, str]:
    p = predict(root, frames=1, in_flight=1)
    units = [v for k, v in p.utilisation.items() if k.startswith("fpga")]
    return (f"{p.makespan_s * 1e3:.2f}", f"{p.critical_path_s * 1e3:.2f}", f"{p.gap_to_bound * 100:.1f} %",
            " / ".join(f"{u:.0%}" for u in units))


def explored(boards: list[str], corpus: Path | None, folder: Path) -> None:
    print("## The exploration, `--objective latency` (design and split chosen together)\n")
    print("| model | board | MHz | best single-subgraph design | latency ms | best split design | latency ms | "
          "best split design, 2-4 units | latency ms | chosen | built: latency ms | critical path ms | gap to bound | "
          "FPGA units busy |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for bname in boards:
        for name, path in _builds(corpus):
            r = _build(name, path, folder, bname)
            ex = r.exploration
            single = ex.splits[0].best
            splits = [o.best for o in ex.splits[1:]]
            best = min(splits, key=lambda d: d.latency_s) if splits else None
            chosen = "split" if not math.isinf(ex.chosen.split.share) else "no split"
            multi = _best_multi_unit_split(r, bname)
            print(f"| {name} | {bname} | {ex.chosen.config.clock_mhz:g} | {single.config.describe()} | "
                  f"{single.latency_s * 1e3:.2f} | {_pieces(best) if best else '(no fork with work)'} | "
                  f"{best.latency_s * 1e3 if best else float('nan'):.2f} | {_pieces(multi) if multi else '-'} | "
                  f"{multi.latency_s * 1e3 if multi else float('nan'):.2f} | {chosen} | "
                  + " | ".join(_plan_row(r.plan.root)) + " |")
            sys.stdout.flush()


def _best_multi_unit_split(result, bname: str):
    """The shortest frame a design of two or more units reaches with some split (the build's own exploration
    stops weighing splits for designs that cannot beat its choice)."""
    graph = result.partition.graph
    b = board(bname)
    nodes, splits = branch_splits(graph, b)
    if len(splits) < 2:
        return None
    ex = explore(graph, nodes, splits[0].fpga_subgraphs, b, units=(2, 3, 4), objective="latency", splits=splits)
    found = [o.best for o in ex.splits[1:] if o.best is not None]
    return min(found, key=lambda d: d.latency_s) if found else None


def fixed(boards: list[str], corpus: Path | None, folder: Path) -> None:
    print("\n## Engines fixed by hand with two units (`--engine ... --compute-units 2 --objective latency`)\n")
    print("| model | board | engine | MHz | no split: latency ms | chosen split | latency ms | gain | "
          "built: latency ms | critical path ms | gap to bound | FPGA units busy |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for bname in boards:
        engine = FIXED[bname]
        for name, path in _builds(corpus):
            try:
                r = _build(name, path, folder, bname, engine=engine)
            except ModelError as exc:                # a fixed engine the board cannot hold for this model
                print(f"| {name} | {bname} | {engine.describe()} | - | {str(exc)[:80]} | | | | | | | |")
                continue
            clock = read_plan(r.plan.root).engine_config["clock_mhz"]
            single, chosen = r.splits.splits[0].best, r.splits.chosen
            print(f"| {name} | {bname} | {engine.describe()} | {clock:g} | {single.latency_s * 1e3:.2f} | "
                  f"{chosen.split.label} ({chosen.split.fpga_subgraphs} FPGA subgraphs) | "
                  f"{chosen.latency_s * 1e3:.2f} | {1 - chosen.latency_s / single.latency_s:.1%} | "
                  + " | ".join(_plan_row(r.plan.root)) + " |")
            sys.stdout.flush()


def rtl(folder: Path, corpus: Path | None) -> None:
    """One frame of each case's chosen split, two Verilator units at once (YOLOv8n where the corpus has it)."""
    import models
    from fpga_runtime.checking.frames import random_frame
    from fpga_runtime.run.session import Session
    print("\n## One frame of split subgraphs on two Verilator units (zcu104 memory timing, each unit half the DDR)\n")
    print("| model | engine | MHz | FPGA subgraphs | bit-exact | RTL cycles, 2 units | model cycles | error | "
          "RTL cycles, 1 unit (same subgraphs) | overlap gain |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, size, engine in RTL_CASES:
        if name in models.ZOO:
            path = folder / f"rtl-{name}-{size}.onnx"
            models.build_to_file(name, path, size)
        elif corpus is not None and (corpus / f"{name}.onnx").exists():
            path = corpus / f"{name}.onnx"
        else:
            continue
        out = folder / f"rtl-{name}-{size}"
        run_partition(PartitionConfig(model=path, out_dir=out, board="zcu104", picture=False, accuracy=False,
                                      engine=engine, objective="latency"))
        with Session(out, backend="reference") as ref, Session(out, backend="verilator") as sim:
            frame = random_frame(ref.plan, 1)
            same = all(np.array_equal(a, b) for a, b in zip(ref.run(None, frame), list(sim.stream([frame],
                                                                                                   in_flight=1))[0]))
            measured = {s.program: s.cycles for s in sim.stats}
            model = model_engine_cycles(sim.plan, board("zcu104"), 2)
            plan = sim.plan
        wall, predicted = frame_engine_cycles(plan, measured, 2), frame_engine_cycles(plan, model, 2)
        one = frame_engine_cycles(plan, measured, 1)
        fpga = sum(s.device == "fpga" for s in plan.subgraphs)
        print(f"| {name}-{size} | {engine.describe()} | {plan.engine_config['clock_mhz']:g} | {fpga} | {same} | "
              f"{wall:,.0f} | {predicted:,.0f} | {predicted / wall - 1:+.1%} | {one:,.0f} | {1 - wall / one:.1%} |")
        sys.stdout.flush()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--boards", nargs="+", default=["zcu104", "kv260"])
    ap.add_argument("--corpus", type=Path, default=Path("build/corpus"))
    ap.add_argument("--no-rtl", action="store_true")
    args = ap.parse_args()
    corpus = args.corpus if args.corpus.is_dir() else None
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        explored(args.boards, corpus, folder)
        fixed(args.boards, corpus, folder)
        if not args.no_rtl:
            rtl(folder, corpus)


if __name__ == "__main__":
    main()
