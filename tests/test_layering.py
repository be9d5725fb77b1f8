"""Layering: the runtime runs on a board without the partitioner, so it must never import it."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _imports(package: str) -> set[str]:
    found = set()
    for path in (ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module.split(".")[0])
    return found


def test_runtime_never_imports_partitioner_or_models():
    assert not {"partitioner", "models"} & _imports("fpga_runtime")


def test_partitioner_does_not_import_models():
    assert "models" not in _imports("partitioner")
