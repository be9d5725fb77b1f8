"""Clock cycles of every golden case's layers on the RTL engine under Verilator against the cycle model: the small
layers where the model's fixed costs (per layer, tile load and run, element-wise layer) dominate, so its
constants are refitted on this table when the RTL's pipeline changes (fpga_runtime/cycle_model.py says when).

    python benchmarks/golden_cycles.py        # about two minutes: one engine built for every case, then the runs
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from golden_replay import CASE_FILES, Case, layer_cycles_on  # noqa: E402

from fpga_runtime.cycle_model import latency_cycles  # noqa: E402
from fpga_runtime.prediction.profile import op_name  # noqa: E402
from fpga_runtime.rtl_sim.engine import MemoryTiming, RtlEngine  # noqa: E402
from partitioner.codegen.sources import write_engine_sources  # noqa: E402


def main() -> None:
    cases = [Case(p) for p in CASE_FILES]
    errors = []
    with tempfile.TemporaryDirectory() as tmp:
        config = cases[0].full_config
        hls = write_engine_sources(Path(tmp), "golden", config, [d for c in cases for d in c.descriptors()])
        # the DDR latency the cycle model assumes at the cases' clock
        engine = RtlEngine(hls.parent / "rtl", quiet=True, timing=MemoryTiming(latency=latency_cycles(config)))
        print(f"{'case':34} {'layer':>5} {'op':>10} {'RTL':>8} {'model':>8} {'error':>7}")
        try:
            for case, d, rtl, model in layer_cycles_on(engine, cases):
                errors.append(model / rtl - 1)
                print(f"{case.name:34} {d.layer_id:>5} {op_name(d):>10} {rtl:>8,} {model:>8,} "
                      f"{100 * errors[-1]:>6.2f}%", flush=True)
        finally:
            engine.close()
    print(f"{len(errors)} layers: mean error {100 * sum(errors) / len(errors):.2f} %, worst "
          f"{100 * max(errors, key=abs):.2f} %")


if __name__ == "__main__":
    main()
