"""Image-like frames and the corpus record, shared by the exporters (torch and Paddle): no framework imports."""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Callable

import numpy as np


def scene(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """An RGB picture of shaded background, rectangles, ellipses and stripes: smooth regions and edges, as in
    photographs (noise would calibrate the int8 ranges to nothing real)."""
    from PIL import Image, ImageDraw, ImageFilter
    top, bottom = rng.integers(0, 256, 3), rng.integers(0, 256, 3)
    ramp = np.linspace(0, 1, h)[:, None, None]
    img = Image.fromarray(np.broadcast_to(top * (1 - ramp) + bottom * ramp, (h, w, 3)).astype(np.uint8))
    pen = ImageDraw.Draw(img)
    for _ in range(int(rng.integers(3, 9))):
        x0, y0 = int(rng.integers(0, w - 8)), int(rng.integers(0, h - 8))
        x1, y1 = int(rng.integers(x0 + 4, w)), int(rng.integers(y0 + 4, h))
        colour = tuple(int(c) for c in rng.integers(0, 256, 3))
        if rng.random() < 0.5:
            pen.rectangle([x0, y0, x1, y1], fill=colour)
        else:
            pen.ellipse([x0, y0, x1, y1], fill=colour)
    for _ in range(int(rng.integers(0, 4))):
        y = int(rng.integers(0, h))
        pen.line([0, y, w, int(rng.integers(0, h))], fill=tuple(int(c) for c in rng.integers(0, 256, 3)),
                 width=int(rng.integers(1, 6)))
    img = img.filter(ImageFilter.GaussianBlur(float(rng.uniform(0, 1.2))))
    noisy = np.asarray(img, np.float32) + rng.normal(0, 4, (h, w, 3))
    return np.clip(noisy, 0, 255).astype(np.uint8)


def frames_nchw(count: int, h: int, w: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [scene(rng, h, w).transpose(2, 0, 1)[None].astype(np.float32) / 255.0 for _ in range(count)]


def write_entry(out: Path, record: dict, name: str, info: dict) -> None:
    """Calibration (8) and held-out frames in the model's input format, and its record entry. The held-out frames
    are 2 scenes, or the exporter's own (`info["held_out"]`: NCHW frames of a validation set the model was not
    trained on, where it has one)."""
    shape = info["shape"]
    nhwc = info.get("layout") == "nhwc"
    h, w = (shape[1], shape[2]) if nhwc else (shape[2], shape[3])
    held_out = info.pop("held_out", None)
    for part, frames in (("calibrate", frames_nchw(8, h, w, 100)),
                         ("eval", held_out if held_out is not None else frames_nchw(2, h, w, 200))):
        folder = out / "frames" / name / part
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("frame*.npy"):
            old.unlink()
        for i, f in enumerate(frames):
            f = f.transpose(0, 2, 3, 1) if nhwc else f
            np.save(folder / f"frame{i}.npy", f.astype(info.get("dtype", "float32")))
    record[name] = info
    print(f"  ok: {info['exporter']}", flush=True)


def export_all(models: dict[str, Callable[[Path], dict]], description: str) -> None:
    """The exporters' command line: OUT_DIR [--only NAME ...]; each model exported alone (one failing does not
    stop the others) and recorded in OUT_DIR/corpus.json beside what is there."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("out", type=Path)
    ap.add_argument("--only", nargs="*", default=None)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    record_path = args.out / "corpus.json"
    record = json.loads(record_path.read_text()) if record_path.exists() else {}
    for name, make in models.items():
        if args.only and name not in args.only:
            continue
        print(f"exporting {name} ...", flush=True)
        try:
            info = make(args.out)
        except Exception as exc:          # noqa: BLE001 - one architecture failing must not stop the others
            print(f"  failed: {type(exc).__name__}: {exc}", flush=True)
            continue
        write_entry(args.out, record, name, info)
    record_path.write_text(json.dumps(record, indent=1) + "\n")
