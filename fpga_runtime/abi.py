"""The kernel ABI, version 3, in code: engine parameters, the layer descriptor, the program header, the
register map and the integer arithmetic every implementation must reproduce bit for bit.

docs/kernel-abi.md is the prose version; the two must agree (tests check the offsets).
"""
from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

import numpy as np

from fpga_runtime import winograd

ABI_VERSION = 3                # 2: 17-bit multipliers (one DSP48 port), in_zero; 3: a 27-bit requantisation input
ALIGN = 64                     # every buffer starts on a 64-byte boundary (one 512-bit AXI beat)
PROGRAM_MAGIC = 0x41475046     # "FPGA" little-endian
DESCRIPTOR_SIZE = 128
HEADER_SIZE = 16


@dataclass(frozen=True)
class EngineConfig:
    """Build-time parameters of the engine, read by the cost model, the code generator and every backend."""

    vec: int = 16              # input-channel lanes (PE columns); activations pad channels to `granule`
    pe_rows: int = 16          # output channels computed in parallel
    compute_units: int = 1
    clock_mhz: float = 300.0
    max_kernel: int = 7
    epilogue_lanes: int = 0    # RTL: result lanes the epilogue takes per cycle (0: all of them, the granule)
    pixels: int = 1            # RTL: output pixels per step of the window path (1: no window path)
    window_words: int = 0      # RTL: input-window words (vec bytes each) per pixel bank; 0: sized to the build
    weight_rows: int = 0       # RTL: weight-RAM rows (pe_rows x vec bytes) per bank; 0: sized to the build
    # RTL: depthwise layers on the window path take a whole kernel row per step on the array's rows (True: 9k LUT
    # more per 4x16x16 unit) or a tap per step on its diagonal (False); None: rows where the build's layers use them
    depthwise_rows: bool | None = None
    # RTL: the MAC array's DSP48E2s at this multiple of the engine clock (2: `--dsp-clock 2x`, one DSP per two lanes of
    # two output rows, half the DSPs; UltraScale+ only, PE rows and VEC even)
    dsp_clock: int = 1
    # RTL: the window path's Winograd unit (winograd_patch.sv), which runs the layers flagged WINOGRAD that
    # `window_path.winograd_problem` passes; set by the build where it has such layers
    winograd: bool = False
    # RTL: optional parts a build leaves out where none of its layers use them (fpga_runtime/engine_parts.py): the
    # MAC stage's lane products (a depthwise conv off the window path, L2NORM: VEC DSPs and the L2 factor's) and the
    # epilogue's second-operand stage (ADD, SCALE, a fused residual: two DSPs and a table per lane) and its activation
    # tables (a table activation: both tables' LUTRAM copies in every lane)
    lane_products: bool = True
    residual_stage: bool = True
    activation_tables: bool = True

    @classmethod
    def from_shape(cls, shape: str, **fields) -> "EngineConfig":
        """`ROWSxVEC` or `PIXELSxROWSxVEC` (as `partition --engine` takes it); ValueError otherwise."""
        try:
            dims = [int(v) for v in shape.lower().split("x")]
        except ValueError:
            dims = []
        if len(dims) not in (2, 3):
            raise ValueError(f"{shape!r}: expected ROWSxVEC or PIXELSxROWSxVEC, e.g. 16x16 or 4x16x16")
        pixels, rows, vec = dims if len(dims) == 3 else [1, *dims]
        return cls(vec=vec, pe_rows=rows, pixels=pixels, **fields)

    def describe(self, units: int | None = None) -> str:
        """"4x16x16 (epilogue 8 lanes) x 2 units": the design as errors and reports name it."""
        units = self.compute_units if units is None else units
        narrow = f" (epilogue {self.epilogue_lanes} lanes)" if self.epilogue_lanes else ""
        double = " (DSPs at 2x clock)" if self.dsp_clock == 2 else ""
        wino = " (Winograd unit)" if self.winograd else ""
        pixels = f"{self.pixels}x" if self.pixels > 1 else ""
        return f"{pixels}{self.pe_rows}x{self.vec}{narrow}{double}{wino} x {units} unit{'s' if units > 1 else ''}"

    def dsp_clock_problem(self) -> str | None:
        """Why this engine cannot run its array's DSPs at `dsp_clock` times its clock, or None."""
        if self.dsp_clock not in (1, 2):
            return f"dsp_clock {self.dsp_clock!r}: 1 or 2 (the DSPs at the engine clock or twice it)"
        if self.dsp_clock == 2 and any(isinstance(n, int) and n % 2 for n in (self.pe_rows, self.vec)):
            return (f"dsp_clock 2 takes PE rows and lanes in twos (one DSP per two lanes of two rows); "
                    f"{self.pe_rows} PE rows, VEC {self.vec}")
        return None

    @property
    def array_macs(self) -> int:
        """MACs the array does per cycle: pixels x PE rows x lanes."""
        return self.pixels * self.pe_rows * self.vec

    @property
    def epilogue_passes(self) -> int:
        """Cycles the RTL epilogue spends on one pixel result."""
        return self.granule // (self.epilogue_lanes or self.granule)

    @property
    def granule(self) -> int:
        """Channel padding granule: both vec and pe_rows are powers of two, so this is a multiple of each."""
        return max(self.vec, self.pe_rows)

    def padded(self, channels: int) -> int:
        g = self.granule
        return -(-channels // g) * g


class Op(enum.IntEnum):
    CONV = 1        # standard, depthwise (flag) or dense (1x1 on a 1x1 map) convolution with its epilogue
    ADD = 2         # element-wise add of two rescaled int8 inputs
    MAXPOOL = 3
    COPY = 4        # copy with the input read mode (x2 upsample) and channel re-placement
    GLOBAL_AVG_POOL = 5   # out[n, 0, 0, c] = requant(sum over the input's pixels, per-channel table)
    SCALE = 6       # out = in * in2[n, 0, 0, c] (a per-channel gate, squeeze-and-excitation), rescaled
    L2NORM = 7      # out = in / ||in|| over each pixel's channels (SSD's L2Norm), rescaled: l2norm_factor


class Flag(enum.IntFlag):
    DEPTHWISE = 1
    RESIDUAL = 2    # add the second input after act1
    POOL = 4        # max pool the result before writing
    UPSAMPLE2 = 8   # read the input through x2 nearest-neighbour upsampling
    POOL_PAD_ZERO = 16  # the max pool's taps outside its input count as 0, not -128 (a zero Pad before it)
    PRELU = 32      # CONV: a negative accumulator takes the entry's negative-side multiplier (PRelu per channel)
    WINOGRAD = 64   # CONV 3x3 stride 1: integer Winograd F(2x2, 3x3) accumulators, 16 weights per channel pair


class Act(enum.IntEnum):
    NONE = 0
    CLAMP = 1       # clamp to [act_lo, act_hi] (ReLU, ReLU6, Clip after requantisation)
    LUT = 2         # 256-entry int8 table indexed by q + 128


# name, struct code, byte offset: the descriptor, little-endian, 128 bytes
DESCRIPTOR_FIELDS: list[tuple[str, str, int]] = [
    ("op", "B", 0), ("flags", "B", 1), ("act1", "B", 2), ("act2", "B", 3),
    ("batch", "H", 4), ("in_h", "H", 6), ("in_w", "H", 8), ("in_c", "H", 10),
    ("in_c_stride", "H", 12), ("in_c_offset", "H", 14),
    ("out_h", "H", 16), ("out_w", "H", 18), ("out_c", "H", 20), ("out_c_stride", "H", 22), ("out_c_offset", "H", 24),
    ("conv_h", "H", 26), ("conv_w", "H", 28),
    ("kh", "B", 30), ("kw", "B", 31), ("stride_h", "B", 32), ("stride_w", "B", 33), ("dil_h", "B", 34),
    ("dil_w", "B", 35), ("pad_t", "B", 36), ("pad_l", "B", 37), ("pad_b", "B", 38), ("pad_r", "B", 39),
    ("pool_kh", "B", 40), ("pool_kw", "B", 41), ("pool_sh", "B", 42), ("pool_sw", "B", 43),
    ("pool_pad_t", "B", 44), ("pool_pad_l", "B", 45), ("pool_pad_b", "B", 46), ("pool_pad_r", "B", 47),
    ("act_lo", "b", 48), ("act_hi", "b", 49), ("res_shift", "B", 50), ("in_zero", "b", 51),
    ("in2_c_stride", "H", 52), ("in2_c_offset", "H", 54),
    ("in_addr", "I", 56), ("in2_addr", "I", 60), ("weight_addr", "I", 64), ("bias_addr", "I", 68),
    ("requant_addr", "I", 72), ("lut1_addr", "I", 76), ("lut2_addr", "I", 80), ("out_addr", "I", 84),
    ("res_mult_a", "i", 88), ("res_mult_b", "i", 92), ("layer_id", "I", 96),
    ("out_step", "B", 100), ("out_phase_y", "B", 101), ("out_phase_x", "B", 102),
]
_STRUCT = struct.Struct("<" + "".join(code for _, code, _ in DESCRIPTOR_FIELDS) + f"{DESCRIPTOR_SIZE - 103}x")
_HEADER = struct.Struct("<IHHII")     # magic, abi version, layer count, descriptor size, reserved
assert _STRUCT.size == DESCRIPTOR_SIZE and _HEADER.size == HEADER_SIZE


@dataclass
class Descriptor:
    op: int = 0
    flags: int = 0
    act1: int = 0
    act2: int = 0
    batch: int = 1
    in_h: int = 0
    in_w: int = 0
    in_c: int = 0
    in_c_stride: int = 0
    in_c_offset: int = 0
    out_h: int = 0
    out_w: int = 0
    out_c: int = 0
    out_c_stride: int = 0
    out_c_offset: int = 0
    conv_h: int = 0
    conv_w: int = 0
    kh: int = 1
    kw: int = 1
    stride_h: int = 1
    stride_w: int = 1
    dil_h: int = 1
    dil_w: int = 1
    pad_t: int = 0
    pad_l: int = 0
    pad_b: int = 0
    pad_r: int = 0
    pool_kh: int = 0
    pool_kw: int = 0
    pool_sh: int = 0
    pool_sw: int = 0
    pool_pad_t: int = 0
    pool_pad_l: int = 0
    pool_pad_b: int = 0
    pool_pad_r: int = 0
    act_lo: int = -128
    act_hi: int = 127
    res_shift: int = 0
    in_zero: int = 0       # conv: the value of input taps outside the image (the input's zero point)
    in2_c_stride: int = 0
    in2_c_offset: int = 0
    in_addr: int = 0
    in2_addr: int = 0
    weight_addr: int = 0
    bias_addr: int = 0
    requant_addr: int = 0
    lut1_addr: int = 0
    lut2_addr: int = 0
    out_addr: int = 0
    res_mult_a: int = 0
    res_mult_b: int = 0
    layer_id: int = 0
    out_step: int = 0        # 2: output pixel (y, x) goes to (2y + out_phase_y, 2x + out_phase_x) of a 2x larger
    out_phase_y: int = 0     # tensor (one phase of a 2x2 stride-2 transposed conv); 0 or 1: dense
    out_phase_x: int = 0

    @property
    def out_interleaved(self) -> bool:
        return self.out_step == 2

    def pack(self) -> bytes:
        return _STRUCT.pack(*(getattr(self, name) for name, _, _ in DESCRIPTOR_FIELDS))

    @classmethod
    def unpack(cls, raw: bytes) -> "Descriptor":
        return cls(*_STRUCT.unpack(raw))


def pack_program(descriptors: list[Descriptor]) -> bytes:
    head = _HEADER.pack(PROGRAM_MAGIC, ABI_VERSION, len(descriptors), DESCRIPTOR_SIZE, 0)
    return head + b"".join(d.pack() for d in descriptors)


def unpack_program(raw: bytes) -> list[Descriptor]:
    magic, version, count, size, _ = _HEADER.unpack_from(raw, 0)
    if magic != PROGRAM_MAGIC or version != ABI_VERSION or size != DESCRIPTOR_SIZE:
        raise ValueError(f"not an ABI v{ABI_VERSION} program (magic {magic:#x}, version {version}, size {size})")
    return [Descriptor.unpack(raw[HEADER_SIZE + i * size: HEADER_SIZE + (i + 1) * size]) for i in range(count)]


class Reg(enum.IntEnum):
    """s_axilite register map, in the layout Vitis HLS generates for ap_ctrl_hs and these scalar arguments:
    each 64-bit argument takes two words and a reserved one, each 32-bit argument a word and a reserved one."""

    CTRL = 0x00           # bit0 ap_start, bit1 ap_done (clear on read), bit2 ap_idle, bit3 ap_ready, bit7 auto_restart
    GIE = 0x04            # global interrupt enable
    IER = 0x08            # bit0 ap_done interrupt enable, bit1 ap_ready
    ISR = 0x0C            # interrupt status, toggle on write
    PROGRAM_LO = 0x10     # 64-bit byte address of the program (header + descriptors) in DDR
    PROGRAM_HI = 0x14
    LAYER_COUNT = 0x1C    # number of descriptors to run
    ACT_BASE_LO = 0x24    # 64-bit base of the activation region: in/in2/out addresses are offsets from it
    ACT_BASE_HI = 0x28
    CONST_BASE_LO = 0x30  # 64-bit base of the constant region: weight/bias/requant/lut addresses are offsets
    CONST_BASE_HI = 0x34
    CYCLES_LO = 0x3C      # read-only: cycles of the last run
    CYCLES_HI = 0x40
    STATUS = 0x48         # RTL engine, read-only: bit0 the last program was refused
    ERROR_LAYER = 0x4C    # the refused layer
    COUNTERS = 0x50       # nine 64-bit counters (PERF_COUNTERS), two words each


# the RTL engine's performance counters from Reg.COUNTERS on, in order (docs/kernel-abi.md)
PERF_COUNTERS = ["clock", "mac_busy", "stall_input", "stall_weights", "stall_output", "stall_epilogue",
                 "act_bytes_read", "const_bytes_read", "act_bytes_written"]


CTRL_START, CTRL_DONE, CTRL_IDLE, CTRL_READY = 0x1, 0x2, 0x4, 0x8
ENGINE_VLNV = "fpga-partitioner:kernels:engine:1.0"    # the engine IP in the overlay (Vivado block design, .hwh)


@dataclass(frozen=True)
class RegisterSpec:
    """One s_axilite register as the overlay metadata (.hwh) describes it. Names are those Vitis HLS gives the
    engine's arguments (`program_1`/`program_2` for a 64-bit pointer), so a Vivado export of the HLS IP and the
    generated metadata name the same registers; `rtl_only` marks the RTL engine's additions."""

    name: str
    offset: int
    access: str                                        # "read-write" | "read-only" | "write-only"
    description: str
    fields: tuple[tuple[str, int, int, str], ...] = ()  # name, bit offset, bit width, access
    rtl_only: bool = False


def _word64(name: str, offset: int, access: str, what: str, rtl_only: bool = False) -> list[RegisterSpec]:
    return [RegisterSpec(f"{name}_1", offset, access, f"{what}, bits 31:0", rtl_only=rtl_only),
            RegisterSpec(f"{name}_2", offset + 4, access, f"{what}, bits 63:32", rtl_only=rtl_only)]


REGISTER_MAP: list[RegisterSpec] = [
    RegisterSpec("CTRL", Reg.CTRL, "read-write", "control signals",
                 (("AP_START", 0, 1, "read-write"), ("AP_DONE", 1, 1, "read-only"), ("AP_IDLE", 2, 1, "read-only"),
                  ("AP_READY", 3, 1, "read-only"), ("RESERVED_1", 4, 3, "read-only"),
                  ("AUTO_RESTART", 7, 1, "read-write"), ("RESERVED_2", 8, 24, "read-only"))),
    RegisterSpec("GIER", Reg.GIE, "read-write", "global interrupt enable",
                 (("Enable", 0, 1, "read-write"), ("RESERVED", 1, 31, "read-only"))),
    RegisterSpec("IP_IER", Reg.IER, "read-write", "interrupt enable",
                 (("CHAN0_INT_EN", 0, 1, "read-write"), ("CHAN1_INT_EN", 1, 1, "read-write"),
                  ("RESERVED_0", 2, 30, "read-only"))),
    RegisterSpec("IP_ISR", Reg.ISR, "read-write", "interrupt status (toggle on write)",
                 (("CHAN0_INT_ST", 0, 1, "read-write"), ("CHAN1_INT_ST", 1, 1, "read-write"),
                  ("RESERVED_0", 2, 30, "read-only"))),
    *_word64("program", Reg.PROGRAM_LO, "write-only", "address of the program"),
    RegisterSpec("layer_count", Reg.LAYER_COUNT, "write-only", "descriptors to run"),
    *_word64("act", Reg.ACT_BASE_LO, "write-only", "base of the activation region"),
    *_word64("consts", Reg.CONST_BASE_LO, "write-only", "base of the constant region"),
    *_word64("cycles", Reg.CYCLES_LO, "read-only", "clock cycles of the last run"),
    RegisterSpec("status", Reg.STATUS, "read-only", "bit0: the last program was refused", rtl_only=True),
    RegisterSpec("error_layer", Reg.ERROR_LAYER, "read-only", "the refused layer", rtl_only=True),
    *[r for i, name in enumerate(PERF_COUNTERS)
      for r in _word64(name, Reg.COUNTERS + 8 * i, "read-only", f"performance counter {name}", rtl_only=True)],
]


# ---- integer semantics -------------------------------------------------------------------------------------
def saturate8(x: np.ndarray) -> np.ndarray:
    return np.clip(x, -128, 127).astype(np.int8)


def shift_round(x: np.ndarray, shift: np.ndarray | int) -> np.ndarray:
    """(x + 2^(shift-1)) >> shift in int64: round half towards +infinity; shift 0 leaves x as is."""
    x = np.asarray(x, np.int64)
    shift = np.asarray(shift, np.int64)
    bias = np.where(shift > 0, np.left_shift(np.int64(1), np.maximum(shift - 1, 0)), 0)
    return np.right_shift(x + bias, shift)


def requant_input(acc: np.ndarray, overwrite: bool = False) -> np.ndarray:
    """The accumulator as the requantisation takes it: its low ACC_BITS bits, sign-extended (int64)."""
    acc = acc if overwrite and acc.dtype == np.int64 else np.array(acc, np.int64)
    np.add(acc, ACC_HALF, out=acc)
    np.bitwise_and(acc, 2 * ACC_HALF - 1, out=acc)
    np.subtract(acc, ACC_HALF, out=acc)
    return acc


def requantize(acc: np.ndarray, mult: np.ndarray, shift: np.ndarray, overwrite: bool = False) -> np.ndarray:
    """int32 accumulator -> int8: saturate(shift_round(requant_input(acc) * mult, shift)), per output channel (last
    axis). With `overwrite`, an int64 `acc` is used as scratch (fewer passes over memory on big tensors)."""
    return _requantize_input(requant_input(acc, overwrite), mult, shift)


def _requantize_input(acc: np.ndarray, mult: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """`requantize` of a requantisation input already taken (int64, used as scratch)."""
    shift = np.asarray(shift, np.int64)
    np.multiply(acc, np.asarray(mult, np.int64), out=acc)
    np.add(acc, np.where(shift > 0, np.left_shift(np.int64(1), np.maximum(shift - 1, 0)), 0), out=acc)
    np.right_shift(acc, shift, out=acc)
    return saturate8(acc)


MULT_BITS = 17        # every multiplier of the epilogue is below 2^17: an 18-bit signed DSP48 port, not a 32x32
MULT_LIMIT = 1 << MULT_BITS
# ABI v3: the requantisation multiplies the accumulator's low 27 bits (one DSP48E2's 27 x 18 product, not two); the
# compiler keeps every conv's and global average pool's accumulation within +-(2^26 - 1), so no bit is lost
ACC_BITS = 27
ACC_HALF = 1 << (ACC_BITS - 1)
MAX_SHIFT = 62        # every shift of a program (the requantisation tables' and res_shift) is at most this
# A requantisation entry is (int32 mult, int32 word): the word's bits 0-7 are the shift; with Flag.PRELU its bits
# 8-25 are the negative-side multiplier, signed 18 bits (|neg| < 2^17), and the rest is zero.
SHIFT_MASK = 0xFF
NEG_MULT_BITS = 18
# Every activation tensor a layer addresses holds fewer pixels (batch x rows x columns) than this: the RTL forms a
# pixel's address as two products on DSP48E2s with 27-bit signed operands (pixel_address.sv), its row n * h + y and
# its index in the tensor. 64 Mi pixels: a batch of seven 4K (3840 x 2160) frames.
MAX_PIXELS = 1 << 26
# The engine computes memory addresses in this many bits (engine_pkg::ADDR_W): every buffer the runtime hands it
# lies below 2^40, as every Zynq UltraScale+ and Alveo memory map does; the AXI ports carry 64.
ADDRESS_BITS = 40


def pack_requant_word(shift: np.ndarray, neg_mult: np.ndarray | None = None) -> np.ndarray:
    word = np.asarray(shift, np.int64)
    if neg_mult is not None:
        word = word | ((np.asarray(neg_mult, np.int64) & ((1 << NEG_MULT_BITS) - 1)) << 8)
    return word.astype(np.int32)


def unpack_requant_word(word: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(shift, negative-side multiplier) of a requantisation entry's second word."""
    w = np.asarray(word, np.int64) & 0xFFFFFFFF
    neg = (w >> 8) & ((1 << NEG_MULT_BITS) - 1)
    return w & SHIFT_MASK, np.where(neg >= 1 << (NEG_MULT_BITS - 1), neg - (1 << NEG_MULT_BITS), neg)


def requantize_prelu(acc: np.ndarray, mult: np.ndarray, neg_mult: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """requantize with the negative-side multiplier where the requantisation input is negative (Flag.PRELU)."""
    acc = requant_input(acc)
    return _requantize_input(acc, np.where(acc < 0, np.asarray(neg_mult, np.int64), np.asarray(mult, np.int64)),
                             shift)


class ScaleRangeError(ValueError):
    """A scale ratio no multiplier and shift of the ABI encode (absurd weights or ranges)."""


def quantize_multiplier(real: float) -> tuple[int, int]:
    """real ~= mult * 2^-shift with mult in [2^16, 2^17) and shift in [0, 62] (mult 0 for real 0). 17 bits put
    the rounding of the multiplier at 2^-17 of the value, a thousandth of an int8 step at most."""
    if real <= 0:
        return 0, 0
    mant, exp = np.frexp(real)               # real = mant * 2^exp, mant in [0.5, 1)
    mult = int(round(mant * (1 << MULT_BITS)))
    shift = MULT_BITS - int(exp)
    if mult == 1 << MULT_BITS:
        mult //= 2
        shift -= 1
    while shift > MAX_SHIFT:
        mult >>= 1
        shift -= 1
    if shift < 0:
        raise ScaleRangeError(f"requantisation factor {real} is too large for the engine")
    return mult, shift


RSQRT_INDEX_BITS = 10
L2NORM_SHIFTS = (2, 26)        # res_shift of an L2NORM layer: the range every engine takes


def rsqrt_table() -> np.ndarray:
    """T[i] = round(2^26 / sqrt(i + 1/2)) for 256 <= i < 1024 (0 below): 1 / sqrt of a sum of squares whose top
    10 bits, normalised by an even shift, are i. The engines' ROM (HLS header, SystemVerilog function) is
    generated from this one table."""
    t = np.zeros(1 << RSQRT_INDEX_BITS, np.int64)
    i = np.arange(256, 1 << RSQRT_INDEX_BITS)
    t[256:] = np.rint(2.0 ** 26 / np.sqrt(i + 0.5)).astype(np.int64)
    return t


def _bit_length(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, np.int64).copy()
    n = np.zeros(v.shape, np.int64)
    for step in (32, 16, 8, 4, 2, 1):
        big = v >= (np.int64(1) << step)
        n += big * step
        v = np.where(big, v >> step, v)
    return n + (v > 0)


def l2norm_factor(ss: np.ndarray, mult: int, shift: int) -> tuple[np.ndarray, np.ndarray]:
    """(K, sh) per pixel of an L2NORM layer from its sum of squares `ss` (int32, >= 0): out = saturate8(
    shift_round(x * K, sh)). ss = 0 gives K = 0. Otherwise, with z the even number of leading zeros of ss as a
    32-bit word (z = clz & ~1) and i = (ss << z) >> 22: K = shift_round(T[i] * mult, 23) and
    sh = shift + 14 - z / 2, since 1 / sqrt(ss) ~ T[i] * 2^(z/2 - 37) and (mult, shift) encode 1 / s_out."""
    ss = np.asarray(ss, np.int64)
    z = (32 - _bit_length(ss)) & ~1
    idx = np.where(ss > 0, np.left_shift(ss, np.where(ss > 0, z, 0)) >> 22, 0) & ((1 << RSQRT_INDEX_BITS) - 1)
    k = shift_round(rsqrt_table()[idx] * np.int64(mult), 23)
    return np.where(ss > 0, k, 0), np.where(ss > 0, shift + 14 - z // 2, 0)


def weight_taps(d: "Descriptor") -> int:
    """Weights per output and input channel of a CONV: its kernel's taps, or a Winograd layer's 16 positions."""
    return winograd.POSITIONS if d.flags & Flag.WINOGRAD else d.kh * d.kw
