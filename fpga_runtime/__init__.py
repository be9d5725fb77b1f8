"""Runtime side: what a board needs to run a build directory (plan reader, board catalog, executors).

This package never imports `partitioner`: on the board only the runtime, onnxruntime and pynq are installed.
"""
