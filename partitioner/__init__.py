"""ONNX -> CPU/FPGA partitioner: import, fuse, place, carve, write a build folder."""
from fpga_runtime import __version__  # noqa: F401  (one version for the package: setup.cfg reads it)
