"""`make verilator`: every golden case, made for this build's engine parameters, replayed on the build's RTL
engine under Verilator and compared with the reference byte for byte; "N passed, M failed" (exit 1 on a failure),
the RTL's counterpart of `make csim-gcc`."""
from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

from fpga_runtime.abi import EngineConfig
from fpga_runtime.engine_parts import from_defines, missing_part
from fpga_runtime.rtl_sim.build import rtl_defines
from fpga_runtime.rtl_sim.engine import RtlEngine, SimulationError
from fpga_runtime.rtl_sim.single_layer import program_descriptors
from partitioner.golden.cases import CASES, make_case


def built_parts(rtl: Path, config: EngineConfig) -> EngineConfig:
    """`config` with the window path and optional parts the build's RTL has (its engine_config.svh)."""
    got = rtl_defines(rtl)
    return from_defines(replace(config, pixels=int(got.get("ENGINE_PIXELS", 1)),
                                window_words=int(got.get("ENGINE_WINDOW_WORDS", 0)),
                                winograd="ENGINE_WINOGRAD" in got), got)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rtl", type=Path, help="the build's fpga/rtl folder")
    ap.add_argument("--vec", type=int, default=EngineConfig.vec)
    ap.add_argument("--pe-rows", type=int, default=EngineConfig.pe_rows)
    args = ap.parse_args()
    engine = RtlEngine(args.rtl)
    config = EngineConfig(vec=args.vec, pe_rows=args.pe_rows)
    built = built_parts(args.rtl, config)
    failed = skipped = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in CASES:
            case = make_case(name, Path(tmp), config)
            lacks = {p for a, n in case["programs"] for d in program_descriptors(case["const"], int(a), int(n))
                     if (p := missing_part(d, built))}
            if lacks:                      # the build left that part out: its own layers never need it
                skipped += 1
                print(f"{name}: skipped ({'; '.join(sorted(lacks))})", flush=True)
                continue
            act = case["act_in"].copy()
            try:
                cycles = sum(engine.run(act, case["const"], int(a), int(n), name).cycles for a, n in case["programs"])
                ok = np.array_equal(act, case["act_out"])
            except SimulationError as exc:
                cycles, ok = 0, False
                print(f"{name}: {exc}")
            failed += not ok
            print(f"{name}: {'ok' if ok else 'FAILED'} ({cycles:,} cycles)", flush=True)
    print(f"{len(CASES) - failed - skipped} passed, {failed} failed, {skipped} skipped (parts the build left out)")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
