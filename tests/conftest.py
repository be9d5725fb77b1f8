from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import models  # noqa: E402

# CI explores the same examples every run (a seed derived from each test), so a landing never hangs on a random
# draw; elsewhere each run draws new ones, which is how the property tests find new failures.
settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(scope="session")
def zoo(tmp_path_factory):
    """Build zoo models once per session: zoo(name, size) -> path."""
    folder = tmp_path_factory.mktemp("zoo")
    cache: dict[tuple[str, int | None], Path] = {}

    def get(name: str, size: int | None = None) -> Path:
        key = (name, size)
        if key not in cache:
            path = folder / f"{name}-{size or 'default'}.onnx"
            models.build_to_file(name, path, size)
            cache[key] = path
        return cache[key]

    return get
