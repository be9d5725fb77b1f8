"""Every engine program of a build checked before any engine runs it: on a board the engine is an AXI master with
no SMMU in front of it, so a descriptor that reads or writes past its region is a DMA into someone else's memory.

One validator for every backend (`EngineImage.load_constants`, which every backend's constructor calls first, runs
it; `partition` runs it on what it compiled): the
program header against engine.json; every descriptor's op, flags and geometry (zero, absurd or inconsistent sizes
refused, as the RTL's own check refuses them); every byte span it reads or writes (input, second input, residual,
output with its channel offsets, strides and interleave; weights, biases, requantisation and lookup tables; the
program itself) inside the region it addresses: one activation slot (`act_bytes`, each compute unit and frame slot
has its own) or the constant region (`const_bytes`). The RTL keeps its own check as a second line.
"""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING

import numpy as np

from fpga_runtime.abi import (
    DESCRIPTOR_SIZE,
    HEADER_SIZE,
    L2NORM_SHIFTS,
    MAX_PIXELS,
    MAX_SHIFT,
    MULT_LIMIT,
    NEG_MULT_BITS,
    PROGRAM_MAGIC,
    Act,
    Descriptor,
    Flag,
    Op,
    unpack_program,
    unpack_requant_word,
    weight_taps,
)
from fpga_runtime.plan import PlanError
from fpga_runtime.winograd import MAX_IN_C as WINOGRAD_MAX_IN_C

if TYPE_CHECKING:                   # engine_image calls this module when it loads memory.bin
    from fpga_runtime.engine_image import EngineImage

KNOWN_FLAGS = int(Flag.DEPTHWISE | Flag.RESIDUAL | Flag.POOL | Flag.UPSAMPLE2 | Flag.POOL_PAD_ZERO | Flag.PRELU
                  | Flag.WINOGRAD)


class ProgramError(PlanError, ValueError):
    """A program no engine may run (or a constant region of the wrong size): names the program, the layer and
    the field."""


def check_programs(image: EngineImage, const: np.ndarray) -> None:
    """Refuse the build unless every program of `image` is one the engines may run on these regions."""
    problem = image.config.dsp_clock_problem()
    if problem:
        raise ProgramError(f"engine.json: {problem}; partition the model again")
    if const.size != image.const_bytes:
        raise ProgramError(f"memory.bin holds {const.size:,} bytes where engine.json says {image.const_bytes:,}: a "
                           "truncated or changed file (copy it again or partition the model again)")
    for name, program in image.programs.items():
        try:
            _check_program(name, program, image, const)
        except (TypeError, ValueError, OverflowError, struct.error) as exc:
            raise ProgramError(f"program {name!r}: engine.json describes it with values of the wrong kind ({exc}); "
                               "partition the model again") from None


def _check_program(name: str, program, image: EngineImage, const: np.ndarray) -> None:
    where = f"program {name!r}"
    size = HEADER_SIZE + program.layers * DESCRIPTOR_SIZE
    if not isinstance(program.addr, int) or program.addr < 0 or program.addr + size > image.const_bytes \
            or program.layers < 1:
        raise ProgramError(f"{where}: {program.layers} layer(s) at constant offset {program.addr} do not fit the "
                           f"{image.const_bytes:,}-byte constant region")
    raw = const[program.addr:program.addr + size].tobytes()
    magic, _, count, desc_size, _ = struct.unpack_from("<IHHII", raw)
    if magic != PROGRAM_MAGIC or desc_size != DESCRIPTOR_SIZE or count != program.layers:
        raise ProgramError(f"{where}: header (magic {magic:#x}, {count} layers of {desc_size} bytes) does not match "
                           f"engine.json ({program.layers} layers of {DESCRIPTOR_SIZE} bytes)")
    try:
        descriptors = unpack_program(raw)
    except ValueError as exc:
        raise ProgramError(f"{where}: {exc}") from None
    for i, d in enumerate(descriptors):
        label = program.layer_names[i] if i < len(program.layer_names) else f"#{i}"
        reason = _refusal(d, image, const)
        if reason:
            raise ProgramError(f"{where}, layer {i} ({label}): {reason}; the engines refuse this program (a build "
                               "folder that `partition` did not write this way: partition the model again)")


