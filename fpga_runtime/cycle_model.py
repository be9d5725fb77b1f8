"""Cycle model of the ABI v1 engine (hls_templates/engine/engine.cpp), per layer.

It follows the engine's loop nest, one pipelined iteration per cycle (II=1):
- standard conv: for each tile of PE_ROWS output channels, the weight tile is read (one 64-byte beat per
  cycle), then every output pixel takes kh * kw * (in_c / VEC) cycles, each doing PE_ROWS x VEC MACs;
- depthwise conv: for each tile of VEC channels, kh * kw cycles per output pixel;
- add, max pool, copy, channel scale: one cycle per output pixel and VEC channels;
- global average pool: one cycle per input pixel and VEC channels.
Channel counts are the padded (physical) ones, so edge effects of tiling are in the count. The csim engine
counts the same iterations, and tests hold the two equal; a layer's time is then the larger of its cycles at
the clock and its DDR traffic at the board's bandwidth (the engine overlaps the two). Pipeline fill, descriptor
fetch and the fused pool's extra cycles are not counted yet: RTL simulation (Verilator) is to calibrate them.
"""
from __future__ import annotations

from dataclasses import dataclass

from .abi import Descriptor, EngineConfig, Flag, Op


@dataclass(frozen=True)
class LayerShape:
    op: Op
    batch: int
    in_c: int          # physical (padded) channels read
    out_c: int         # physical channels written
    kh: int
    kw: int
    conv_h: int        # convolution output size (before a fused pool); the input size of a global average
                       # pool; the output size for other ops
    conv_w: int
    depthwise: bool = False

    @classmethod
    def of(cls, d: Descriptor) -> "LayerShape":
        if d.op == Op.CONV:
            return cls(Op(d.op), d.batch, d.in_c, d.out_c, d.kh, d.kw, d.conv_h, d.conv_w,
                       bool(d.flags & Flag.DEPTHWISE))
        if d.op == Op.GLOBAL_AVG_POOL:
            return cls(Op(d.op), d.batch, d.in_c, d.out_c, 1, 1, d.in_h, d.in_w)
        return cls(Op(d.op), d.batch, d.in_c, d.out_c, 1, 1, d.out_h, d.out_w)


def layer_cycles(s: LayerShape, cfg: EngineConfig) -> int:
    pixels = s.batch * s.conv_h * s.conv_w
    if s.op == Op.CONV and s.depthwise:
        return (s.out_c // cfg.vec) * pixels * s.kh * s.kw
    if s.op == Op.CONV:
        tiles = s.out_c // cfg.pe_rows
        ic_tiles = s.in_c // cfg.vec
        weight_beats = s.kh * s.kw * ic_tiles * cfg.pe_rows * cfg.vec // 64
        return s.batch * tiles * weight_beats + tiles * pixels * s.kh * s.kw * ic_tiles
    return pixels * (s.out_c // cfg.vec)


def layer_seconds(s: LayerShape, nbytes: int, cfg: EngineConfig, ddr_gbps: float) -> float:
    return max(layer_cycles(s, cfg) / (cfg.clock_mhz * 1e6), nbytes / (ddr_gbps * 1e9))
