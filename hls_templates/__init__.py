"""Kernel templates (Vitis HLS C++, SystemVerilog RTL, Tcl) and overlay build scripts; files, not Python strings."""
from pathlib import Path

ROOT = Path(__file__).resolve().parent
ENGINE = ROOT / "engine"
RTL = ROOT / "rtl"
