"""Kernel templates (Vitis HLS C++, Tcl) and overlay build scripts; files, not Python strings."""
from pathlib import Path

ROOT = Path(__file__).resolve().parent
ENGINE = ROOT / "engine"
