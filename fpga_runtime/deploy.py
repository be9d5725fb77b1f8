"""`fpga-run deploy BUILD -o DIR`: a folder to copy to the board that runs on its own: the plan, the ONNX
subgraphs, the engine image, the overlay (Vivado's bitstream and .hwh where `make bitstream` made them, else
the generated metadata and the commands that make them), this runtime's sources, the board's Python
requirements and a README. `python3 -m fpga_runtime run DIR --backend pynq` on the board needs nothing else."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from fpga_runtime.engine_image import ENGINE_DIR
from fpga_runtime.plan import PLAN_FILE, PlanError, file_sha256, read_plan

RUNTIME = Path(__file__).resolve().parent
# what the runtime imports on the board, beside PYNQ (the image ships it): numpy < 2 for pynq 3.x images,
# onnxruntime (PyPI wheels for aarch64, Python 3.8-3.12; none for armv7), click, Pillow and matplotlib
# what the bundle's commands import (`measure-cpu` builds single-op ONNX models: onnx)
BOARD_REQUIREMENTS = ["numpy>=1.24,<2", "onnxruntime>=1.16", "click>=8.0", "pillow>=9", "matplotlib>=3.5", "onnx>=1.14"]
BOARD_MODULES = ["numpy", "onnxruntime", "click", "PIL", "matplotlib"]      # the ones `run` needs
KEEP_FROM_FPGA = ["engine.json", "memory.bin"]
# the engine's sources, so `--simulate csim|verilator` works from the bundle on a workstation too
ENGINE_SOURCES = ["hls/*.cpp", "hls/*.h", "rtl/engine.f", "rtl/*.sv", "rtl/*.svh", "rtl/sim/*.cpp"]


def _copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)


def deploy(build: Path, out: Path, with_model: bool = False, force: bool = False) -> dict:
    """Write the bundle; returns its manifest (also written as manifest.json)."""
    plan = read_plan(build)
    if out.exists() and any(out.iterdir()) and not force:
        raise PlanError(f"{out} exists and is not empty (use --force to overwrite it)")
    if out.resolve() == build.resolve():
        raise PlanError("deploy into a new folder, not into the build")
    out.mkdir(parents=True, exist_ok=True)
    raw = json.loads((plan.root / PLAN_FILE).read_text())
    for sg in plan.subgraphs:
        _copy(plan.onnx_path(sg), out / sg.onnx)
    model = Path(plan.model["path"])
    model = model if model.is_absolute() else plan.root / model
    if with_model:
        if not model.is_file():
            raise PlanError(f"--with-model: the original model {model} is gone")
        _copy(model, out / "model" / model.name)
        raw["model"]["path"] = f"model/{model.name}"
    (out / PLAN_FILE).write_text(json.dumps(raw, indent=1) + "\n")
    overlay_state = "no FPGA subgraphs"
    if plan.engine is not None:
        fpga = build / ENGINE_DIR
        for name in KEEP_FROM_FPGA:
            _copy(fpga / name, out / ENGINE_DIR / name)
        for pattern in ENGINE_SOURCES:
            for src in fpga.glob(pattern):
                _copy(src, out / ENGINE_DIR / src.relative_to(fpga))
        overlay_state = _copy_overlay(fpga / "overlay", out / ENGINE_DIR / "overlay")
    runtime = out / "fpga_runtime"
    if runtime.exists():
        shutil.rmtree(runtime)
    shutil.copytree(RUNTIME, runtime, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (out / "requirements-board.txt").write_text("\n".join(BOARD_REQUIREMENTS) + "\n")
    (out / "run.sh").write_text(
        "#!/bin/sh\n# run this bundle on the board: ./run.sh [fpga-run run options]\n"
        'here=$(cd "$(dirname "$0")" && pwd)\n'
        "python3 -c 'import importlib.util, sys; missing = [m for m in sys.argv[1:] "
        "if importlib.util.find_spec(m) is None]; missing and sys.exit(\"missing Python packages: \" + "
        "\", \".join(missing) + \"; install them once with: pip3 install -r requirements-board.txt "
        "(in this folder)\")' " + " ".join(BOARD_MODULES) + " || exit 1\n"
        'PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" exec python3 -m fpga_runtime run "$here" '
        '--backend pynq "$@"\n'
    )
    (out / "run.sh").chmod(0o755)
    files = sorted(p for p in out.rglob("*") if p.is_file() and "fpga_runtime" not in p.relative_to(out).parts)
    manifest = {"build": str(build.resolve()), "build_id": plan.build_id, "board": plan.board, "overlay": overlay_state,
                "files": {str(p.relative_to(out)): file_sha256(p) for p in files}}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    (out / "README.md").write_text(_readme(plan.board, plan.model.get("name", "model"), overlay_state))
    return manifest


def _copy_overlay(src: Path, dst: Path) -> str:
    """Vivado's bitstream and .hwh if they were made, and always the generated metadata and the Vivado script."""
    if not src.is_dir():
        return "missing: the build has no overlay (partition for a Zynq board with --board)"
    for p in list(src.glob("*.hwh")) + list(src.glob("*.tcl")) + list(src.glob("*.md")):
        _copy(p, dst / p.name)
    bits = sorted((src / "build").glob("*.bit"))
    if bits and bits[0].with_suffix(".hwh").is_file():
        _copy(bits[0], dst / "build" / bits[0].name)
        _copy(bits[0].with_suffix(".hwh"), dst / "build" / bits[0].with_suffix(".hwh").name)
        return f"included: {bits[0].name} and its .hwh from Vivado"
    return "not built: make the bitstream with Vivado (README) and put it in fpga/overlay/build/"


def _readme(board: str, model: str, overlay_state: str) -> str:
    return f"""# {model} for {board}: deploy bundle

Made by `fpga-run deploy`. Copy this folder to the board (for example `scp -r` to `/home/xilinx/`), then on the
board, as root in PYNQ's Python environment (`sudo -i`; on PYNQ images `source /etc/profile.d/pynq_venv.sh`):

    pip3 install -r requirements-board.txt      # once; PYNQ itself comes with the image
    ./run.sh --frames 4                          # = python3 -m fpga_runtime run . --backend pynq --frames 4

`./run.sh --image photo.jpg` runs a picture; outputs, traces and detections go to `run/` (`run2/`, ... for later
runs). Without the board, `python3 -m fpga_runtime run . --backend pynq --simulate csim` runs the same driver on a
simulated board.

Overlay: {overlay_state}.
Where the bitstream is not included, on a machine with Vivado and Vitis HLS, in the build folder this bundle
came from: `make -C fpga hls bitstream` (the engine IP, then `fpga/overlay/overlay.tcl`), then copy
`fpga/overlay/build/*.bit` and `*.hwh` into this bundle's `fpga/overlay/build/`.

Board software: PYNQ 3.x images (Python 3.10; aarch64 on Zynq UltraScale+, armv7 on PYNQ-Z2) or PYNQ 4.0 (Python
3.12, Zynq UltraScale+ only). onnxruntime publishes aarch64 wheels; for armv7 (PYNQ-Z2) there is none on PyPI:
build it on the board or use a community wheel. `manifest.json` lists every file with its SHA-256.
"""
