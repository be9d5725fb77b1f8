"""Where a build's int8 calibration comes from: a table of an earlier build, a folder (.npy arrays, or pictures
through the build's pre-processing, as `fpga-run run --image` feeds them), or seeded random frames (testing)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from fpga_runtime.checking.frames import random_frame
from fpga_runtime.plan import Plan, TensorSpec
from fpga_runtime.preprocess import PICTURE_SUFFIXES, ImageError, Preprocess, load_picture, picture_fitting
from partitioner.engine.calibration import Calibration
from partitioner.errors import ModelError


def _picture(path: Path, spec: TensorSpec, preprocess: Preprocess | None, option: str) -> np.ndarray:
    """An image fitted as `fpga-run run --image` fits it (`picture_fitting`): through the build's pre-processing,
    or, for a uint8 NHWC frame input, as the frame itself."""
    try:
        preprocess = picture_fitting(spec, preprocess)
    except ImageError:
        raise ModelError(f"{option} {path.name}: pictures feed only a uint8 [N, H, W, 3] input or a model with "
                         f"--preprocess; {spec.name!r} is {spec.dtype} {spec.shape} (or give .npy files)") from None
    try:
        return load_picture(path, spec, preprocess)[0]
    except ImageError as exc:
        raise ModelError(f"{path.name}: {exc}") from None


def load_frames(folder: Path, inputs: list[TensorSpec], preprocess: Preprocess | None = None,
                option: str = "--calibrate") -> list[dict[str, np.ndarray]]:
    """Every .npy array and image of `folder` as a frame; images through the build's `preprocess` (a float
    model's) or, without one, as the uint8 frame itself. `option` names the folder in errors."""
    if not folder.is_dir():
        raise ModelError(f"{option} {folder}: not a folder")
    if len(inputs) != 1:
        raise ModelError(f"{option} folders serve single-input models; this model has {len(inputs)} inputs")
    spec = inputs[0]
    frames = []
    for path in sorted(folder.iterdir()):
        if path.suffix == ".npy":
            x = np.load(path, allow_pickle=False)
            if list(x.shape) != list(spec.shape) or x.dtype.name != spec.dtype:
                raise ModelError(f"{path.name}: {x.dtype} {list(x.shape)}, the input {spec.name!r} is "
                                 f"{spec.dtype} {spec.shape}")
            frames.append({spec.name: x})
        elif path.suffix.lower() in PICTURE_SUFFIXES:
            frames.append({spec.name: _picture(path, spec, preprocess, option)})
    if not frames:
        raise ModelError(f"{option} {folder}: no .npy or image files")
    return frames


def seeded_frame(plan: Plan, seed: int, given: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """random_frame, with a dynamic model input reported as the user's problem (exit 2), not a crash."""
    try:
        return random_frame(plan, seed, given)
    except ValueError as exc:
        raise ModelError(f"{exc} (or give this input with --input NAME=FILE.npy)") from None


def choose_calibration(plan: Plan, table: Path | None, folder: Path | None, count: int, method: str, seed: int,
                       preprocess: Preprocess | None, warnings: list[str]) -> Calibration:
    """The table if given, else the folder's frames, else `count` seeded random frames (with a warning)."""
    if table is not None:
        return Calibration.from_table(table)
    if folder is not None:
        frames = load_frames(folder, plan.inputs, preprocess)
        if frames:
            return Calibration(f"{len(frames)} frames from {folder}", frames=frames, method=method)
    warnings.append(f"no calibration data: int8 scales come from {count} seeded random inputs; fine for testing, "
                    "not for accuracy (use --calibrate DIR)")
    frames = [seeded_frame(plan, seed + i) for i in range(count)]
    return Calibration(f"{len(frames)} seeded random frames (testing only)", frames=frames, method=method)


ACCURACY_FRAMES = 4     # calibration frames the int8 report pools, where no --input is given


def accuracy_frames(plan: Plan, seed: int, given: dict[str, np.ndarray], folder: Path | None,
                    calibration: Calibration | None, held_out: Path | None = None,
                    preprocess: Preprocess | None = None) -> tuple[list[dict[str, np.ndarray]], str]:
    """The frames int8 is measured on, and what they are: every frame of --accuracy-dir (held out: what a
    detector's F1 needs, many frames of its own domain); else --input; else, with --calibrate DIR, the first few
    calibration frames (in-sample, but in the model's input domain: a random normal frame goes where no picture
    goes, and an input calibrated on pictures clips its negative half; several, because one frame's detections
    are few); else a seeded random one."""
    if held_out is not None:
        frames = load_frames(held_out, plan.inputs, preprocess, "--accuracy-dir")
        return frames, f"{len(frames)} held-out frame(s) of {held_out} (the worst cosine, detections pooled)"
    if given:
        return [seeded_frame(plan, seed + 1000, given)], "the --input frame"
    if folder is not None and calibration is not None and calibration.frames:
        frames = [dict(f) for f in calibration.frames[:ACCURACY_FRAMES]]
        return frames, (f"{len(frames)} calibration frame(s) (in-sample; the worst cosine, detections pooled; "
                        "--accuracy-dir gives held-out ones)")
    return [seeded_frame(plan, seed + 1000)], "a seeded random frame (--accuracy-dir or --input gives real ones)"
