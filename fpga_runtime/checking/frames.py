"""Inputs for runs without user data (seeded, reproducible) and the float original's outputs to compare with."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from fpga_runtime.onnx_chain import cpu_session
from fpga_runtime.plan import Plan


def pinned_shape_hint(shape) -> str:
    """What to pass to --input-shape for a dynamic shape: its static sizes, the batch at 1, the other free sizes
    by their names, e.g. 1x3xHEIGHTxWIDTH."""
    return "x".join(str(d) if isinstance(d, int) and d > 0 else ("1" if i == 0 else str(d or "N").upper())
                    for i, d in enumerate(shape or []))


def random_frame(plan: Plan, seed: int = 0, given: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """uint8 inputs uniform over 0..255, other integers small, floats standard normal."""
    rng = np.random.default_rng(seed)
    feeds = dict(given or {})
    for t in plan.inputs:
        if t.name in feeds:
            continue
        if t.shape is None or any(not isinstance(d, int) for d in t.shape):     # () is a scalar: static
            raise ValueError(f"input {t.name!r} has dynamic shape {t.shape}: pin it with --input-shape "
                             f"{t.name}={pinned_shape_hint(t.shape)} (the free sizes yours)")
        dtype = np.dtype(t.dtype)
        if dtype == np.uint8:
            feeds[t.name] = rng.integers(0, 256, t.shape, dtype=np.uint8)
        elif dtype.kind in "iu":
            feeds[t.name] = rng.integers(0, 4, t.shape).astype(dtype)
        else:
            feeds[t.name] = rng.standard_normal(t.shape).astype(dtype)
    return feeds


def original_outputs(model_path: str | Path, feeds: dict[str, np.ndarray], optimise: bool = True
                     ) -> dict[str, np.ndarray]:
    original = cpu_session(model_path, optimise)
    names = [o.name for o in original.get_outputs()]
    return dict(zip(names, original.run(names, feeds)))
