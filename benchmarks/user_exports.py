"""A new user's path, timed: export a detector with the exporter's own command, `partition --calibrate JPEG_DIR`,
`fpga-run run --source JPEG_DIR --backend reference`, and count what was typed and every error met.

    .venv/bin/python benchmarks/user_exports.py [--work build/user_exports] [--export-venv .exports-venv]
                                                [--only yolov8n ...]

The exporters run in their own environment (torch, torchvision, ultralytics; made here when missing, with the pins
of scripts/export_corpus.sh): ultralytics and opencv want numpy 2, PYNQ (and so this toolchain) numpy 1, so a
user keeps them apart too. No weights are downloaded: the ultralytics models come from their .yaml (random
weights, the trained models' architecture and export path), torchvision's without weights, the DBNet from
scripts/export_corpus.py (PaddleOCR's architecture in torch, trained-like statistics). The JPEG folder is the two
photographs ultralytics ships (bus.jpg, zidane.jpg) and six crops and flips of them.
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
EXPORT_PINS = ["torch==2.14.1", "torchvision==0.29.1", "ultralytics", "onnx", "onnxslim", "onnxruntime"]
SSDLITE = ("import torch, torchvision; "
           "m = torchvision.models.detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None)"
           ".eval(); torch.onnx.export(m, (torch.rand(1, 3, 320, 320),), 'ssdlite320.onnx', input_names=['images'], "
           "output_names=['boxes', 'scores', 'labels'], dynamo=False)")


@dataclass
class Case:
    name: str
    export: list[str]                   # argv; "{py}" is the export environment's python, "{bin}" its bin/
    onnx: str
    partition_args: list[str] = field(default_factory=list)
    run_args: list[str] = field(default_factory=list)
    why_args: str = ""


CASES = [
    Case("yolov8n", ["{bin}/yolo", "export", "model=yolov8n.yaml", "format=onnx", "imgsz=320"], "yolov8n.onnx"),
    Case("yolov5nu", ["{bin}/yolo", "export", "model=yolov5nu.yaml", "format=onnx", "imgsz=320"], "yolov5nu.onnx"),
    Case("ssdlite320", ["{py}", "-c", SSDLITE], "ssdlite320.onnx", run_args=["--names", "coco91"],
         why_args="torchvision's labels are COCO's 91 ids and the ONNX carries no names"),
    Case("dbnet", ["{py}", str(ROOT / "scripts" / "export_corpus.py"), ".", "--only", "dbnet_mobilenetv3"],
         "dbnet_mobilenetv3.onnx", partition_args=["--preprocess", "imagenet"],
         why_args="PaddleOCR's detector takes ImageNet-normalised input, which an ONNX file does not say"),
]


@dataclass
class Step:
    argv: list[str]
    seconds: float
    code: int
    output: str


def sh(argv: list[str], cwd: Path) -> Step:
    t0 = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    return Step(argv, time.perf_counter() - t0, done.returncode, done.stdout + done.stderr)


def export_env(venv: Path) -> tuple[Path, float]:
    py = venv / "bin" / "python"
    if py.exists():
        return py, 0.0
    t0 = time.perf_counter()
    subprocess.run(["python3", "-m", "venv", str(venv)], check=True)
    subprocess.run([str(py), "-m", "pip", "install", "-q", *EXPORT_PINS], check=True)
    return py, time.perf_counter() - t0


def jpeg_folder(py: Path, out: Path) -> Path:
    """ultralytics' two photographs and six crops and flips of them."""
    from PIL import Image, ImageOps
    assets = subprocess.run([str(py), "-c", "import ultralytics, os; print(os.path.join(os.path.dirname("
                             "ultralytics.__file__), 'assets'))"], capture_output=True, text=True, check=True)
    src = Path(assets.stdout.strip().splitlines()[-1])
    out.mkdir(parents=True, exist_ok=True)
    for photo in sorted(src.glob("*.jpg")):
        img = Image.open(photo).convert("RGB")
        img.save(out / photo.name, quality=92)
        w, h = img.size
        img.crop((0, 0, w * 2 // 3, h * 2 // 3)).save(out / f"{photo.stem}_crop.jpg", quality=90)
        ImageOps.mirror(img).save(out / f"{photo.stem}_mirror.jpg", quality=90)
        img.resize((w // 2, h // 2)).rotate(8, expand=True, fillcolor=(114, 114, 114)).save(
            out / f"{photo.stem}_small.jpg", quality=85)
    return out


def lines_of(kind: str, output: str) -> list[str]:
    return sorted({line.strip() for line in output.splitlines() if line.strip().startswith(kind)})


def opset_of(path: Path) -> int | None:
    import onnx
    model = onnx.load(str(path), load_external_data=False)
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, default=ROOT / "build" / "user_exports")
    ap.add_argument("--export-venv", type=Path, default=ROOT / ".exports-venv")
    ap.add_argument("--only", nargs="*", default=None)
    args = ap.parse_args()
    py, setup_s = export_env(args.export_venv)
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    jpegs = jpeg_folder(py, work / "jpegs")
    if setup_s:
        print(f"export environment made in {setup_s:.0f} s: pip install {' '.join(EXPORT_PINS)}")
    rows, notes = [], []
    for case in CASES:
        if args.only and case.name not in args.only:
            continue
        folder = work / case.name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        print(f"== {case.name}", flush=True)
        export = sh([a.format(py=py, bin=py.parent) for a in case.export], folder)
        model = folder / case.onnx
        steps = [export]
        if export.code == 0 and model.exists():
            steps.append(sh([str(BIN / "partition"), case.onnx, "--calibrate", str(jpegs), "-o", "build",
                             *case.partition_args], folder))
        if len(steps) == 2 and steps[1].code == 0:
            steps.append(sh([str(BIN / "fpga-run"), "run", "build", "--source", str(jpegs), "--backend",
                             "reference", *case.run_args], folder))
        for s in steps:
            print(f"  $ {' '.join(s.argv[:6])}{' ...' if len(s.argv) > 6 else ''}  -> exit {s.code}, "
                  f"{s.seconds:.1f} s", flush=True)
        ours = "\n".join(s.output for s in steps[1:])
        errors = lines_of("error:", ours) + lines_of("Traceback", "\n".join(s.output for s in steps))
        warnings = lines_of("warning:", ours)
        subgraphs = re.findall(r"^fpga_\d+\s+fpga", ours, re.M)
        pictures = [line for line in ours.splitlines() if " -> " in line and line.rstrip().endswith(".png")]
        drawn = sum(1 for p in (folder / "build" / "run").glob("frame*_*.png")) if len(steps) == 3 else 0
        said = re.search(r"pre-processing: (.*)", ours)
        rows.append([case.name, str(opset_of(model)) if model.exists() else "-", str(len(steps)),
                     *(f"{s.seconds:.1f}" for s in steps), *("-" for _ in range(3 - len(steps))),
                     str(len(subgraphs)), f"{drawn} of {len(list(jpegs.glob('*.jpg')))}",
                     str(len(errors)), str(len(warnings)),
                     "yes" if all(s.code == 0 for s in steps) and len(steps) == 3 else "NO"])
        notes.append((case, said.group(1) if said else "-", errors, warnings, pictures[:2]))
    header = ["model", "opset", "commands typed", "export s", "partition s", "fpga-run run s", "FPGA subgraphs",
              "pictures drawn", "errors", "warnings", "export to pictures, no traceback"]
    print("\n| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    for r in rows:
        print("| " + " | ".join(r) + " |")
    for case, pre, errors, warnings, pictures in notes:
        print(f"\n{case.name}: pre-processing {pre}")
        if case.why_args:
            print(f"  typed beyond the defaults: {' '.join(case.partition_args + case.run_args)} ({case.why_args})")
        for line in errors:
            print(f"  {line}")
        for line in warnings:
            print(f"  {line[:160]}{'...' if len(line) > 160 else ''}")
        for line in pictures:
            print(f"  {line.replace(str(work) + '/', '')}")


if __name__ == "__main__":
    main()
