"""Kernel templates (Vitis HLS C++, Verilog) and overlay build scripts; files, not Python strings."""
