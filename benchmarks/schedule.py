"""Scheduling: virtual-time prediction on a board (makespan vs critical path vs lower bound vs sequential), and
wall-clock speedup of the concurrent scheduler over a sequential run on this machine (reference backend).

    python benchmarks/schedule.py [--board zcu104] [--frames 4]
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from _zoo import partitioned

from fpga_runtime.checking.frames import random_frame
from fpga_runtime.plan import read_plan
from fpga_runtime.prediction.virtual_time import build_compute_units, predict
from fpga_runtime.run.scheduler import Scheduler
from fpga_runtime.run.session import Session


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--board", default="zcu104")
    ap.add_argument("--frames", type=int, default=4)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        print(
            f"Virtual time on {args.board} (durations from the cycle model and timing.py), one frame and "
            f"{args.frames} pipelined frames:\n"
        )
        print("| model | CUs | frames | makespan ms | critical path ms | lower bound ms | gap to bound | "
              "sequential ms | speedup | fps | FPGA utilisation |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for name in ("yolov3", "ssd300-vgg16"):
            build = partitioned(name, Path(tmp), args.board, accuracy=False).plan.root
            fitting = build_compute_units(read_plan(build))        # more units than the build's do not fit
            for frames in (1, args.frames):
                for units in range(1, fitting + 1):
                    p = predict(build, units, frames=frames, in_flight=min(frames, 3))
                    fpga_util = np.mean([v for k, v in p.utilisation.items() if k.startswith("fpga")])
                    print(f"| {name} | {units} | {frames} | {p.makespan_s * 1e3:.2f} | {p.critical_path_s * 1e3:.2f} | "
                          f"{p.lower_bound_s * 1e3:.2f} | {p.gap_to_bound * 100:.1f} % | {p.sequential_s * 1e3:.2f} | "
                          f"{p.speedup:.2f} | {p.fps:.1f} | {fpga_util:.0%} |")
        print(f"\nWall clock on this machine ({os.cpu_count()} cores), reference backend, {args.frames} frames:\n")
        print("| model | sequential s | concurrent s | speedup | identical outputs |")
        print("|---|---|---|---|---|")
        for name in ("yolov3-tiny", "ssd-mobilenet-v1"):
            build = partitioned(name, Path(tmp), args.board, accuracy=False).plan.root
            with Session(build, compute_units=2, slots=3) as s:
                frames = [random_frame(s.plan, i) for i in range(args.frames)]
                s.run(None, frames[0])
                t0 = time.perf_counter()
                seq = [s.run(None, f) for f in frames]
                t_seq = time.perf_counter() - t0
                t0 = time.perf_counter()
                conc = Scheduler(s, cpu_workers=2, compute_units=2, in_flight=3).run(frames)
                t_conc = time.perf_counter() - t0
                same = all(np.array_equal(a, c[k]) for q, c in zip(seq, conc) for a, k in zip(q, s.output_names))
                print(f"| {name}-{s.plan.inputs[0].shape[1]} | {t_seq:.3f} | {t_conc:.3f} | {t_seq / t_conc:.2f} | "
                      f"{same} |")


if __name__ == "__main__":
    main()
