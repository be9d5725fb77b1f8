"""What a model's metadata says beyond its graph (ultralytics writes its class names there)."""
from __future__ import annotations

import ast


def class_names(metadata: dict[str, str]) -> list[str] | None:
    """Class names by id from ultralytics' `names` metadata ("{0: 'person', 1: 'bicycle', ...}"), read as a
    literal (never evaluated), or None."""
    try:
        names = ast.literal_eval(metadata.get("names", ""))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if isinstance(names, dict) and names and all(isinstance(k, int) for k in names):
        return [str(names.get(i, i)) for i in range(max(names) + 1)]
    if isinstance(names, (list, tuple)) and all(isinstance(v, str) for v in names):
        return list(names)
    return None
