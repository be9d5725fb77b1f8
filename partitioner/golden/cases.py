"""Golden cases: one tiny model per engine feature, compiled and run on the reference backend, saved as files
that every other backend replays bit for bit (`python -m partitioner.golden.cases OUT_DIR`).

A case file (`<name>.npz`) holds the constant region, the activation region as the host leaves it before
the first program starts, the programs (address, layer count) in order, the activation region the reference
leaves after the last one, and the float output of onnxruntime with the output's view, so a replay can
check the int8 result against the float model too.
"""
from __future__ import annotations

import argparse
import json
import tempfile
from dataclasses import asdict
from pathlib import Path

import numpy as np
import onnx

from fpga_runtime.abi import EngineConfig
from fpga_runtime.checking.frames import random_frame
from fpga_runtime.engine_image import ENGINE_DIR, EngineImage
from fpga_runtime.onnx_chain import run_plan_on_onnxruntime
from fpga_runtime.reference import ReferenceEngine
from partitioner.build import PartitionConfig, run_partition
from partitioner.engine.calibration import TABLE_FILE
from partitioner.golden.case_models import CASES, WINOGRAD_CASES

__all__ = ["CASES", "WINOGRAD_CASES", "make_case", "write_cases"]



def make_case(name: str, folder: Path, config: EngineConfig | None = None,
              calibration: dict | None = None) -> dict[str, np.ndarray]:
    """Partition, compile and run one case; returns the arrays of its golden file. With `calibration` (a case's
    stored ranges and bounds) the compile uses no float arithmetic of onnxruntime, so its bytes are the same on
    every CPU."""
    path = folder / f"{name}.onnx"
    onnx.save({**CASES, **WINOGRAD_CASES}[name](), str(path))
    table = None
    if calibration is not None:
        table = folder / f"{name}.{TABLE_FILE}"
        table.write_text(json.dumps({"source": "golden case", **calibration}))
    result = run_partition(PartitionConfig(model=path, out_dir=folder / name, picture=False, accuracy=False,
                                           offload_everything=True, calibration_frames=8, calibration_table=table,
                                           engine=config or EngineConfig(), column_packing=False,
                                           winograd="all" if name in WINOGRAD_CASES else "off"))
    plan = result.plan
    fpga = [s for s in plan.subgraphs if s.device == "fpga"]
    if not fpga or any(s.device == "cpu" for s in plan.subgraphs):
        raise RuntimeError(f"golden case {name}: expected the whole model on the FPGA")
    engine_dir = folder / name / ENGINE_DIR
    image = EngineImage.load(engine_dir)
    const = image.load_constants(engine_dir)
    act = image.fresh_activations()
    feeds = random_frame(plan, seed=7)
    for t in plan.inputs:
        image.tensors[t.name].write(act, feeds[t.name])
    act_in = act.copy()
    engine = ReferenceEngine(image.config)
    programs = np.array([[image.programs[s.name].addr, image.programs[s.name].layers] for s in fpga], np.int64)
    for addr, layers in programs:
        engine.run(act, const, int(addr), int(layers))
    float_out = run_plan_on_onnxruntime(plan, feeds)
    out_name = plan.outputs[0].name
    stored = json.loads((engine_dir / TABLE_FILE).read_text())
    stored = {"ranges": stored["ranges"], "bounds": stored.get("bounds", {}), "means": stored.get("means", {})}
    return {"const": const, "act_in": act_in, "act_out": act, "programs": programs,
            "config": np.array(json.dumps(asdict(image.config))),
            "calibration": np.array(json.dumps(stored, sort_keys=True)),
            "out_view": np.array(json.dumps(asdict(image.tensors[out_name]))),
            "float_out": float_out[out_name]}


def _write_binary(out: Path, name: str, case: dict[str, np.ndarray]) -> None:
    """The testbench's format: raw regions and a text list of programs."""
    for key in ("const", "act_in", "act_out"):
        case[key].tofile(out / f"{name}.{key}.bin")
    (out / f"{name}.programs.txt").write_text("".join(f"{a} {n}\n" for a, n in case["programs"]))


def write_cases(out: Path, names: list[str] | None = None, config: EngineConfig | None = None,
                binary: bool = False) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    names = names or list(CASES)
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            case = make_case(name, Path(tmp), config)
            if binary:
                _write_binary(out, name, case)
                written.append(out / f"{name}.programs.txt")
            else:
                np.savez_compressed(out / f"{name}.npz", **case)
                written.append(out / f"{name}.npz")
    if binary:
        (out / "cases.txt").write_text("".join(f"{n}\n" for n in names))
    return written


def main() -> None:
    ap = argparse.ArgumentParser(description="write the engine's golden cases")
    ap.add_argument("out", type=Path, nargs="?", default=Path("tests/golden"))
    ap.add_argument("--vec", type=int, default=EngineConfig.vec)
    ap.add_argument("--pe-rows", type=int, default=EngineConfig.pe_rows)
    ap.add_argument("--bin", action="store_true", help="raw files for the C++ testbench instead of .npz")
    ap.add_argument("--winograd", action="store_true", help="the Winograd cases, into OUT/winograd")
    args = ap.parse_args()
    out, names = (args.out / "winograd", list(WINOGRAD_CASES)) if args.winograd else (args.out, None)
    for p in write_cases(out, names, EngineConfig(vec=args.vec, pe_rows=args.pe_rows), binary=args.bin):
        print(p)


if __name__ == "__main__":
    main()
