"""Name sanitising at the IR boundary.

Model names end up in generated C++, Verilog and Tcl, so inside the IR every node and tensor carries a
C-identifier-safe name; the original ONNX name is kept beside it for reports and for the plan.
"""
from __future__ import annotations

import re

_UNSAFE = re.compile(r"[^A-Za-z0-9_]")


def safe_identifier(name: str) -> str:
    """Map any string to `[A-Za-z_][A-Za-z0-9_]*` (not yet unique)."""
    out = _UNSAFE.sub("_", name).strip("_")
    out = re.sub(r"_+", "_", out)
    if not out:
        out = "t"
    if out[0].isdigit():
        out = "n" + out
    return out[:80]


class NameTable:
    """Hands out unique safe names; the same original always maps to the same safe name."""

    def __init__(self) -> None:
        self._by_original: dict[str, str] = {}
        self._taken: set[str] = set()

    def __contains__(self, original: str) -> bool:
        return original in self._by_original

    def _claim(self, text: str) -> str:
        base = safe_identifier(text)
        name, i = base, 1
        while name in self._taken:
            name = f"{base}_{i}"
            i += 1
        self._taken.add(name)
        return name

    def safe(self, original: str) -> str:
        if original not in self._by_original:
            self._by_original[original] = self._claim(original)
            self._taken.add(original)   # a fresh name must never equal an original ONNX name either
        return self._by_original[original]

    def fresh(self, hint: str) -> str:
        """A new unique name that no original maps to (for tensors the passes create)."""
        return self._claim(hint)
