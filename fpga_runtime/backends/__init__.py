"""Backends behind one small interface, chosen by name and imported lazily: a missing optional tool
(Verilator, g++, pynq on a board) never breaks `import fpga_runtime`.

A backend owns the engine's memory (a board's DDR, or numpy arrays standing in for it) and its compute units.
Memory is one constant region and `slots` activation regions (one per frame in flight). The host writes and
reads tensors through views in a slot, starts a program on a compute unit for a slot, and waits.
"""
from __future__ import annotations

import abc
import importlib
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fpga_runtime import engine_parts
from fpga_runtime.abi import Flag
from fpga_runtime.engine_image import EngineImage, Program, TensorView

BACKENDS = {
    "reference": "fpga_runtime.backends.reference:ReferenceBackend",
    "csim": "fpga_runtime.backends.csim:CsimBackend",
    "verilator": "fpga_runtime.backends.verilator:VerilatorBackend",
    "pynq": "fpga_runtime.backends.pynq_board:PynqBackend",
}


STATS_WINDOW = 4096        # per-run records (statistics, cycles, counters) a long stream keeps: the most recent


class BackendError(Exception):
    pass


@dataclass
class RunStats:
    program: str
    unit: int
    seconds: float
    cycles: int


class Backend(abc.ABC):
    name = "abstract"
    rtl = False            # runs the RTL engine: CONV layers flagged WINOGRAD need its Winograd unit

    def __init__(self, image: EngineImage, folder: Path, compute_units: int | None = None, slots: int = 1):
        self.image = image
        self.folder = folder
        built = image.config.compute_units
        if compute_units is not None and compute_units > built:
            raise BackendError(f"{compute_units} compute units asked for, but the build's overlay has {built} "
                               "(partition --compute-units N makes a build with more)")
        self.units = compute_units or built
        self.slots = slots
        self.constants = image.load_constants(folder)     # checked (program_check.py) before any engine exists
        if self.rtl:
            self._refuse_missing_parts()

    def _refuse_missing_parts(self) -> None:
        """A layer the build's RTL engine lacks the part for (engine_parts.py) is refused before anything runs."""
        for program, i, label, d in self.image.layers(self.constants):
            problem = engine_parts.missing_part(d, self.image.config)
            if problem:
                what = "a Winograd layer (partition --winograd)" if d.flags & Flag.WINOGRAD else "a layer"
                raise BackendError(
                    f"program {program!r}, layer {i} ({label}): {what} the RTL engine the {self.name} backend "
                    f"runs cannot take: {problem}; run this build with --backend reference or csim, or partition "
                    "the model again")

    @abc.abstractmethod
    def write(self, view: TensorView, x: np.ndarray, slot: int = 0) -> None: ...

    @abc.abstractmethod
    def read(self, view: TensorView, slot: int = 0) -> np.ndarray: ...

    @abc.abstractmethod
    def start(self, program: Program, unit: int = 0, slot: int = 0) -> Future: ...

    def wait(self, run: Future, timeout: float | None = None) -> RunStats:
        try:
            return run.result(timeout=timeout)
        except FutureTimeout:
            raise BackendError(f"engine run did not finish within {timeout} s") from None

    def close(self) -> None:  # noqa: B027 (most backends hold nothing to release)
        pass


class HostMemoryBackend(Backend):
    """A backend whose engine memory is numpy arrays on the host (reference, C-simulation, RTL simulation):
    one shared constant region, one activation region per slot, compute units as threads. Subclasses give
    `run(act, const, program_addr, layers) -> cycles`."""

    def __init__(self, image: EngineImage, folder: Path, compute_units: int | None = None, slots: int = 1):
        super().__init__(image, folder, compute_units, slots)
        self.const = self.constants
        self.acts = [image.fresh_activations() for _ in range(self.slots)]
        self.pool = ThreadedUnits(self.units)

    @abc.abstractmethod
    def run(self, act: np.ndarray, const: np.ndarray, program_addr: int, layers: int) -> int: ...

    def write(self, view: TensorView, x: np.ndarray, slot: int = 0) -> None:
        view.write(self.acts[slot], x)

    def read(self, view: TensorView, slot: int = 0) -> np.ndarray:
        return view.read(self.acts[slot])

    def start(self, program: Program, unit: int = 0, slot: int = 0) -> Future:
        return self.pool.submit(unit, timed, program, unit, self.run, self.acts[slot], self.const, program.addr,
                                program.layers)

    def close(self) -> None:
        self.pool.close()


class ThreadedUnits:
    """Compute units as single-worker executors: one program at a time per unit, units run concurrently."""

    def __init__(self, count: int):
        self.pools = [ThreadPoolExecutor(1, thread_name_prefix=f"cu{i}") for i in range(count)]
        self.lock = threading.Lock()

    def submit(self, unit: int, fn, *args) -> Future:
        if not 0 <= unit < len(self.pools):
            raise BackendError(f"compute unit {unit} does not exist (the build has {len(self.pools)})")
        return self.pools[unit].submit(fn, *args)

    def close(self) -> None:
        for p in self.pools:
            p.shutdown(wait=True)


def timed(program: Program, unit: int, fn, *args) -> RunStats:
    t0 = time.perf_counter()
    cycles = fn(*args)
    return RunStats(program.subgraph, unit, time.perf_counter() - t0, cycles)


def load_backend(name: str, image: EngineImage, folder: Path, compute_units: int | None = None,
                 slots: int = 1, **options) -> Backend:
    """`options` go to the backend's constructor (the pynq backend's `simulate`, `overlay`, `timeout_s`)."""
    if name not in BACKENDS:
        raise BackendError(f"unknown backend {name!r}; available: {', '.join(BACKENDS)}")
    module, _, cls = BACKENDS[name].partition(":")
    try:
        backend_cls = getattr(importlib.import_module(module), cls)
    except ImportError as exc:
        raise BackendError(f"backend {name!r} cannot be loaded: {exc}") from None
    return backend_cls(image, folder, compute_units, slots, **options)
