"""`fpga-run deploy BUILD -o DIR`: a folder to copy to the board that runs on its own: the plan, the ONNX
subgraphs, the engine image, the overlay (Vivado's bitstream and .hwh where `make bitstream` made them, else
the generated metadata and the commands that make them), this runtime's sources, the board's Python
requirements and a README. `python3 -m fpga_runtime run DIR --backend pynq` on the board needs nothing else."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from fpga_runtime.bundle import write_manifest
from fpga_runtime.engine_image import ENGINE_DIR
from fpga_runtime.plan import PLAN_FILE, PlanError, confined, original_model, read_plan, verify_files

RUNTIME = Path(__file__).resolve().parent
# what the runtime imports on the board, beside PYNQ (the image ships it): numpy < 2 for pynq 3.x images,
# onnxruntime (PyPI wheels for aarch64, Python 3.8-3.12; none for armv7), click, Pillow and matplotlib
# what the bundle's commands import (`measure-cpu` builds single-op ONNX models: onnx)
BOARD_REQUIREMENTS = ["numpy>=1.24,<2", "onnxruntime>=1.16", "click>=8.0", "pillow>=9", "matplotlib>=3.5", "onnx>=1.14"]
BOARD_MODULES = ["numpy", "onnxruntime", "click", "PIL", "matplotlib"]      # the ones `run` needs
KEEP_FROM_FPGA = ["engine.json", "memory.bin"]
# the engine's sources, so `--simulate csim|verilator` works from the bundle on a workstation too
ENGINE_SOURCES = ["hls/*.cpp", "hls/*.h", "rtl/engine.f", "rtl/*.sv", "rtl/*.svh", "rtl/sim/*.cpp"]


def _source(build: Path, rel: str, what: str) -> Path:
    """A file of the build by its relative path: inside the build, a regular file, reached through no symbolic
    link (deploy copies what the build wrote, never what a link points at)."""
    path = confined(build, rel, what)
    if path != build.resolve() / rel or not path.is_file():
        raise PlanError(f"{build}: {what} {rel!r} is a symbolic link or not a regular file; deploy copies only the "
                        "build's own files")
    return path


def _copy(src: Path, dst_root: Path, rel: str) -> None:
    dst = dst_root / rel
    dst.parent.mkdir(parents=True, exist_ok=True)
    confined(dst_root, rel, "a bundle file")            # a link left in an old bundle does not lead out
    if dst.is_symlink():
        dst.unlink()
    shutil.copyfile(src, dst)


def _build_files(build: Path, plan) -> list[str]:
    """The data files to carry: those plan.json records (with the CPU subgraphs' external weights), or for a
    build from before the record, the subgraphs, their .weights and the engine image."""
    if plan.files is not None:
        return sorted(plan.files)
    rels = [sg.onnx for sg in plan.subgraphs]
    rels += [str(Path(r).with_suffix(".weights")) for r in rels if (build / r).with_suffix(".weights").is_file()]
    return rels + ([f"{ENGINE_DIR}/{name}" for name in KEEP_FROM_FPGA] if plan.engine is not None else [])


def deploy(build: Path, out: Path, with_model: bool = False, force: bool = False) -> dict:
    """Write the bundle; returns its manifest (also written as manifest.json)."""
    plan = read_plan(build)
    verify_files(plan)
    if out.exists() and any(out.iterdir()) and not force:
        raise PlanError(f"{out} exists and is not empty (use --force to overwrite it)")
    if out.resolve() == build.resolve() or build.resolve() in out.resolve().parents:
        raise PlanError("deploy into a new folder, not into the build")
    out.mkdir(parents=True, exist_ok=True)
    raw = json.loads((plan.root / PLAN_FILE).read_text())
    for rel in _build_files(build, plan):
        _copy(_source(build, rel, "the data file"), out, rel)
    if with_model:
        model, no_model = original_model(plan)
        if model is None:
            raise PlanError(f"--with-model: {no_model}")
        _copy(model, out, f"model/{model.name}")
        raw["model"]["path"] = f"model/{model.name}"
    (out / PLAN_FILE).write_text(json.dumps(raw, indent=1) + "\n")
    overlay_state = "no FPGA subgraphs"
    if plan.engine is not None:
        fpga = build / ENGINE_DIR
        for pattern in ENGINE_SOURCES:
            for src in sorted(fpga.glob(pattern)):
                rel = src.relative_to(build).as_posix()
                _copy(_source(build, rel, "the engine source"), out, rel)
        overlay_state = _copy_overlay(build, out)
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
    (out / "README.md").write_text(_readme(plan.board, plan.model.get("name", "model"), overlay_state))
    return write_manifest(out, {"build": str(build.resolve()), "build_id": plan.build_id, "board": plan.board,
                                "overlay": overlay_state})


def _copy_overlay(build: Path, out: Path) -> str:
    """Vivado's bitstream and .hwh if they were made, and always the generated metadata and the Vivado script."""
    src = build / ENGINE_DIR / "overlay"
    if not src.is_dir():
        return "missing: the build has no overlay (partition for a Zynq board with --board)"
    for p in sorted(list(src.glob("*.hwh")) + list(src.glob("*.tcl")) + list(src.glob("*.md"))):
        rel = p.relative_to(build).as_posix()
        _copy(_source(build, rel, "the overlay file"), out, rel)
    bits = sorted((src / "build").glob("*.bit"))
    if bits and bits[0].with_suffix(".hwh").is_file():
        for p in (bits[0], bits[0].with_suffix(".hwh")):
            rel = p.relative_to(build).as_posix()
            _copy(_source(build, rel, "the bitstream"), out, rel)
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
Where the bitstream is not included, on a machine with Vivado, in the build folder this bundle came from:
`make -C fpga bitstream` (`make ip` packages the SystemVerilog engine as IP, then `fpga/overlay/overlay.tcl`
builds the block design, checks timing and writes the bitstream and .hwh), then copy `fpga/overlay/build/*.bit`
and `*.hwh` into this bundle's `fpga/overlay/build/`.

Board software: PYNQ 3.x images (Python 3.10; aarch64 on Zynq UltraScale+, armv7 on PYNQ-Z2) or PYNQ 4.0 (Python
3.12, Zynq UltraScale+ only). onnxruntime publishes aarch64 wheels; for armv7 (PYNQ-Z2) there is none on PyPI:
build it on the board or use a community wheel. `manifest.json` lists every file with its SHA-256 (the runtime's
too); `run` checks them before it starts.
"""
