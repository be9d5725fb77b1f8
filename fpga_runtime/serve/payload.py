"""What POST /predict takes and answers: a JPEG/PNG body (through the build's pre-processing, fitted as
`fpga-run run --image` fits it), a .npy body (the model's single input) or a .npz body (its inputs by name); JSON
of the outputs, and of detections in the picture's pixels where the build's outputs hold detections."""
from __future__ import annotations

import io
import math

import numpy as np

from fpga_runtime.checking.images import PictureDetections
from fpga_runtime.plan import Plan
from fpga_runtime.preprocess import Fit, ImageError, load_picture, picture_input
from fpga_runtime.serve.errors import RequestRefused

MAX_BODY_BYTES = 64 << 20
NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGIC = b"PK\x03\x04"


def decode(body: bytes, plan: Plan, resize: str = "letterbox") -> tuple[dict[str, np.ndarray], Fit | None]:
    """(feeds, how the picture was fitted, or None for arrays)."""
    if not body:
        raise RequestRefused("an empty body: send a JPEG/PNG picture, a .npy array or a .npz of the inputs")
    if len(body) > MAX_BODY_BYTES:
        raise RequestRefused(f"a body of {len(body):,} bytes; at most {MAX_BODY_BYTES:,}")
    if body.startswith(NPY_MAGIC) or body.startswith(ZIP_MAGIC):
        try:
            loaded = np.load(io.BytesIO(body), allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            raise RequestRefused(f"not a .npy/.npz array numpy reads ({exc})") from None
        if isinstance(loaded, np.ndarray):
            if len(plan.inputs) != 1:
                raise RequestRefused(f"the model has inputs {[t.name for t in plan.inputs]}: send a .npz of them")
            return {plan.inputs[0].name: loaded}, None
        with loaded:
            return {name: loaded[name] for name in loaded.files}, None
    try:
        spec, pre = picture_input(plan, resize)
        tensor, fit, _ = load_picture(io.BytesIO(body), spec, pre, "the body")
    except ImageError as exc:
        raise RequestRefused(str(exc)) from None
    return {spec.name: tensor}, fit


def _tensor(value: np.ndarray) -> dict:
    data = value.tolist()
    if value.dtype.kind == "f" and not np.isfinite(value).all():     # JSON has no NaN: null where not finite
        data = _finite_or_none(data)
    return {"dtype": str(value.dtype), "shape": list(value.shape), "data": data}


def _finite_or_none(x):
    if isinstance(x, list):
        return [_finite_or_none(v) for v in x]
    return x if math.isfinite(x) else None


def encode(outputs: dict[str, np.ndarray], fit: Fit | None, which: str, reader: PictureDetections | None,
           class_names: list[str] | None, thresholds: tuple[float, float, int] = (0.25, 0.7, 300)) -> dict:
    """`which`: "all", "none" or comma-separated output names; `thresholds`: conf, iou, max_det of detections."""
    if which == "none":
        chosen = []
    elif which == "all":
        chosen = list(outputs)
    else:
        chosen = [n.strip() for n in which.split(",") if n.strip()]
        unknown = [n for n in chosen if n not in outputs]
        if unknown:
            raise RequestRefused(f"no output named {unknown}; the outputs are {list(outputs)}")
    body = {"outputs": {n: _tensor(np.asarray(outputs[n])) for n in chosen}}
    if reader is not None and reader.found:
        body["detections"] = reader.of(outputs, fit, class_names, *thresholds)
        body["boxes_in"] = "picture pixels" if fit is not None else "model input pixels"
    return body
