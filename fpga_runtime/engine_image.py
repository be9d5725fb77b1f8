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
    # Column-packed (a frame's first conv, whose few channels would leave most of a VEC beat empty): pixel x holds,
    # in block j < column_taps of channel_map (each the tensor's channels), the tensor's column x + j - column_pad
    # (the zero point outside its width source_w), so the conv reads a kernel row's taps in one beat
    column_taps: int = 1
    column_pad: int = 0
    source_w: int = 0

    def __post_init__(self) -> None:
        if not 1 <= self.column_taps <= 16 or not 0 <= self.column_pad < self.column_taps \
                or len(self.channel_map) % self.column_taps or (self.column_taps > 1 and self.source_w < 1):
            raise ValueError(f"tensor {self.name!r}: column packing of {self.column_taps} taps, pad "
                             f"{self.column_pad}, width {self.source_w} over {len(self.channel_map)} channels")
        if self.channel_map and (min(self.channel_map) < 0 or self.c_offset + self.phys_c > self.c_stride):
            raise ValueError(f"tensor {self.name!r}: its channels reach past its pixel's {self.c_stride} bytes")

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
        if self.column_taps == 1:
            self.region(memory)[..., self.c_offset + np.asarray(self.channel_map)] = q
            return
        region, blocks = self.region(memory), self._column_blocks()
        for j, (dst, src) in enumerate(self._column_spans()):
            block = np.full(region.shape[:3] + (blocks.shape[1],), self.zero, np.int8)
            block[:, :, dst] = q[:, :, src]
            region[..., self.c_offset + blocks[j]] = block

    @property
    def nbytes(self) -> int:
        """Bytes from addr the tensor spans (with the channels of its neighbours in a shared stride)."""
        return self.n * self.h * self.w * self.c_stride

    def region(self, memory: np.ndarray) -> np.ndarray:
        return memory[self.addr:self.addr + self.nbytes].view(np.int8).reshape(self.n, self.h, self.w, self.c_stride)

    def read_int8(self, memory: np.ndarray) -> np.ndarray:
        if self.column_taps == 1:
            return self.region(memory)[..., self.c_offset + np.asarray(self.channel_map)]
        region, blocks = self.region(memory), self._column_blocks()
        out = np.full((self.n, self.h, self.source_w, blocks.shape[1]), self.zero, np.int8)
        for j, (dst, src) in enumerate(self._column_spans()):       # columns no window reads stay the zero point
            out[:, :, src] = region[:, :, dst][..., self.c_offset + blocks[j]]
        return out

    def _column_blocks(self) -> np.ndarray:
        return np.asarray(self.channel_map).reshape(self.column_taps, -1)

    def _column_spans(self) -> list[tuple[slice, slice]]:
        """Per channel block j: the packed columns that hold a column of the tensor, and those columns."""
        spans = []
        for j in range(self.column_taps):
            shift = j - self.column_pad                   # packed column x holds column x + shift
            lo, hi = max(0, -shift), min(self.w, self.source_w - shift)
            spans.append((slice(lo, max(lo, hi)), slice(lo + shift, max(lo, hi) + shift)))
        return spans

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
        image = cls(EngineConfig(**raw["config"]), raw["const_bytes"], raw["act_bytes"],
                    {k: Program(**v) for k, v in raw["programs"].items()},
                    {k: TensorView(**v) for k, v in raw["tensors"].items()}, raw["abi_version"],
                    raw.get("calibration", {}), raw.get("build_id"), raw.get("board"))
        for v in image.tensors.values():          # the host writes and reads through them: inside the region
            if v.addr < 0 or v.addr + v.nbytes > image.act_bytes:
                raise ValueError(f"tensor {v.name!r} spans bytes {v.addr}..{v.addr + v.nbytes} of an activation "
                                 f"region of {image.act_bytes}")
        return image

    def layers(self, const: np.ndarray) -> list[tuple[str, int, str, Descriptor]]:
        """(program, layer index, layer name, descriptor) of every layer of every program."""
        out = []
        for p in self.programs.values():
            raw = const[p.addr:p.addr + HEADER_SIZE + p.layers * DESCRIPTOR_SIZE].tobytes()
            for i, d in enumerate(unpack_program(raw)):
                out.append((p.subgraph, i, p.layer_names[i] if i < len(p.layer_names) else f"#{i}", d))
        return out

    def flagged_layers(self, const: np.ndarray, flag: int) -> list[tuple[str, int, str, Descriptor]]:
        """`layers` whose descriptor has `flag` (an abi.Flag)."""
        return [layer for layer in self.layers(const) if layer[3].flags & flag]

    def load_constants(self, folder: Path) -> np.ndarray:
        """memory.bin, refused unless it is the size engine.json gives and every program in it is one the engines
        may run (program_check.py): every backend loads it here, before any engine touches memory."""
        from fpga_runtime.program_check import check_programs
        const = np.fromfile(folder / "memory.bin", np.uint8)
        check_programs(self, const)
        return const

    def fresh_activations(self) -> np.ndarray:
        return np.zeros(self.act_bytes, np.uint8)
