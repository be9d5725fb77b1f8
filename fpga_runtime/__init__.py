"""Runtime side: what a board needs to run a build directory (plan reader, board catalog, executors).

This package never imports `partitioner`: on the board only the runtime, onnxruntime and pynq are installed.
`Session` and `predict` are the public entry points (as onnxruntime exports `InferenceSession`); they load on
first use so that `import fpga_runtime.abi` stays light.
"""
from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["Session", "predict", "Prediction"]

_EXPORTS = {"Session": "run.session", "predict": "prediction.virtual_time", "Prediction": "prediction.virtual_time"}


def __getattr__(name: str):
    if name in _EXPORTS:
        import importlib
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
