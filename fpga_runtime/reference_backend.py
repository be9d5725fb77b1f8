"""`reference` backend: the numpy engine, constants shared, one activation region per frame slot, compute
units as threads."""
from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path

import numpy as np

from .backends import Backend, ThreadedUnits, timed
from .engine_image import EngineImage, Program, TensorView
from .reference import ReferenceEngine


class ReferenceBackend(Backend):
    name = "reference"

    def __init__(self, image: EngineImage, folder: Path, compute_units: int | None = None, slots: int = 1):
        super().__init__(image, folder, compute_units, slots)
        self.const = image.load_constants(folder)
        self.acts = [image.fresh_activations() for _ in range(self.slots)]
        self.engine = ReferenceEngine(image.config)
        self.pool = ThreadedUnits(self.units)

    def write(self, view: TensorView, x: np.ndarray, slot: int = 0) -> None:
        view.write(self.acts[slot], x)

    def read(self, view: TensorView, slot: int = 0) -> np.ndarray:
        return view.read(self.acts[slot])

    def start(self, program: Program, unit: int = 0, slot: int = 0) -> Future:
        return self.pool.submit(unit, timed, program, unit, self.engine.run, self.acts[slot], self.const,
                                program.addr, program.layers)

    def close(self) -> None:
        self.pool.close()
