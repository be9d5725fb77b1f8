"""ONNX -> CPU/FPGA partitioner: import, fuse, place, carve, write a build folder."""
__version__ = "0.1.0"
