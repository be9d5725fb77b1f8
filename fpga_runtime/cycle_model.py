"""Cycle model of the RTL engine (hls_templates/rtl), per layer, fitted to Verilator clock cycles.

It follows the RTL's structure (benchmarks/rtl_cycles.py measures it, tests/test_cycle_model.py holds the
two within 5 %):
- the MAC stage takes one activation beat (VEC channels of one pixel) per cycle: a standard conv needs
  kh * kw * in_c / VEC beats per output pixel for each tile of PE_ROWS output channels (plus the residual
  operand's beats), a depthwise conv kh * kw per pixel for each tile of VEC channels; add and channel scale
  read two beats per output beat, max pooling one per window tap, copy and global average pooling one;
- each output-channel tile needs its biases, requantisation table and weights (one beat per cycle), each read
  paying the memory latency once; the first tile of a layer loads before it runs, every later tile loads into
  the other bank while the one before it runs, so a tile costs the longer of its run and the next load; a run
  pays the latency for its first input beat and for its last write response;
- a layer pays its descriptor fetch and lookup tables;
- a beat wider than the board's port to DDR (`port_bytes`: 16 on Zynq UltraScale+ HP ports, 8 on Zynq-7000)
  takes several port cycles, so input and weight beats cost ceil(VEC / port_bytes) cycles each;
- an epilogue narrower than the result (`EngineConfig.epilogue_lanes`) takes `epilogue_passes` cycles per pixel
  result, so a layer that makes results faster than that waits for it;
- where the DDR cannot deliver the bytes in that time, the layer is memory-bound (prediction/shared_ddr.py);
- a standard conv on the window path (`window_path`, engines with `pixels` > 1) reads each input row once per
  tile (plus its residual operands) and computes `pixels` output pixels per step: kh * kw * in_c / VEC steps per
  group of pixels, a group's results leaving at one per `epilogue_passes` cycles behind the next group; a row
  costs its groups and the layer is bound by the array or by its input loads, whichever is longer, where the
  window holds rows ahead (a spare row hides the memory latency); a row costs its groups plus its load where it
  does not. A 1x1 layer takes up to
  `pixels` output-channel tiles over one load of its input (their weights and tables load together). A
  depthwise layer there takes a whole kernel row per step (kh steps per group, 2 kh at stride 2), and a row
  one group more, which finishes the group before it, on an engine with that logic; else a tap per step.
The memory latency in cycles is the board's (MEMORY_LATENCY_NS at the engine clock), as in the simulator.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from fpga_runtime import window_path, winograd
from fpga_runtime.abi import DESCRIPTOR_SIZE as DESCRIPTOR_BYTES
from fpga_runtime.abi import Descriptor, EngineConfig, Flag, Op

MEMORY_LATENCY_NS = 130.0        # a PS DDR read round trip seen from the fabric (Zynq UltraScale+)

# Fitted to Verilator cycles (benchmarks/rtl_cycles.py): cycles a tile's load (biases, requantisation table,
# weights), a tile's run, a layer and a lookup table cost beyond their beats, as (per memory latency, constant).
# The pipelined RTL (epilogue 8 stages, address generator 4, MAC array 3, constant runs 3) moved the constants by
# hand against the golden layers under Verilator: a tile's run +6, its load +9 (three constant runs), a layer +3,
# an element-wise layer +8, a global average pool's load +3. The second pipelining (the AXI reader's input register
# and registered burst stage, the writer's beat register, a ninth epilogue stage, `drained` registered) added 13
# cycles to a tile's run and 12 to an element-wise layer; a tile's load, overlapped with the run before it, did not
# move. The third (MAC array 5 stages, pixel addresses 5, the reader's beat register, the layer's window choice a
# cycle later, the window path's read address 2 stages) refitted on the golden layers: a tile's run +6, a layer
# +2, a window tile's run +7 (checked on the window layers of the Verilator tests). Against the golden layers: mean
# error -0.01 %, all within 3.1 %; SSD-MobileNet's depthwise layers of 32-64 tiles on a narrow epilogue within 3 %.
# The fourth (registered loop ends, the reader's head run and skid register, the controller's collection flag a
# cycle later) left them as they are: YOLOv3-tiny-416 on 4x16x16 within 0.1 % per layer (benchmarks/rtl_cycles.py).
# The fifth (a 14-stage epilogue with its products on DSP48E2s, the group sizes in registers that S_TILE waits
# three cycles for, the L2-norm factor over six stages) refitted on the golden layers: a tile's run +10, its load
# +1, a layer -1, an element-wise layer +8 (mean error 0.0 %, all within 3.0 %); the window path's rows wait three
# cycles for the rows they need (WINDOW_ROW_SETTLE). The sixth (a decode cycle more for a tile's weight rows,
# S_SIZE) adds a cycle to a layer. The seventh (the MAC stage's and the fused pool's results out of registers, the
# pool queue's head and the weight and window writes a cycle later) is not refitted: YOLOv3-tiny-416 on one 8x8x8
# unit 7,000,993 RTL cycles (346 more than before it), 7,000,116 modelled, every layer within 0.2 %. The eighth (the
# residual queue's head read from its RAM, the fused pool's tap values registered, the pool queue's head, the
# writer's idle from registers, the window choice a decode cycle later) is not refitted either: 7,002,769 RTL
# cycles, 7,001,640 modelled at 214.3 MHz, every layer within 0.2 %. Nor the ninth (a 15-stage epilogue, the weight
# RAM's writes two cycles after the beat, the burst writer's gather a cycle after it, the window's load limit from
# registers): 7,003,397 RTL cycles, every layer within 0.2 %. The tenth (the layer's fit in a register, read in a
# second S_CHECK cycle) adds a cycle to a layer; its six-stage addresses, the reader's registered idle and the
# writer's registered W channel are not refitted: 7,003,728 RTL cycles, 7,001,655 modelled, every layer within
# 0.2 %. Nor the eleventh (a fourth stage in each constant read's request, the address generator's runs out of a
# register with a skid behind it, the window's room tested on a cycle-old limit): YOLOv3-tiny-416 on one 8x8 unit
# (`--engine 8x8`, one pixel) 45,541,301 RTL cycles, 45,551,661 modelled, every layer within 0.2 %. The twelfth and
# thirteenth were not refitted. The fourteenth (every DSP registered: eight-stage pixel addresses, a 17-stage
# epilogue, the constant request's products over three more stages, the layer's fit read in S_CHECK's sixth cycle,
# the window path's TA2 stage, the address generator's activity a register) refitted on the golden layers
# (benchmarks/golden_cycles.py; the constants' increments by a grid search for the least worst-layer error): a layer
# +5, a tile's load +20, its run +4, an element-wise layer +14 (worst layer within 2.8 %, mean -0.5 %); the window
# path's run +5 (+4 as a tile's, and its TA2 stage), checked by tests/test_verilator_backend.py on the window layers.
# The nineteenth: the window path's run +1 (its operands registered at TX, window_conv.sv, a stage before the array).
# The twentieth: a tile's run and the window path's +1 (the array's lane pairs summed in cascaded DSPs,
# mac_cascade.sv: engine_pkg::ARRAY_LATENCY 5 -> 6, which a `--dsp-clock 2x` array already took).
TILE_LOAD_OVERHEAD = (3.0, 50.0)
TILE_RUN_OVERHEAD = (2.0, 67.0)
LAYER_OVERHEAD = (1.0, 23.0)
LUT_OVERHEAD = (1.0, 3.0)
GAP_LOAD_OVERHEAD = (1.0, 11.0)
ELEMENTWISE_OVERHEAD = (2.0, 78.0)
WINDOW_RUN_OVERHEAD = (2.0, 60.0)
DEPTHWISE_ROW_OVERHEAD = 2.5     # a depthwise row whose results leave a pixel per cycle: output-buffer hand-overs
WINDOW_ROW_SETTLE = 3            # cycles a window-path row waits after the last step of the row before it
# results an L2NORM pixel's scaling pass leaves queued for a narrow epilogue: about the MAC stage's room in the
# epilogue queue (mac_stage.sv, `11 - ARRAY_LATENCY` results since its C3 register) and two more (fitted: 10 with a
# 3-cycle array, 8 with 5, before C3; test_l2_normalization holds it within 5 % since)
L2NORM_QUEUE = 8
L2NORM_FACTOR = 6                # cycles a pixel's scaling pass waits for its factor (mac_stage.sv L2_STAGES)


@dataclass(frozen=True)
class LayerShape:
    op: Op
    batch: int
    in_c: int          # physical (padded) channels read
    out_c: int         # physical channels written
    kh: int            # kernel, or the max-pool window of a MAXPOOL layer
    kw: int
    conv_h: int        # convolution output size (before a fused pool); the input size of a global average
                       # pool; the output size for other ops
    conv_w: int
    depthwise: bool = False
    residual: bool = False
    luts: int = 0      # lookup tables the layer loads (LUT activations)
    pool_tail: int = 0 # cycles a fused max pool emits after the tile's last conv row (pool_tail_cycles)
    pool_emit: int = 0 # cycles its emitter takes for a tile, a cycle per window tap (bounds a 3x3 stride-1 pool)
    inside: float = 1.0  # share of a conv's input taps inside the input (the rest is zero padding, no memory)
    # the window path (window_slots > 0): input rows, stride and top padding
    window_slots: int = 0
    in_h: int = 0
    in_w: int = 0
    stride: int = 1
    pad_t: int = 0
    group_tiles: int = 1    # output-channel tiles computed over one load of the input (multi-tile 1x1 layers)
    kernel_rows: bool = False   # a depthwise window layer taking a kernel row per step (else a tap, diagonally)
    phases: int = 1         # identical layers the node compiles to (4: a 2x2 stride-2 transposed conv's phases)
    winograd: bool = False  # integer Winograd F(2x2, 3x3) on the window path (`_winograd_steps`)
    out_pixels: int = 0     # output pixels written (after a fused pool); 0: batch x conv_h x conv_w

    @classmethod
    def of(cls, d: Descriptor, cfg: EngineConfig | None = None) -> "LayerShape":
        """The layer a descriptor describes; with the engine's `cfg`, whether it takes the window path."""
        shape = cls._of(d)
        return shape if cfg is None else shape.on_window_path(d, cfg)

    def on_window_path(self, d: Descriptor, cfg: EngineConfig) -> "LayerShape":
        """This conv shape as the engine `cfg` runs descriptor `d`: with its window, where it takes that path."""
        geometry = window_path.geometry(d, cfg)
        if geometry is None:
            return self
        return replace(self, window_slots=geometry.slots, in_h=d.in_h, in_w=d.in_w, stride=d.stride_h,
                       pad_t=d.pad_t, group_tiles=window_path.tiles_per_group(d, cfg),
                       kernel_rows=window_path.depthwise_rows(d, cfg))

    @classmethod
    def _of(cls, d: Descriptor) -> "LayerShape":
        luts = int(d.act1 == 2 and d.op in (Op.CONV, Op.ADD))
        luts += int(d.act2 == 2 and (d.op == Op.ADD or (d.op == Op.CONV and bool(d.flags & Flag.RESIDUAL))))
        if d.op == Op.CONV:
            tail = pool_tail_cycles(d.conv_h, d.out_h, d.out_w, d.pool_kh, d.pool_kw, d.pool_sh, d.pool_pad_t) \
                if d.flags & Flag.POOL else 0
            up = 2 if d.flags & Flag.UPSAMPLE2 else 1
            inside = (taps_inside(d.conv_h, d.kh, d.stride_h, d.pad_t, d.dil_h, d.in_h * up)
                      * taps_inside(d.conv_w, d.kw, d.stride_w, d.pad_l, d.dil_w, d.in_w * up))
            emit = d.batch * d.out_h * d.out_w * d.pool_kh * d.pool_kw if d.flags & Flag.POOL else 0
            return cls(Op(d.op), d.batch, d.in_c, d.out_c, d.kh, d.kw, d.conv_h, d.conv_w,
                       bool(d.flags & Flag.DEPTHWISE), bool(d.flags & Flag.RESIDUAL), luts, tail, emit, inside,
                       winograd=bool(d.flags & Flag.WINOGRAD), out_pixels=d.batch * d.out_h * d.out_w)
        if d.op == Op.GLOBAL_AVG_POOL:
            return cls(Op(d.op), d.batch, d.in_c, d.out_c, 1, 1, d.in_h, d.in_w, out_pixels=d.batch)
        if d.op == Op.MAXPOOL:
            return cls(Op(d.op), d.batch, d.in_c, d.out_c, d.pool_kh, d.pool_kw, d.out_h, d.out_w)
        return cls(Op(d.op), d.batch, d.in_c, d.out_c, 1, 1, d.out_h, d.out_w, luts=luts)


