"""Resident memory over a long stream: `Session.stream` on a small build, RSS sampled every few thousand frames.
A stream must not grow with its length (statistics are a bounded window plus running totals).

    .venv/bin/python benchmarks/stream_memory.py [--frames 20000] [--model two-branch] [--backend reference]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=20000)
    ap.add_argument("--model", default="two-branch")
    ap.add_argument("--backend", default="reference")
    ap.add_argument("--every", type=int, default=2000)
    args = ap.parse_args()
    from fpga_runtime import Session
    from models import build_to_file
    from partitioner.build import PartitionConfig, run_partition
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "m.onnx"
        build_to_file(args.model, model)
        run_partition(PartitionConfig(model=model, out_dir=Path(tmp) / "b", picture=False, accuracy=False,
                                      offload_everything=True))
        with Session(Path(tmp) / "b", args.backend, slots=3) as session:
            spec = session.get_inputs()[0]
            frame = np.random.default_rng(0).normal(size=spec.shape).astype(np.float32)
            rows = [(0, rss_mib(), 0.0)]
            t0 = time.perf_counter()
            for k, _ in enumerate(session.stream(frame for _ in range(args.frames)), 1):
                if k % args.every == 0:
                    rows.append((k, rss_mib(), time.perf_counter() - t0))
                    print(f"{k} frames, RSS {rows[-1][1]:.1f} MiB", file=sys.stderr, flush=True)
            engine_runs = len(session.stats)
    print(f"| frames | RSS MiB | seconds |  ({args.model}, {args.backend}, {engine_runs} engine-run records kept)")
    print("|---|---|---|")
    for k, rss, s in rows:
        print(f"| {k} | {rss:.1f} | {s:.1f} |")
    grown = rows[-1][1] - rows[1][1]
    print(f"\ngrowth from frame {rows[1][0]} to {rows[-1][0]}: {grown:+.1f} MiB "
          f"({grown * 1024 / max(1, rows[-1][0] - rows[1][0]):+.3f} KiB per frame)")


if __name__ == "__main__":
    main()
