"""Bump allocation of the engine's two memory regions: constants (shared by every frame in flight) and
activations (one copy per frame in flight). Each region's addresses are offsets from its base register."""
from __future__ import annotations

import numpy as np

from fpga_runtime.abi import ALIGN


def _aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


class ConstArena:
    """Constant bytes (weights, biases, requantisation and lookup tables, programs), 64-byte aligned."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.size = 0

    def put(self, data: bytes | np.ndarray) -> int:
        raw = data.tobytes() if isinstance(data, np.ndarray) else bytes(data)
        addr = self.size
        pad = _aligned(len(raw)) - len(raw)
        self.chunks.append(raw + b"\0" * pad)
        self.size += len(raw) + pad
        return addr

    def image(self) -> bytes:
        return b"".join(self.chunks)


class ActivationArena:
    """Activation buffers. No reuse between tensors yet (a liveness-based allocator can come later)."""

    def __init__(self) -> None:
        self.end = 0

    def alloc(self, nbytes: int) -> int:
        addr = self.end
        self.end += _aligned(nbytes)
        return addr