@lru_cache(maxsize=4096)
def taps_inside(n_out: int, k: int, stride: int, pad: int, dil: int, n_in: int) -> float:
    """Share of (output position, kernel tap) pairs along one axis that read inside the input (cached: the
    exploration asks it of every layer for every candidate engine)."""
    if n_out <= 0 or k <= 0:
        return 1.0
    inside = sum(1 for y in range(n_out) for t in range(k) if 0 <= y * stride - pad + t * dil < n_in)
    return inside / (n_out * k)


def pool_tail_cycles(conv_h: int, out_h: int, out_w: int, kh: int, kw: int, sh: int, pad_t: int) -> int:
    """The pooled rows whose window reaches the last conv row wait for it, then take a cycle per window tap."""
    rows = sum(1 for py in range(out_h) if py * sh - pad_t + kh >= conv_h)
    return rows * out_w * kh * kw


def latency_cycles(cfg: EngineConfig) -> int:
    return max(1, round(MEMORY_LATENCY_NS * cfg.clock_mhz / 1000))


def _cost(overhead: tuple[float, float], latency: int) -> float:
    return overhead[0] * latency + overhead[1]


def layer_cycles(s: LayerShape, cfg: EngineConfig, port_bytes: int = 16) -> int:
    if s.phases > 1:
        return s.phases * layer_cycles(replace(s, phases=1), cfg, port_bytes)
    v, r = cfg.vec, cfg.pe_rows
    passes = cfg.epilogue_passes
    beat = -(-v // port_bytes)            # port cycles per activation or weight beat
    latency = latency_cycles(cfg)
    pixels = s.batch * s.conv_h * s.conv_w
    fixed = _cost(LAYER_OVERHEAD, latency) + s.luts * (_cost(LUT_OVERHEAD, latency) + 256 // v)
    run_fixed = _cost(TILE_RUN_OVERHEAD, latency)
    if s.op == Op.CONV and s.window_slots:
        return round(fixed + _window_conv_cycles(s, cfg, beat, latency))
    if s.op == Op.CONV:
        reads = winograd.POSITIONS // 4 if s.winograd else s.kh * s.kw    # Winograd: 16 words per 4 outputs
        lanes = v if s.depthwise else r
        params = -(-4 * lanes // v) + -(-8 * lanes // v)
        if s.depthwise:
            tiles = s.out_c // v
            per_pixel = s.kh * s.kw + s.residual
            weights = s.kh * s.kw
        else:
            tiles = s.out_c // r
            per_pixel = reads * (s.in_c // v) + s.residual * max(1, r // v)
            weights = (winograd.POSITIONS if s.winograd else s.kh * s.kw) * (s.in_c // v) * r
        per_tap = s.inside * beat + (1 - s.inside)      # padding taps cost no memory: one cycle each
        taps = pixels * reads * (1 if s.depthwise else s.in_c // v)
        run = (run_fixed + max(per_tap * taps + beat * (pixels * per_pixel - taps), passes * pixels, s.pool_emit)
               + s.pool_tail)
        load = _cost(TILE_LOAD_OVERHEAD, latency) + params + beat * weights
        return round(fixed + load + run + (tiles - 1) * max(run, load))
    c_tiles = s.out_c // v
    if s.op == Op.GLOBAL_AVG_POOL:
        run = run_fixed + beat * pixels
        load = _cost(GAP_LOAD_OVERHEAD, latency) + 8
        return round(fixed + load + run + (c_tiles - 1) * max(run, load))
    if s.op == Op.COPY:
        return round(fixed + _cost(ELEMENTWISE_OVERHEAD, latency) + max(beat, passes) * pixels * (s.in_c // v))
    if s.op == Op.L2NORM:
        # per pixel: its channels summed (c_tiles beats), then read again and scaled, a result per beat into the
        # epilogue queue, which a narrow epilogue drains at one per `passes` cycles while the next pixel is summed
        scaling = max(beat * c_tiles, (c_tiles - L2NORM_QUEUE) * passes)
        per_pixel = max(beat * c_tiles + L2NORM_FACTOR + scaling, passes * c_tiles)
        return round(fixed + _cost(ELEMENTWISE_OVERHEAD, latency) + per_pixel * pixels)
    beats = {Op.ADD: 2, Op.SCALE: 2, Op.MAXPOOL: s.kh * s.kw}.get(s.op, 1)
    return round(fixed + _cost(ELEMENTWISE_OVERHEAD, latency) + max(beat * beats, passes) * pixels * c_tiles)


def _window_conv_cycles(s: LayerShape, cfg: EngineConfig, beat: int, latency: int) -> float:
    v, r, p = cfg.vec, cfg.pe_rows, cfg.pixels
    cbs = 1 if s.depthwise else s.in_c // v      # a depthwise tile reads its V channels of each pixel
    lanes = v if s.depthwise else r              # output channels of a tile
    res_beats = max(1, r // v)
    out_px = max(cfg.epilogue_passes, res_beats if s.residual else 1)
    pixel_groups = -(-s.conv_w // p)
    steps = s.kh * (2 if s.stride == 2 and s.kw > 1 else 1) if s.kernel_rows else s.kh * s.kw * cbs
    first = beat * max(0, min(s.in_h, s.kh - s.pad_t)) * s.in_w * cbs
    rows = s.batch * s.conv_h
    total_load = beat * s.batch * (s.in_h * s.in_w * cbs + s.residual * s.conv_h * s.conv_w * res_beats)
    load_row = beat * (s.stride * s.in_w * cbs + s.residual * s.conv_w * res_beats)
    params = -(-4 * lanes // v) + -(-8 * lanes // v)
    weights = s.kh * s.kw * (1 if s.depthwise else cbs * r)
    kh, stride = s.kh, s.stride
    if s.winograd:
        pixel_groups, steps, rows, load_row, weights, out_px = _winograd_steps(s, cfg, beat, cbs, out_px, res_beats)
        kh, stride = 4, 2                         # a row of tiles reads four input rows, makes two output rows
        first = beat * max(0, min(s.in_h, kh - s.pad_t)) * s.in_w * cbs

    def group_cycles(m: int) -> tuple[float, float]:
        """Run and load of a group of m output-channel tiles over one pass of the input."""
        if s.kernel_rows:   # a step per kernel row and stride phase, one group more per row, the last one short
            compute_row = (max((pixel_groups + 1) * steps + WINDOW_ROW_SETTLE, s.conv_w * out_px)
                           + (DEPTHWISE_ROW_OVERHEAD if out_px == 1 else 0.0))
        else:
            compute_row = max(pixel_groups * m * steps + WINDOW_ROW_SETTLE, pixel_groups * m * p * out_px)
        if s.window_slots > kh + stride:          # rows load ahead: bound by the array or by the loads
            rows_cycles = max(first + rows * compute_row, total_load + compute_row)
        else:
            rows_cycles = first + rows * (compute_row + load_row)
        run = _cost(WINDOW_RUN_OVERHEAD, latency) + max(rows_cycles, s.pool_emit) + p * out_px + s.pool_tail
        load = _cost(TILE_LOAD_OVERHEAD, latency) + m * (params + beat * weights)
        return run, load

    tiles = s.out_c // lanes
    sizes = [min(s.group_tiles, tiles - t) for t in range(0, tiles, s.group_tiles)]
    costs = [group_cycles(m) for m in sizes]
    total = costs[0][1] + costs[-1][0]           # the first group's load, the last group's run
    for (run, _), (_, next_load) in zip(costs, costs[1:]):
        total += max(run, next_load)              # each group runs while the next one loads
    return total


def _winograd_steps(s: LayerShape, cfg: EngineConfig, beat: int, cbs: int, out_px: int, res_beats: int
                    ) -> tuple[int, int, int, float, int, int]:
    """A Winograd layer's window-path terms (window_conv.sv with winograd_patch.sv): a step loads a window word of
    one input-channel beat's patch and computes one of the 16 positions of the beat before for `pixels` tiles of
    2x2 outputs, so a group takes 16 steps per beat and 16 more; a row of tiles makes two output rows from two more
    input rows; a group's 4 x pixels results leave through the epilogue. (pixel groups per row of tiles, steps per
    group, rows of tiles, cycles to load a row of tiles, weight beats, epilogue cycles per array pixel.)"""
    groups = -(-winograd.tiles(s.conv_w) // cfg.pixels)
    load_row = beat * (2 * s.in_w * cbs + s.residual * 2 * s.conv_w * res_beats)
    steps = winograd.POSITIONS * (cbs + 1)
    return (groups, steps, s.batch * winograd.tiles(s.conv_h), load_row, winograd.POSITIONS * cbs * cfg.pe_rows,
            4 * out_px)



def layer_bytes(s: LayerShape, cfg: EngineConfig) -> int:
    """The DDR bytes a conv moves on the engine `cfg`, in whole beats of its physical (padded) channels, as the
    loops of `layer_cycles` move them: on the window path its input once per group of output-channel tiles
    (`group_tiles`: the tiles whose weights the weight RAM holds at once), tap by tap once per tile (padding taps
    read nothing); each tile's weights and parameters once; a residual operand and the output once; the
    descriptor and lookup tables. benchmarks/shared_ddr.py's builds check it against the RTL's byte counters."""
    if s.phases > 1:
        return s.phases * layer_bytes(replace(s, phases=1), cfg)
    v, r = cfg.vec, cfg.pe_rows
    conv_px = s.batch * s.conv_h * s.conv_w
    fixed = DESCRIPTOR_BYTES + 256 * s.luts
    if s.op != Op.CONV:
        reads = {Op.ADD: 2, Op.SCALE: 2, Op.L2NORM: 2, Op.MAXPOOL: s.kh * s.kw}.get(s.op, 1)
        return fixed + (s.out_pixels or conv_px) * s.out_c + reads * conv_px * s.in_c
    cbs = 1 if s.depthwise else s.in_c // v
    lanes = v if s.depthwise else r
    tiles = max(1, s.out_c // lanes)
    # a pixel's bytes of result and of residual operand: a tile of fewer channels than a beat moves one whole beat,
    # its byte strobes at the tile's lanes (result_writer.sv; the residual is read a beat per pixel and tile)
    pixel_bytes = tiles * max(lanes, v)
    out = (s.out_pixels or conv_px) * pixel_bytes
    taps = winograd.POSITIONS if s.winograd else s.kh * s.kw
    params = v * (-(-4 * lanes // v) + -(-8 * lanes // v))
    weights = tiles * (params + v * taps * (1 if s.depthwise else cbs * r))
    residual = conv_px * pixel_bytes if s.residual else 0
    if s.window_slots:
        passes = -(-tiles // max(1, s.group_tiles))
        inputs = passes * s.batch * s.in_h * s.in_w * cbs * v
    else:
        reads = winograd.POSITIONS // 4 if s.winograd else s.kh * s.kw
        inputs = tiles * round(conv_px * reads * cbs * s.inside) * v
    return fixed + inputs + weights + residual + out
