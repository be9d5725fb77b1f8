"""What `partition` compiles for the FPGA subgraphs of a build (`<build>/fpga/`), and how the host moves
tensors in and out of the engine's memory.

- `memory.bin`: the constant region (weights, biases, requantisation tables, lookup tables, programs);
  the activation region (`act_bytes`, zero-initialised) is separate, one per frame in flight.
- `engine.json`: the engine parameters, the programs (one per FPGA subgraph) and a view of every tensor that
  crosses between the CPU and the engine, and of every layer's output (to compare layers with float).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from fpga_runtime.abi import ABI_VERSION, DESCRIPTOR_SIZE, HEADER_SIZE, Descriptor, EngineConfig, unpack_program

ENGINE_DIR = "fpga"


@dataclass
class TensorView:
    """An int8 NHWC tensor in engine memory: element (n, y, x, channel k) lives at
    addr + ((n * h + y) * w + x) * c_stride + c_offset + channel_map[k]; it stands for (q - zero) * scale."""

    name: str                  # ONNX tensor name
    addr: int
    n: int
    h: int
    w: int
    c_stride: int
    c_offset: int
    channel_map: list[int]     # physical channel of each logical channel (gaps are padding)
    scale: float
    layout: str                # "nchw" (rank-4 tensor) or "nc" (rank-2, as N x 1 x 1 x C)
    zero: int = 0              # zero point: the code of 0.0 (asymmetric tensors, e.g. a ReLU's output)

    @property
    def phys_c(self) -> int:
        return max(self.channel_map) + 1 if self.channel_map else 0

    def quantize(self, x: np.ndarray) -> np.ndarray:
        """float -> int8 in NHWC with the view's channels: q = clip(rint(x / scale) + zero, -128, 127); NaN is
        the zero point on every machine (a cast of NaN to int8 is undefined and differs between x86 and Arm)."""
        nhwc = np.transpose(x, (0, 2, 3, 1)) if self.layout == "nchw" else x.reshape(self.n, 1, 1, -1)
        q = np.rint(nhwc / self.scale)
        if np.isnan(q.sum()):                  # one reduction, no mask, unless there is a NaN (or +inf + -inf)
            q[np.isnan(q)] = 0.0
        return np.clip(q + self.zero, -128, 127).astype(np.int8)

    def write(self, memory: np.ndarray, x: np.ndarray) -> None:
        q = self.quantize(x)
        self.region(memory)[..., self.c_offset + np.asarray(self.channel_map)] = q

    @property
    def nbytes(self) -> int:
        """Bytes from addr the tensor spans (with the channels of its neighbours in a shared stride)."""
        return self.n * self.h * self.w * self.c_stride

    def region(self, memory: np.ndarray) -> np.ndarray:
        return memory[self.addr:self.addr + self.nbytes].view(np.int8).reshape(self.n, self.h, self.w, self.c_stride)

    def read_int8(self, memory: np.ndarray) -> np.ndarray:
        return self.region(memory)[..., self.c_offset + np.asarray(self.channel_map)]

    def read(self, memory: np.ndarray) -> np.ndarray:
        q = (self.read_int8(memory).astype(np.float32) - np.float32(self.zero)) * np.float32(self.scale)
        return np.ascontiguousarray(np.transpose(q, (0, 3, 1, 2)) if self.layout == "nchw" else q.reshape(self.n, -1))


@dataclass
class Program:
    subgraph: str
    addr: int
    layers: int
    macs: int
    layer_names: list[str] = field(default_factory=list)     # the ONNX node each descriptor stands for


@dataclass
class EngineImage:
    config: EngineConfig
    const_bytes: int
    act_bytes: int
    programs: dict[str, Program]
    tensors: dict[str, TensorView]
    abi_version: int = ABI_VERSION
    calibration: dict = field(default_factory=dict)
    build_id: str | None = None          # the plan's: a plan and an image of two runs are never mixed
    board: str | None = None             # the board the engine was generated for (memory timing in simulation)

    def save(self, folder: Path, const: bytes) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "memory.bin").write_bytes(const)
        raw = asdict(self)
        (folder / "engine.json").write_text(json.dumps(raw, indent=1) + "\n")

    @classmethod
    def load(cls, folder: Path) -> "EngineImage":
        raw = json.loads((folder / "engine.json").read_text())
        if raw["abi_version"] != ABI_VERSION:
            raise ValueError(f"{folder}: engine ABI v{raw['abi_version']}, this runtime speaks v{ABI_VERSION}")
        return cls(EngineConfig(**raw["config"]), raw["const_bytes"], raw["act_bytes"],
                   {k: Program(**v) for k, v in raw["programs"].items()},
                   {k: TensorView(**v) for k, v in raw["tensors"].items()}, raw["abi_version"],
                   raw.get("calibration", {}), raw.get("build_id"), raw.get("board"))

    def flagged_layers(self, const: np.ndarray, flag: int) -> list[tuple[str, int, str, Descriptor]]:
        """(program, layer index, layer name, descriptor) of every layer whose descriptor has `flag` (an abi.Flag)."""
        out = []
        for p in self.programs.values():
            raw = const[p.addr:p.addr + HEADER_SIZE + p.layers * DESCRIPTOR_SIZE].tobytes()
            for i, d in enumerate(unpack_program(raw)):
                if d.flags & flag:
                    out.append((p.subgraph, i, p.layer_names[i] if i < len(p.layer_names) else f"#{i}", d))
        return out

    def load_constants(self, folder: Path) -> np.ndarray:
        """memory.bin, refused unless it is the size engine.json gives and every program in it is one the engines
        may run (program_check.py): every backend loads it here, before any engine touches memory."""
        from fpga_runtime.program_check import check_programs
        const = np.fromfile(folder / "memory.bin", np.uint8)
        check_programs(self, const)
        return const

    def fresh_activations(self) -> np.ndarray:
        return np.zeros(self.act_bytes, np.uint8)