def _refusal(d: Descriptor, image: EngineImage, const: np.ndarray) -> str | None:
    """Why no engine may run `d`, or None."""
    cfg = image.config
    if d.op not in Op.__members__.values():
        return f"op {d.op} is no engine op"
    op = Op(d.op)
    if d.flags & ~KNOWN_FLAGS:
        return f"flags {d.flags:#x} has unknown bits"
    if d.flags & (Flag.PRELU | Flag.WINOGRAD) and op != Op.CONV:
        return f"flag {Flag(d.flags & (Flag.PRELU | Flag.WINOGRAD)).name} on a layer that is not a CONV"
    if d.act1 not in Act.__members__.values() or d.act2 not in Act.__members__.values():
        return f"act1 {d.act1} / act2 {d.act2}: no such activation"
    if d.out_step > 2 or d.out_step == 2 and (op != Op.CONV or d.flags & (Flag.POOL | Flag.RESIDUAL)
                                              or d.out_phase_y > 1 or d.out_phase_x > 1):
        return f"out_step {d.out_step}: an interleaved output is a CONV's, without pool or residual, phases 0 or 1"
    for field in ("batch", "in_h", "in_w", "in_c", "out_h", "out_w", "out_c", "in_c_stride", "out_c_stride"):
        if getattr(d, field) == 0:
            return f"{field} 0"
    if not (0 <= d.res_mult_a < MULT_LIMIT and 0 <= d.res_mult_b < MULT_LIMIT):
        return f"res_mult_a {d.res_mult_a} / res_mult_b {d.res_mult_b} outside [0, {MULT_LIMIT})"
    if op == Op.SCALE and not 0 <= d.res_mult_b <= 255:
        return f"res_mult_b {d.res_mult_b}: a SCALE's gate offset lies in [0, 255]"
    if op == Op.L2NORM and not L2NORM_SHIFTS[0] <= d.res_shift <= L2NORM_SHIFTS[1]:
        return f"res_shift {d.res_shift}: an L2NORM shift lies in {L2NORM_SHIFTS}"
    if d.res_shift > MAX_SHIFT:       # the engines round in 64 (the RTL in 52) bits, exact up to this shift
        return f"res_shift {d.res_shift} past {MAX_SHIFT}"
    if d.in_c % cfg.vec:
        return f"in_c {d.in_c} is not a multiple of the engine's {cfg.vec} lanes"
    up = 2 if d.flags & Flag.UPSAMPLE2 else 1
    in_h, in_w = d.in_h * up, d.in_w * up
    geometry = _conv_geometry(d, cfg, in_h, in_w) if op == Op.CONV else _plain_geometry(d, op, cfg, in_h, in_w)
    if geometry:
        return geometry
    return _spans(d, op, image) or _constant_values(d, op, const)


