"""`reference` backend: the numpy engine (the golden model) on host memory."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from fpga_runtime.backends import HostMemoryBackend
from fpga_runtime.engine_image import EngineImage
from fpga_runtime.reference import ReferenceEngine


class ReferenceBackend(HostMemoryBackend):
    name = "reference"

    def __init__(self, image: EngineImage, folder: Path, compute_units: int | None = None, slots: int = 1):
        super().__init__(image, folder, compute_units, slots)
        self.engine = ReferenceEngine(image.config)

    def run(self, act: np.ndarray, const: np.ndarray, program_addr: int, layers: int) -> int:
        return self.engine.run(act, const, program_addr, layers)
