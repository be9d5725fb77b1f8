"""Calibration frames from a folder: .npy arrays, or images (PNG/JPEG, with Pillow) for models whose input is
a uint8 NHWC frame, which then pass through the model's own pre-processing like any input."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from fpga_runtime.plan import TensorSpec
from fpga_runtime.preprocess import ImageError, Preprocess, load_picture
from partitioner.errors import ModelError

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp"}


def _image(path: Path, spec: TensorSpec) -> np.ndarray:
    shape = spec.shape
    if spec.dtype != "uint8" or len(shape) != 4 or shape[3] != 3:
        raise ModelError(f"{path.name}: images calibrate only a uint8 [N, H, W, 3] input; {spec.name!r} is "
                         f"{spec.dtype} {shape}")
    try:
        from PIL import Image
    except ImportError:
        raise ModelError("reading images needs Pillow: pip install pillow (or give .npy files)") from None
    img = Image.open(path).convert("RGB").resize((shape[2], shape[1]))
    return np.broadcast_to(np.asarray(img, np.uint8)[None], shape).copy()


def _preprocessed(path: Path, spec: TensorSpec, preprocess: Preprocess) -> np.ndarray:
    try:
        return load_picture(path, spec, preprocess)[0]
    except ImageError as exc:
        raise ModelError(f"{path.name}: {exc}") from None


def load_frames(folder: Path, inputs: list[TensorSpec], preprocess: Preprocess | None = None
                ) -> list[dict[str, np.ndarray]]:
    """Every .npy array and image of `folder` as a frame; images through the build's `preprocess` (a float
    model's) or, without one, as the uint8 frame itself."""
    if not folder.is_dir():
        raise ModelError(f"--calibrate {folder}: not a folder")
    if len(inputs) != 1:
        raise ModelError("--calibrate folders serve single-input models; this model has "
                         f"{len(inputs)} inputs")
    spec = inputs[0]
    frames = []
    for path in sorted(folder.iterdir()):
        if path.suffix == ".npy":
            x = np.load(path, allow_pickle=False)
            if list(x.shape) != list(spec.shape) or x.dtype.name != spec.dtype:
                raise ModelError(f"{path.name}: {x.dtype} {list(x.shape)}, the input {spec.name!r} is "
                                 f"{spec.dtype} {spec.shape}")
            frames.append({spec.name: x})
        elif path.suffix.lower() in IMAGE_SUFFIXES:
            if preprocess is not None and preprocess.preset != "none":
                frames.append({spec.name: _preprocessed(path, spec, preprocess)})
            else:
                frames.append({spec.name: _image(path, spec)})
    if not frames:
        raise ModelError(f"--calibrate {folder}: no .npy or image files")
    return frames