def _conv_geometry(d: Descriptor, cfg, in_h: int, in_w: int) -> str | None:
    for field in ("kh", "kw", "stride_h", "stride_w", "dil_h", "dil_w", "conv_h", "conv_w"):
        if getattr(d, field) == 0:
            return f"{field} 0"
    if d.kh > cfg.max_kernel or d.kw > cfg.max_kernel:
        return f"kernel {d.kh}x{d.kw} is larger than the engine's {cfg.max_kernel}"
    if d.flags & Flag.WINOGRAD:
        if (d.flags & (Flag.DEPTHWISE | Flag.UPSAMPLE2) or (d.kh, d.kw, d.stride_h, d.stride_w, d.dil_h, d.dil_w)
                != (3, 3, 1, 1, 1, 1) or d.out_step == 2):
            return "WINOGRAD on a layer other than a standard 3x3 stride-1 undilated conv read and written directly"
        if d.in_c > WINOGRAD_MAX_IN_C:
            return f"WINOGRAD with in_c {d.in_c}: its accumulators stay within int32 up to {WINOGRAD_MAX_IN_C}"
    if d.flags & Flag.DEPTHWISE:
        if d.out_c != d.in_c:
            return f"a depthwise conv with in_c {d.in_c} and out_c {d.out_c}"
        rows = d.kh * d.kw
    else:
        if d.out_c % cfg.pe_rows:
            return f"out_c {d.out_c} is not a multiple of the engine's {cfg.pe_rows} PE rows"
        rows = weight_taps(d) * d.in_c // cfg.vec
    if cfg.weight_rows and rows > cfg.weight_rows:
        return f"{rows} weight rows of a {cfg.weight_rows}-row weight RAM"
    for axis, size, k, s, dil, pads, out in (("h", in_h, d.kh, d.stride_h, d.dil_h, d.pad_t + d.pad_b, d.conv_h),
                                             ("w", in_w, d.kw, d.stride_w, d.dil_w, d.pad_l + d.pad_r, d.conv_w)):
        if (out - 1) * s + dil * (k - 1) + 1 > size + pads:
            return f"conv_{axis} {out}: its windows reach past the padded input ({size} + {pads})"
    if d.flags & Flag.POOL:
        if d.pool_kh == d.pool_kw == 1:
            return "a fused 1x1 pool (the engine's fused pool takes at least two taps)"
        return _pool_geometry(d, cfg, d.conv_h, d.conv_w)
    if (d.out_h, d.out_w) != (d.conv_h, d.conv_w):
        return f"out {d.out_h}x{d.out_w} differs from conv {d.conv_h}x{d.conv_w} (no pool fused)"
    return None


def _pool_geometry(d: Descriptor, cfg, h: int, w: int) -> str | None:
    for field in ("pool_kh", "pool_kw", "pool_sh", "pool_sw"):
        if getattr(d, field) == 0:
            return f"{field} 0"
    if d.pool_kh > cfg.max_kernel or d.pool_kw > cfg.max_kernel:
        return f"pool {d.pool_kh}x{d.pool_kw} is larger than the engine's {cfg.max_kernel}"
    if d.pool_pad_t >= d.pool_kh or d.pool_pad_b >= d.pool_kh or d.pool_pad_l >= d.pool_kw \
            or d.pool_pad_r >= d.pool_kw:
        return "pool padding as large as its kernel"
    for axis, size, s, pads, out in (("h", h, d.pool_sh, d.pool_pad_t + d.pool_pad_b, d.out_h),
                                     ("w", w, d.pool_sw, d.pool_pad_l + d.pool_pad_r, d.out_w)):
        if (out - 1) * s >= size + pads:
            return f"out_{axis} {out}: pool windows start past the padded input ({size} + {pads})"
    return None


def _plain_geometry(d: Descriptor, op: Op, cfg, in_h: int, in_w: int) -> str | None:
    if d.out_c % cfg.vec:
        return f"out_c {d.out_c} is not a multiple of the engine's {cfg.vec} lanes"
    if op != Op.CONV and d.in_c != d.out_c:
        return f"{op.name} with in_c {d.in_c} and out_c {d.out_c}"
    if op == Op.MAXPOOL:
        return _pool_geometry(d, cfg, in_h, in_w)
    if op == Op.GLOBAL_AVG_POOL:
        return None if (d.out_h, d.out_w) == (1, 1) else f"GLOBAL_AVG_POOL to {d.out_h}x{d.out_w}, not 1x1"
    if (d.out_h, d.out_w) != (in_h, in_w):
        return f"{op.name} from {in_h}x{in_w} to {d.out_h}x{d.out_w}"
    return None


