"""`reference` backend: the numpy engine on a numpy memory image, compute units as threads."""
from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path

import numpy as np

from .backends import Backend, ThreadedUnits, timed
from .engine_image import EngineImage, Program, TensorView
from .reference import ReferenceEngine


class ReferenceBackend(Backend):
    name = "reference"

    def __init__(self, image: EngineImage, folder: Path, compute_units: int | None = None):
        super().__init__(image, folder, compute_units)
        self.memory = image.fresh_memory(folder)
        self.engine = ReferenceEngine(image.config)
        self.pool = ThreadedUnits(self.units)

    def write(self, view: TensorView, x: np.ndarray) -> None:
        view.write(self.memory, x)

    def read(self, view: TensorView) -> np.ndarray:
        return view.read(self.memory)

    def start(self, program: Program, unit: int = 0) -> Future:
        return self.pool.submit(unit, timed, program, unit, self.engine.run, self.memory, program.addr,
                                program.layers)

    def close(self) -> None:
        self.pool.close()
