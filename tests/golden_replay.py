"""Load a golden case file and replay it on an engine: shared by every backend's tests."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np

from fpga_runtime.abi import DESCRIPTOR_SIZE, HEADER_SIZE, EngineConfig, unpack_program
from fpga_runtime.engine_image import TensorView

GOLDEN = Path(__file__).resolve().parent / "golden"
CASE_FILES = sorted(GOLDEN.glob("*.npz"))
WINOGRAD_FILES = sorted((GOLDEN / "winograd").glob("*.npz"))    # only the reference and csim run them (yet)


class Case:
    def __init__(self, path: Path):
        data = np.load(path)
        self.name = path.stem
        self.const = data["const"]
        self.act_in = data["act_in"]
        self.act_out = data["act_out"]
        self.programs = [(int(a), int(n)) for a, n in data["programs"]]
        self.config = EngineConfig(**json.loads(str(data["config"])))
        self.out_view = TensorView(**json.loads(str(data["out_view"])))
        self.float_out = data["float_out"]
        self.calibration = json.loads(str(data["calibration"]))   # the ranges and bounds it was compiled with

    @property
    def full_config(self) -> EngineConfig:
        """Its engine with every optional part (engine_parts.py): one engine that runs every case (a case stores
        the engine its build trimmed to its own layers)."""
        return replace(self.config, lane_products=True, residual_stage=True)

    def descriptors(self):
        return [d for addr, n in self.programs
                for d in unpack_program(self.const[addr:addr + HEADER_SIZE + n * DESCRIPTOR_SIZE].tobytes())]

    def replay(self, run) -> np.ndarray:
        """`run(act, const, addr, layers)` executes one program in place; returns the final activation region."""
        act = self.act_in.copy()
        for addr, layers in self.programs:
            run(act, self.const, addr, layers)
        return act


def layer_cycles_on(engine, cases: list[Case]):
    """Every case's programs run on an RTL engine (fpga_runtime.rtl_sim): per layer (case, descriptor, RTL cycles,
    the cycle model's)."""
    from fpga_runtime.cycle_model import LayerShape, layer_cycles
    from fpga_runtime.rtl_sim.single_layer import program_descriptors
    for case in cases:
        act = case.act_in.copy()
        for addr, n in case.programs:
            result = engine.run(act, case.const, addr, n)
            for measured, d in zip(result.layers, program_descriptors(case.const, addr, n)):
                yield case, d, measured.cycles, layer_cycles(LayerShape.of(d, case.config), case.config)