def _spans(d: Descriptor, op: Op, image: EngineImage) -> str | None:
    """Every byte range the layer touches, inside its region."""
    act, consts = image.act_bytes, image.const_bytes
    inter = 2 if d.out_step == 2 else 1
    spans = [("in", d.in_addr, d.batch * d.in_h * d.in_w * d.in_c_stride, act, d.in_c_offset + d.in_c,
              d.in_c_stride),
             ("out", d.out_addr, d.batch * d.out_h * inter * d.out_w * inter * d.out_c_stride, act,
              d.out_c_offset + d.out_c, d.out_c_stride)]
    second = {Op.ADD: d.out_h * d.out_w, Op.SCALE: 1}.get(op)
    if op == Op.CONV and d.flags & Flag.RESIDUAL:
        second = d.conv_h * d.conv_w
    if second is not None:
        if d.in2_c_stride == 0:
            return "in2_c_stride 0"
        spans.append(("in2", d.in2_addr, d.batch * second * d.in2_c_stride, act, d.in2_c_offset + d.out_c,
                      d.in2_c_stride))
    if op == Op.CONV:
        per = weight_taps(d) * (1 if d.flags & Flag.DEPTHWISE else d.in_c)
        spans += [("weight", d.weight_addr, d.out_c * per, consts, 0, 1), ("bias", d.bias_addr, 4 * d.out_c, consts,
                                                                           0, 1)]
    if op in (Op.CONV, Op.GLOBAL_AVG_POOL):
        spans.append(("requant", d.requant_addr, 8 * d.out_c, consts, 0, 1))
    luts_used = op in (Op.CONV, Op.ADD)
    for k, (kind, addr) in enumerate(((d.act1, d.lut1_addr), (d.act2, d.lut2_addr)), 1):
        if luts_used and kind == Act.LUT:
            spans.append((f"lut{k}", addr, 256, consts, 0, 1))
    for what, addr, nbytes, region, channels, stride in spans:
        if region == act and nbytes // stride >= MAX_PIXELS:
            return (f"{what}: {nbytes // stride:,} pixels (batch x rows x columns), the engine addresses fewer than "
                    f"{MAX_PIXELS:,} per tensor (split the batch or the frame)")
        if channels > stride:
            return f"{what}_c_offset + channels = {channels} past its {what}_c_stride {stride}"
        if addr + nbytes > region:
            return (f"{what}_addr {addr:#x} + {nbytes:,} bytes ends past the {region:,}-byte "
                    f"{'activation slot' if region == act else 'constant region'}")
    return None


def _constant_values(d: Descriptor, op: Op, const: np.ndarray) -> str | None:
    """Constants whose values the engine's arithmetic bounds, read once `_spans` has put them inside the region."""
    if op == Op.CONV and d.flags & Flag.WINOGRAD:
        weights = const[d.weight_addr:d.weight_addr + d.out_c * weight_taps(d) * d.in_c].view(np.int8)
        if (weights == -128).any():
            return ("a Winograd weight of -128: the compiler quantises U to [-127, 127], which keeps the MAC array's "
                    "sum of two lanes' products (|V| <= 512) inside its DSPs' packed low field")
    if op in (Op.CONV, Op.GLOBAL_AVG_POOL):
        rq = const[d.requant_addr:d.requant_addr + 8 * d.out_c].view(np.int32).reshape(d.out_c, 2)
        prelu = op == Op.CONV and d.flags & Flag.PRELU
        shift, neg = unpack_requant_word(rq[:, 1])
        word = rq[:, 1].astype(np.int64) & 0xFFFFFFFF
        if rq[:, 0].min() < 0 or rq[:, 0].max() >= MULT_LIMIT or shift.max() > MAX_SHIFT \
                or word.max() >= (1 << (8 + NEG_MULT_BITS) if prelu else 1 << 8) \
                or prelu and (neg.min() <= -MULT_LIMIT or neg.max() >= MULT_LIMIT):
            return (f"a requantisation multiplier outside [0, {MULT_LIMIT}), a shift outside [0, {MAX_SHIFT}] or bits "
                    "set past them" + (" (PRELU: a negative-side multiplier outside its 18 bits)" if prelu else ""))
    return None
