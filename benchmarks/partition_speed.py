"""Time the steps of `partition` on the zoo's big models, beside onnxruntime's own load of the same file.

    python benchmarks/partition_speed.py [--repeat 3] [--models yolov3,yolov3-tiny,ssd300-vgg16]

Prints the best of `--repeat` runs per step (seconds) as a Markdown table, with onnxruntime's session load
(`ort load`, best of `--repeat`), the placement steps (import to write) and the whole build as multiples of it.
`compile` quantises the FPGA subgraphs (4 calibration frames through onnxruntime) and writes the engine
programs; `accuracy` runs the int8 pipeline on the reference backend once and compares it with the float model.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import models  # noqa: E402
from fpga_runtime.onnx_chain import cpu_session  # noqa: E402
from partitioner.build import STEPS as BUILD_STEPS  # noqa: E402
from partitioner.build import PartitionConfig, run_partition  # noqa: E402

SIZES = {"yolov3": 416, "yolov3-tiny": 416, "ssd300-vgg16": 300, "ssd-mobilenet-v1": 300}
STEPS = [s.name for s in BUILD_STEPS if s.planned(PartitionConfig(model=Path("m.onnx"), out_dir=Path("b")))]
PLACEMENT = STEPS[:STEPS.index("write") + 1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--models", default="yolov3,yolov3-tiny,ssd300-vgg16")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            path = Path(tmp) / f"{name}.onnx"
            b = models.build_to_file(name, path, SIZES[name])
            best: dict[str, float] = {}
            walls = []
            loads = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                cpu_session(path)
                loads.append(time.perf_counter() - t0)
            load = min(loads)
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                result = run_partition(PartitionConfig(model=path, out_dir=Path(tmp) / f"build-{name}"))
                walls.append(time.perf_counter() - t0)
                for step, seconds in result.timings:
                    best[step] = min(best.get(step, 1e9), seconds)
            fpga = sum(1 for s in result.plan.subgraphs if s.device == "fpga")
            rows.append([f"{name}-{SIZES[name]}", f"{b.params / 1e6:.1f} M", f"{path.stat().st_size / 2**20:.0f} MiB",
                         *(f"{best.get(s, 0.0):.3f}" for s in STEPS), f"{min(walls):.3f}", f"{load:.3f}",
                         f"{sum(best.get(s, 0.0) for s in PLACEMENT) / load:.1f}x", f"{min(walls) / load:.1f}x",
                         f"{len(result.plan.subgraphs)} ({fpga} FPGA)"])
    header = ["model", "params", "file", *STEPS, "total", "ort load", "import..write", "whole build", "subgraphs"]
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
