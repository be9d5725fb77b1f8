"""Resource model of one engine compute unit, per parameter, fitted to yosys `synth_xilinx -family xcup` of the
RTL engine (`hls_templates/rtl/`, `partition --synth`). DSP and BRAM counts follow from the structure and match
yosys; LUT and FF counts are a fit (Vivado maps LUTs more tightly than yosys: treat them as an upper estimate).

Measured: yosys 0.70, one unit, `benchmarks/results/timing_estimate.jsonl`. DSPs exact on every synthesised shape;
LUTs within -8.2 % (the four-pass epilogue with the Winograd unit) to +3.4 % of yosys on the thirty-fifth RTL, FFs
within -0.6 % to +1.1 % on the window shapes and 4-5 % under on the one-pixel ones (tests/test_dse.py); how each
term was fitted and checked, round by round: docs/resource-history.md.

- MAC array: PE_ROWS x VEC int8 multipliers, two per DSP48E2 (UltraScale+, the WP486 packing of mac_pair.sv),
  one per DSP48E1 (the VEC lanes' own products under "The rest"). LUTs: 32.4 per MAC + 161 per lane - 752, less
  8.62 per MAC (and 2.74 FF) where two lanes' products are summed in the DSPs (mac_cascade.sv's cascade at 1x,
  mac_quad.sv's P at 2x).
- Epilogue, at E of the G = max(PE_ROWS, VEC) result lanes per pass (`EngineConfig.epilogue_lanes`; E = G by
  default): per lane a 32x18 product as two DSP products, b x mb (ADD's second term and the residual's, one product
  for both: no layer has both) and e1 x ma (the residual's first; SCALE's 8x10 gate product in a SCALE layer), 4
  DSP48E2s with every register (dsp_mult.sv; every multiplier is below 2^17 since ABI v2), its two copies of
  the activation tables (10 RAM32M16 each at VEC 16, TABLE_LUT), 52- and 48-bit rounding shifts; with several
  passes, 38 LUT and 80 FF per result lane to hold and slice the result. Without the second-operand stage
  (`EngineConfig.residual_stage` False) 2 DSP48E2s a lane, RESIDUAL_LUT / RESIDUAL_FF and the second table fewer;
  without the tables (`EngineConfig.activation_tables` False) the first too.
- The rest (controller, descriptor and constant fetch, address generator, pool, AXI ports, the L2NORM factor):
  6 DSP (the pixel addresses' and per-request products, registered; one is the L2 factor's; a layer's products
  are in the fabric since the twenty-seventh RTL),
  19,200 LUT, 5,564 FF plus 607 LUT and 140 FF per result lane; per VEC lane the depthwise product and the L2NORM
  square (one packed DSP48E2, or two DSP48E1s), which an engine without lane products (`EngineConfig.lane_products`
  False) has not, nor the L2 factor (LANE_PRODUCTS_*); the pipeline's registers (PIPE_*).
- Weight buffer: `weight_rows` rows of PE_ROWS x VEC bytes, ping-pong: PE_ROWS banks of VEC bytes, each
  2 x weight_rows deep, counted in the block RAM's best aspect ratio (BRAM36 512x72 ... 32Kx1, URAM288
  4Kx72). On parts with UltraRAM the exploration tries the buffer in either.
- Pool line buffer: (max_kernel + 1) rows x widest row x granule bytes; the reader's and writer's queues.
- Window path (pixels P > 1): the array grows to P x PE_ROWS x VEC (one multiplier array shared with the
  per-tap path); P window banks of `window_words` x VEC bytes; per pixel and output channel an accumulator and
  the finished group's copy (2 x 32 FF and LUT), the bank-to-pixel rotation, the residual queue (512 beats of
  LUTRAM), a group's extra tiles' parameters (GROUP_*), 3 DSPs (its output address, its window column); the
  depthwise kernel-row path (per pixel and lane: the sums per output of the array's rows, the carry into the group
  before and that group's held sums, the masks of the taps: DEPTHWISE_*), built only where the build's depthwise
  layers use it
  (`depthwise_rows`; without it they take a tap per step on the array's diagonal). yosys in ABI v1, before the
  refit, 4 x 16 x 16 with an 8-lane epilogue and 2,048-word window banks: 9,284 more LUT and 4,340 more FF with
  the kernel-row logic than without.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from fpga_runtime.abi import ACC_BITS, EngineConfig
from fpga_runtime.boards import Board, mixed_units, over_budget, weight_mixes

QUEUE_BRAM = 3          # the activation reader's run queue and the writer's
# per epilogue lane (tables in registers read through 256:1 muxes: 3230); the sixteenth RTL's merged products added
# 45 LUT (b x mb's 26 bits carried seven stages in shift registers, the residual DSP's operand choice) and 26 FF;
# ABI v3 (the twenty-fourth RTL) made x * m one 27 x 18 product: three DSP48E2s a lane, not four (a DSP48E1's
# 25 x 18 multiplier still takes it in two), and 64 LUT and 13 FF fewer (the halves' sum and x's top five bits):
# yosys, each shape against the twenty-third RTL, fitted on 8x8+lean (-62 LUT a lane) and 2x8x16 (-67); checked on
# 2x16x16:8 (-64), 4x16x16:8 and its +lean twin (-62), 8x8x8 (-64), 8x8x8+wino (-66), 4x16x16+wino (-67); FF -13
# a lane on every one of them
EPILOGUE_DSP = {2: 3, 1: 4}
# The twenty-eighth RTL's tables (lut_ram.sv, one memory a beat wide) 46 LUTs smaller each at VEC 16 (TABLE_LUT):
# 981 less two of those; yosys moved 16-lane VEC-16 units by -1,439 (-90 a lane), 8x8x8 by -402 (-50: its tables
# are half as wide). The count keeps both tables in and takes them out by TABLE_LUT at the engine's VEC
EPILOGUE_LUT, EPILOGUE_FF = 889, 47
# the control's registered products on DSPs (dsp_mult.sv): two per pixel address (the address generator's two, the
# window path's one, WINDOW_DSP), a constant run's two, a window row's beats (the L2 norm's factor, L2_FACTOR_DSP,
# counted apart: an engine without lane products has none). Since the twenty-seventh RTL a layer's three products
# (kernel taps, a tile's weight rows, a window row's words) are in the fabric (lut_mult.sv), LAYER_PRODUCTS_*
CONTROL_DSP = {2: 5, 1: 9}     # on DSP48E1s (25 x 18) each 27-bit product takes two
# lut_mult.sv alone through yosys synth_xilinx (xcup): 8 x 8 bits 99 LUT and 61 FF, 16 x 16 bits 441 and 171; a
# layer's taps (8 x 8) and its two 16 x 16 products
LUT_MULT_8, LUT_MULT_16 = (99, 61), (441, 171)
LAYER_PRODUCTS_LUT, LAYER_PRODUCTS_FF = (a + 2 * b for a, b in zip(LUT_MULT_8, LUT_MULT_16))
L2_FACTOR_DSP = 1
# An engine without the epilogue's second-operand stage (EngineConfig.residual_stage False: a build with no ADD,
# SCALE or fused residual) has one DSP per lane (x * m), not three, no second table and no residual sum,
# shift and saturation; one without lane products (EngineConfig.lane_products False) no VEC-lane product DSPs, no
# squares' sum and no L2 factor. Their LUTs and FFs per epilogue lane and per VEC lane: yosys (the twenty-eighth
# RTL), each shape with every part less the same shape without them (+lean: also without its tables, TABLE_LUT),
# fitted exactly on 8x8 (8 lanes, VEC 8: 4,633 LUT, 1,427 FF) and 4x16x16:8 (8 lanes, VEC 16: 6,431, 1,467);
# checked on 2x8x16, 16x16 and 4x16x16 (16 lanes, tests/test_dse.py). RESIDUAL_LUT is the stage without its table
EPILOGUE_FIRST_DSP = {2: 1, 1: 2}
RESIDUAL_LUT, RESIDUAL_FF = 382, 173
# one activation table of one lane by VEC (lut_ram.sv: 256 / VEC words of VEC entries, a constant beat each), yosys
# synth_xilinx (xcup) of the module alone: at VEC 16, 10 RAM32M16 (8 LUTs each) and 62 LUTs of the word's entry
# pick (the twenty-seventh RTL's 16 one-entry banks took 16 RAM32M16 and 60: 188). Every lane has the first; the
# second is the residual stage's; an engine without tables (EngineConfig.activation_tables False) has neither
TABLE_LUT = {8: 64, 16: 142, 32: 275, 64: 515}
LANE_PRODUCTS_LUT_PER_VEC, LANE_PRODUCTS_FF_PER_VEC = 69, 5
CONTROL_LUT, CONTROL_FF = 19_200, 5_564
# per result lane (G): its tables, reader and writer; its bias and requantisation registers, two banks of 72 bits;
# since the twenty-fifth RTL its sums (bias, epilogue queue entry, MAC stage) in ACC_BITS (the module's docstring)
CONTROL_LUT_PER_LANE, CONTROL_FF_PER_LANE = 492, 51
# per VEC lane: the depthwise product and the L2 norm's square (MAC stage: one packed DSP48E2, mac_pair.sv, or two
# DSP48E1s)
VEC_DSP = {2: 1, 1: 2}
WINDOW_DSP = {2: 3, 1: 5}  # the window path's output address (two, or four) and its window column offset (one)
# The pipeline registers of the pipelined RTL: per packed MAC pair the array's partial sums (its operand, product and
# output registers are the DSP48E2's own since the third pipelining, mac_pair.sv; on 7-series yosys packs them
# into the DSP48E1s), per result lane the epilogue's fifteen stages, per window pixel its array stages; and the rest
# (address generator, readers' input, burst and beat registers, writer's beat register, MAC stage). Least squares
# over 8x8, 16x8, 16x16 and 2x8x16 of the fifth pipelining's yosys runs (per pair and the constant), the per-lane
# term and the constant moved by the sixth's to the tenth's (output registers, queue heads and flags, the epilogue's
# operand stage and its mask's decode, the registered biases; least squares over the same four; the tenth's 96 FF
# per window pixel and 32 per lane of a group's extra tiles counted from the RTL). The fourteenth (every DSP
# registered, a 17-stage epilogue, 40-bit addresses, 32-bit counter halves) moved the per-lane term and the constant:
# an exact fit to 8x8 and 2x8x16, checked on 4x16x16 (53,278 modelled, 53,254 by yosys).
PIPE_FF_PER_PAIR, PIPE_FF_PER_LANE, PIPE_FF_PER_PIXEL, PIPE_FF = 13.5, 772, 1_046, 3_127
# The timing rounds since (the twenty-ninth to the thirty-third RTL: flags kept a step ahead, copies of enables of
# high fan-out, the window path's picks on copies of its flag) added registers to the window path's engines. The
# thirty-third RTL's yosys counts less the model without them: 2x8x16 +1,846, 4x16x16 +2,760, 8x8x8 +1,776; terms
# per epilogue lane, per pixel and per pixel and PE row of a window engine, fitted exactly on those three; checked
# on the other window shapes of benchmarks/results/timing_estimate.jsonl (@2x, +lean, +wino, the four-pass
# epilogue, 8x16x16): within -0.5 % and +1.2 % (were -6.4 % to -1.4 %; tests/test_dse.py). One-pixel engines keep
# the terms above: 8x8 -4.1 %, 16x16 +1.8 % (25,326 by yosys), the PYNQ-Z2's 8x8 (DSP48E1s) -13.5 %
TIMING_FF_PER_LANE, TIMING_FF_PER_PIXEL, TIMING_FF_PER_PIXEL_ROW = 100.14, -45.71, 20.95
# ... and their LUTs, a fit over 8x8, 16x16, 2x8x16 and 4x16x16 of the sixth pipelining's yosys runs (a constant,
# per VEC lane and per window pixel and PE row; not derived from the structure: the last is negative, the
# structural count of the window path's accumulators, 64 LUT per pixel and row, over-counts what yosys maps once the
# controller's descriptor take is a beat-wide select)
PIPE_LUT_PER_VEC, PIPE_LUT, PIPE_LUT_PER_PIXEL_ROW = 256, -14_396, -177
RESIDUAL_QUEUE_LUT = 1_400
# The Winograd unit's count (winograd_unit) against yosys: the unit's LUTs and FFs are the engine's with it less
# the same shape's without it. The twenty-seventh RTL (the patch held as bytes, one adder per row sum: 3,200-3,700
# LUT fewer per unit; its output row step in the fabric): 4x16x16 +17,138 LUT, +23,475 FF against a count of 12,800
# and 22,688 (the fabric product's 441 / 171 apart), fitted on it; checked on 8x8x8 (+16,040 / +22,181: the model
# +4.5 %, +0.4 %; tests/test_dse.py). The twenty-fifth's (the four row sums held) +21,725 / +23,944 gave 1.233 and
# 0.984 with its count.
WINOGRAD_LUT_SCALE, WINOGRAD_FF_SCALE = 1.305, 1.027
# `--dsp-clock 2x` (mac_quad.sv, the twenty-eighth RTL): per DSP (four MACs, two lanes of two rows) its fabric
# registers (both lanes' packed weights, 27 + 27, and operands, the lane-pair sums out, 2 x 17; the lane products'
# catch only where the depthwise taps read them) and its LUTs (the B port's pick between the lanes, the weights'
# packing), against the 1x array of the same shape, whose cascaded lane pairs it replaces with the same sums (its
# lane tree is the 1x one: CASCADE_* apply to both). yosys: 8x8 +174 LUT, +1,392 FF for 16 DSPs, 4x16x16 +2,668 /
# +22,273 for 256 (fitted, exact); left out, 2x8x16 +642 / +5,569 for 64 (the model +673 / +5,569), 8x16x16 +5,122 /
# +44,545 for 512 (+5,327 / +44,545). The twenty-seventh RTL's mac_quad (four rows of one lane, the fabric summing
# every product) took 4x16x16 +9,923 / +38,593.
# The thirty-fourth RTL put the two lanes' weight picks in front of A and D (the pre-adder packs them): 18.76 LUT a
# DSP more, fitted with ROUTE_LUT (below) on the thirty-fifth's 4x16x16@2x
DOUBLE_FF_PER_DSP, DOUBLE_FF, DOUBLE_LUT_PER_DSP, DOUBLE_LUT = 87.0, 0, 29.15, 8
# Since the thirty-fourth RTL, synthesis tells ABC9 a LUT level's route delay (codegen/synth.py): it maps shallower
# and duplicates more, 1,125 LUT a unit more than the terms above (least squares with DOUBLE_LUT_PER_DSP over the
# thirty-fifth RTL's 8x8, 2x8x16, 4x16x16 and 4x16x16@2x; docs/resource-history.md has the shapes left out)
ROUTE_LUT = 1_125
# The 1x packed array's lane pairs summed in cascaded DSPs (mac_cascade.sv, the twentieth RTL): half the fabric's
# lane-sum adders and their partial-sum registers, against the nineteenth RTL's yosys counts of the same shapes
# (per MAC, least squares through 0 over 8x8 -588 LUT / -372 FF, 2x8x16 -2,011 / -1,062, 4x16x16 -8,925 / -2,742,
# 8x8x8 -4,308 / -1,336; left out, 8x16x16 -18,024 / -4,982: the model's -17,652 / -5,620). Since the twenty-eighth
# RTL the 2x array sums its lane pairs in its DSPs' P too.
CASCADE_LUT_PER_MAC, CASCADE_FF_PER_MAC = -8.62, -2.74
# What the window path's LUTs still miss after the terms above, per MAC of its P x PE_ROWS x VEC array and per pixel
# and lane (the twentieth RTL's yosys counts less the model without these: 2x8x16 +1,919, 4x16x16 -812, 8x8x8
# +3,910, exact on those three; left out, 8x16x16: the model +4.5 %, was +6.4 %; 2x8x16@2x, 4x16x16@2x and
# 8x16x16@2x then within 0.0 %, -0.3 %, +3.2 %, 8x8x8+wino +0.9 %)
WINDOW_LUT_PER_MAC, WINDOW_LUT_PER_PIXEL_LANE = -9.195, 134.4
GROUP_LUT, GROUP_FF = 50, 127     # per result lane and extra tile of a group: its parameters and their choice
SLICED_LUT, SLICED_FF = 12, 75   # per result lane with several epilogue passes: its result held, its pass's select
# The window path's sums per pixel and PE row: the accumulator and the finished group's copy (2 x ACC_BITS), and
# three registers (the array's sum, the bias added, the output buffer) fitted at 32 bits and now ACC_BITS
WINDOW_SUM_FF = 2 * ACC_BITS - 3 * (32 - ACC_BITS)
DEPTHWISE_LUT, DEPTHWISE_LUT_P, DEPTHWISE_FF = 105, 10, 68   # per pixel and lane (+ per pixel squared: the sums)


@dataclass(frozen=True)
class Resources:
    dsp: int
    bram36: int
    uram: int
    lut: int
    ff: int

    def __add__(self, other: "Resources") -> "Resources":
        return Resources(*(a + b for a, b in zip(self.as_tuple(), other.as_tuple())))

    def times(self, k: int) -> "Resources":
        return Resources(*(a * k for a in self.as_tuple()))

    def as_tuple(self) -> tuple[int, ...]:
        return (self.dsp, self.bram36, self.uram, self.lut, self.ff)

    def fits(self, board: Board) -> bool:
        return not self.over_budget(board)

    def over_budget(self, board: Board) -> list[str]:
        """Each resource past the budget, as "DSP 2,240 of zcu104's 1,468 (85 % of 1,728)"."""
        return over_budget(board, asdict(self))

    def share(self, board: Board) -> dict[str, float]:
        return {k: (v / have if have else 0.0) for k, v, have in
                zip(("dsp", "bram36", "uram", "lut"), self.as_tuple()[:4], (board.dsp, board.bram36, board.uram,
                                                                             board.lut))}


BRAM36_SHAPES = ((512, 72), (1024, 36), (2048, 18), (4096, 9), (8192, 4), (16384, 2), (32768, 1))
URAM_SHAPES = ((4096, 72),)


def _memories(depth: int, width_bits: int, shapes=BRAM36_SHAPES) -> int:
    """Block memories for one depth x width RAM: the best of the primitive's aspect ratios."""
    return min(math.ceil(width_bits / w) * math.ceil(depth / d) for d, w in shapes)


