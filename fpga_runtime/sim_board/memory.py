"""The simulated board's DDR as PYNQ's `allocate` sees it: physically contiguous buffers at bus addresses, and
a CPU cache that is not coherent with the fabric. Each buffer has the CPU's copy (the `PynqBuffer` the host
writes) and the DDR's copy (what the engine reads and writes); `flush` and `invalidate` move bytes between
them, so a driver that forgets either gets stale data here as it would on the board."""
from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

PAGE = 4096
DDR_BASE = 0x1000_0000          # inside the fabric's view of PS DDR on Zynq-7000 and Zynq UltraScale+


class SimulatedBoardError(RuntimeError):
    """Something a real board would answer with a bus error or a hang."""


@dataclass
class Allocation:
    base: int
    host: np.ndarray            # uint8 view of the CPU's copy
    ddr: np.ndarray             # uint8, what the fabric sees


class SimulatedMemory:
    def __init__(self, device, limit: int = 0x6000_0000):
        self.device = device
        self.allocations: dict[int, Allocation] = {}
        self.next = DDR_BASE
        self.limit = DDR_BASE + limit
        self.lock = threading.Lock()

    def allocate(self, shape, dtype, **kwargs):
        from pynq.buffer import PynqBuffer
        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        span = max(PAGE, -(-nbytes // PAGE) * PAGE)
        with self.lock:
            if self.next + span > self.limit:
                raise MemoryError(f"simulated board: out of contiguous memory ({nbytes} bytes asked)")
            base, self.next = self.next, self.next + span
            host = np.zeros(span, np.uint8)
            bo = len(self.allocations)
            self.allocations[bo] = Allocation(base, host, np.zeros(span, np.uint8))
        return PynqBuffer(shape, dtype, buffer=host.data, device=self.device, device_address=base, bo=bo,
                          coherent=False)

    def flush(self, bo: int, offset: int, size: int) -> None:
        a = self.allocations[bo]
        a.ddr[offset:offset + size] = a.host[offset:offset + size]

    def invalidate(self, bo: int, offset: int, size: int) -> None:
        a = self.allocations[bo]
        a.host[offset:offset + size] = a.ddr[offset:offset + size]

    def regions(self) -> list[tuple[int, np.ndarray]]:
        """Every buffer's DDR copy at its bus address: what the engines' masters can reach."""
        with self.lock:
            return [(a.base, a.ddr) for a in self.allocations.values()]

    def find(self, addr: int, size: int = 1) -> tuple[Allocation, int]:
        """The buffer holding [addr, addr + size) and the offset in it."""
        for a in self.allocations.values():
            if a.base <= addr and addr + size <= a.base + a.ddr.size:
                return a, addr - a.base
        raise SimulatedBoardError(f"address {addr:#x} (+{size}) is in no buffer allocated on the simulated board")
