"""Compute units on one DDR: the RTL against the shared-DDR model (fpga_runtime/prediction/shared_ddr.py).

For each zoo model (partitioned for the ZCU104), number of units and DDR bandwidth (bytes per engine cycle; the
ZCU104's sustained 16 GB/s is 64 at 250 MHz): the units are Verilated and clocked together on one DDR (each an
equal share, the unused share going to the others: fpga_runtime/rtl_sim/lockstep.py), each running frames back
to back, started a frame / units apart. Prints frames per million cycles of all units together: the RTL's (after
each unit's first frame), the model's from one lone unit's RTL layer cycles and bytes, and the two bounds: each
unit held to an equal share (a static split, what the `verilator` backend gives its threads) and each with the
whole DDR (capped by the DDR's bandwidth over a frame's bytes).

    python benchmarks/shared_ddr.py yolov3-tiny:96 --units 2,3 --ddr 32,40,48,64
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import models  # noqa: E402
from fpga_runtime.abi import EngineConfig  # noqa: E402
from fpga_runtime.boards import board  # noqa: E402
from fpga_runtime.rtl_sim.engine import MemoryTiming  # noqa: E402
from fpga_runtime.rtl_sim.lockstep import check_sharing  # noqa: E402
from partitioner.build import PartitionConfig, run_partition  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+", help="zoo model[:input size], e.g. yolov3-tiny:96")
    ap.add_argument("--units", default="2,3")
    ap.add_argument("--ddr", default="32,48,64", help="DDR bytes per engine cycle, comma-separated")
    ap.add_argument("--frames", type=int, default=3)
    args = ap.parse_args()
    zcu = board("zcu104")
    timing = MemoryTiming.of_board(zcu.ddr_sustained_gbps, 250.0, zcu.port_bits)
    units = [int(u) for u in args.units.split(",")]
    print("| model | units | DDR B/cycle | RTL | model | error | static split | whole DDR | seconds |")
    print("|---|---|---|---|---|---|---|---|---|")
    errors = []
    with tempfile.TemporaryDirectory() as tmp:
        for spec in args.models:
            name, _, size = spec.partition(":")
            path = Path(tmp) / f"{name}.onnx"
            models.build_to_file(name, path, int(size) if size else None)
            out = Path(tmp) / name
            run_partition(PartitionConfig(model=path, out_dir=out, picture=False, accuracy=False, board="zcu104",
                                          engine=EngineConfig(compute_units=max(units))))
            for k in units:
                for ddr in (float(x) for x in args.ddr.split(",")):
                    start = time.time()
                    r = check_sharing(out / "fpga", k, ddr, timing, args.frames)
                    errors.append(abs(r.error))
                    print(f"| {spec} | {k} | {ddr:g} | {r.rtl * 1e6:.4f} | {r.model * 1e6:.4f} | {r.error:+.1%} | "
                          f"{r.static_split * 1e6:.4f} | {r.whole_ddr * 1e6:.4f} | {time.time() - start:.0f} |",
                          flush=True)
    print(f"\nframes per million cycles; largest model error {max(errors):.1%}")


if __name__ == "__main__":
    main()