def compute_unit(cfg: EngineConfig, board: Board, wbuf_bytes: int, max_width: int, weights_in_uram: bool = False
                 ) -> Resources:
    macs = cfg.array_macs
    lanes = cfg.epilogue_lanes or cfg.granule
    sliced = cfg.granule if cfg.epilogue_passes > 1 else 0     # results held while the passes run
    double = cfg.dsp_clock == 2
    dsp = (math.ceil(macs / (board.int8_macs_per_dsp * cfg.dsp_clock))
           + (VEC_DSP[board.int8_macs_per_dsp] * cfg.vec + L2_FACTOR_DSP if cfg.lane_products else 0)
           + (EPILOGUE_DSP if cfg.residual_stage else EPILOGUE_FIRST_DSP)[board.int8_macs_per_dsp] * lanes
           + CONTROL_DSP[board.int8_macs_per_dsp])
    # the weight RAM: one bank of VEC bytes per PE row, both halves of the ping-pong in it; one row serves
    # every pixel of the array
    rows = -(-wbuf_bytes // (cfg.pe_rows * cfg.vec))
    bank = _memories(2 * rows, cfg.vec * 8, URAM_SHAPES if weights_in_uram else BRAM36_SHAPES)
    bram, uram = (0, cfg.pe_rows * bank) if weights_in_uram else (cfg.pe_rows * bank, 0)
    bram += _memories((cfg.max_kernel + 1) * max_width, cfg.granule * 8) + QUEUE_BRAM
    lut = round(CONTROL_LUT + LAYER_PRODUCTS_LUT + CONTROL_LUT_PER_LANE * cfg.granule + 32.4 * macs + 161 * cfg.vec
                - 752
                + EPILOGUE_LUT * lanes + SLICED_LUT * sliced + PIPE_LUT_PER_VEC * cfg.vec + PIPE_LUT
                - (0 if cfg.residual_stage else (RESIDUAL_LUT + table_lut(cfg.vec)) * lanes)
                - (0 if cfg.activation_tables else table_lut(cfg.vec) * lanes * (2 if cfg.residual_stage else 1))
                - (0 if cfg.lane_products else LANE_PRODUCTS_LUT_PER_VEC * cfg.vec))
    ff = round(CONTROL_FF + LAYER_PRODUCTS_FF + CONTROL_FF_PER_LANE * cfg.granule + 4.3 * macs + 640
               + EPILOGUE_FF * lanes + SLICED_FF * sliced
               + PIPE_FF + PIPE_FF_PER_LANE * cfg.granule
               - (0 if cfg.residual_stage else RESIDUAL_FF * lanes)
               - (0 if cfg.lane_products else LANE_PRODUCTS_FF_PER_VEC * cfg.vec)
               + (PIPE_FF_PER_PAIR * macs / 2 if board.int8_macs_per_dsp == 2 else 0)
               + (DOUBLE_FF + DOUBLE_FF_PER_DSP * macs / 4 if double else 0))
    lut += ROUTE_LUT + (round(DOUBLE_LUT + DOUBLE_LUT_PER_DSP * macs / 4) if double else 0)
    if board.int8_macs_per_dsp == 2:     # lane pairs summed in the DSPs (mac_cascade.sv; at 2x in P, mac_quad.sv)
        lut += round(CASCADE_LUT_PER_MAC * macs)
        ff += round(CASCADE_FF_PER_MAC * macs)
    if cfg.pixels > 1:
        p = cfg.pixels
        dsp += WINDOW_DSP[board.int8_macs_per_dsp]
        bram += p * _memories(cfg.window_words, cfg.vec * 8)
        lut += round(RESIDUAL_QUEUE_LUT + (64 + PIPE_LUT_PER_PIXEL_ROW) * p * cfg.pe_rows
                     + p * cfg.vec * 8 * max(1, p // 4) + GROUP_LUT * cfg.granule * (p - 1)
                     + WINDOW_LUT_PER_MAC * macs + WINDOW_LUT_PER_PIXEL_LANE * p * cfg.vec)
        ff += round(WINDOW_SUM_FF * p * cfg.pe_rows + GROUP_FF * cfg.granule * (p - 1) + PIPE_FF_PER_PIXEL * p
                    + TIMING_FF_PER_LANE * lanes + TIMING_FF_PER_PIXEL * p + TIMING_FF_PER_PIXEL_ROW * p * cfg.pe_rows)
        if cfg.depthwise_rows is not False:
            lut += p * cfg.vec * (DEPTHWISE_LUT + DEPTHWISE_LUT_P * p)
            ff += DEPTHWISE_FF * p * cfg.vec
        if cfg.winograd:
            wl, wf = winograd_unit(cfg)
            lut += wl
            ff += wf
    return Resources(dsp, bram, uram, lut, ff)


def table_lut(vec: int) -> int:
    """One lane's activation table (TABLE_LUT), its beats VEC entries wide; a VEC between two measured ones takes
    the wider one's count."""
    return TABLE_LUT[min((v for v in TABLE_LUT if v >= vec), default=max(TABLE_LUT))]


def units_with_weights(cfg: EngineConfig, board: Board, wbuf_bytes: int, max_width: int, uram_units: int
                       ) -> Resources:
    """The engine's compute units, the first `uram_units` of them with their weights in UltraRAM."""
    in_bram, in_uram = (asdict(compute_unit(cfg, board, wbuf_bytes, max_width, m)) for m in (False, True))
    return Resources(**mixed_units(in_bram, in_uram, cfg.compute_units, uram_units))


def weights_label(uram_units: int, units: int) -> str:
    """Where the units' weights are: "bram", "uram", or "2 uram + 1 bram"."""
    if uram_units in (0, units):
        return "uram" if uram_units else "bram"
    return f"{uram_units} uram + {units - uram_units} bram"


def fewest_uram_units(cfg: EngineConfig, board: Board, wbuf_bytes: int, max_width: int) -> int:
    """The fewest units with weights in UltraRAM for which the engine fits (0 where none does: the build's fit
    check says why)."""
    return next((u for u in weight_mixes(board, cfg.compute_units)
                 if units_with_weights(cfg, board, wbuf_bytes, max_width, u).fits(board)), 0)


def winograd_unit(cfg: EngineConfig) -> tuple[int, int]:
    """(LUT, FF) the window path's Winograd unit adds (winograd_patch.sv, window_conv.sv's accumulator sets),
    counted from the RTL and scaled to yosys (WINOGRAD_LUT_SCALE, WINOGRAD_FF_SCALE): per patch column and lane
    (2P + 2 of them) its four bytes in the strip and again in the patch, and row a of B^T d (a 9-bit add or subtract
    behind two selects) into a register; per tile and lane a 10-bit add or subtract behind two selects and its
    register; per tile and output row three more accumulator sets and their held copies (ACC_BITS each), the four
    sets' adders and the output buffer's 4:1 select; an output row's address step (a 16 x 16-bit product in the
    fabric, LUT_MULT_16, not scaled)."""
    p, v, r = cfg.pixels, cfg.vec, cfg.pe_rows
    columns = 2 * p + 2
    lut = columns * v * 9 * 2 + p * v * 10 * 2 + p * r * ACC_BITS * (4 + 1)
    ff = 2 * 4 * columns * 8 * v + columns * v * 9 + p * v * 10 + 6 * p * r * ACC_BITS
    return (round(WINOGRAD_LUT_SCALE * lut) + LUT_MULT_16[0], round(WINOGRAD_FF_SCALE * ff) + LUT_MULT_16[1])
