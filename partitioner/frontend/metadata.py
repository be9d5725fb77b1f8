"""What a model's metadata says beyond its graph (ultralytics writes its class names there)."""
from __future__ import annotations

import ast

from fpga_runtime.class_names import names_by_id

METADATA_CHARS = 1 << 20


def class_names(metadata: dict[str, str]) -> list[str] | None:
    """Class names by id from ultralytics' `names` metadata ("{0: 'person', 1: 'bicycle', ...}"), read as a
    literal (never evaluated), or None."""
    text = metadata.get("names", "")
    if len(text) > METADATA_CHARS:
        return None
    try:
        names = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return names_by_id(names)
