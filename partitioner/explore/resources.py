"""Resource model of one engine compute unit, per parameter, fitted to yosys `synth_xilinx -family xcup` of the
RTL engine (`hls_templates/rtl/`, `partition --synth`). DSP and BRAM counts follow from the structure and match
yosys; LUT and FF counts are a fit (Vivado maps LUTs more tightly than yosys: treat them as an upper estimate).

Measured (yosys 0.70, one unit, ABI v2, distributed RAM counted as the LUTs it occupies): the whole 16x16
engine with a 16-lane epilogue 312 DSP, 36.5 BRAM36, 54,269 LUT, 10,106 FF (the model: 312, 37, 55,030,
10,089); the 4-pixel 16x16 engine with an 8-lane epilogue 658 DSP, 46.5 BRAM36, 86,514 LUT, 26,775 FF (the
model: 658, 45, 86,258, 26,175); an 8x8 unit with 8 lanes 152 DSP, 19.5 BRAM36, 35,322 LUT, 7,871 FF (the model:
152, 20, 34,666, 7,871); the MAC stage alone at 8x8, 16x16, 16x32 and 32x16 (2,809 / 9,755 / 21,073 / 18,450
LUT); the epilogue alone at 8 lanes: 48 DSP, 10,497 LUT. Before the activation tables moved into each lane's
LUTRAM (`lut_ram.sv`) the same units took 90,672 / 104,629 / 52,497 LUT and 4,096 FF more, the epilogue alone
26,498 LUT: a 256:1 multiplexer per table bit and lane.

- MAC array: PE_ROWS x VEC int8 multipliers, two per DSP48E2 (UltraScale+, the WP486 packing of mac_pair.sv),
  one per DSP48E1, plus VEC DSPs of the depthwise path. LUTs: 32.4 per MAC + 161 per lane - 752.
- Epilogue, at E of the G = max(PE_ROWS, VEC) result lanes per pass (`EngineConfig.epilogue_lanes`; E = G by
  default): per lane a 32x18 and an 8x18 product, the 8x8 gate and the residual's two 8x18 products (6 DSP; every
  multiplier is below 2^17 since ABI v2), its two copies of the activation tables (16 RAM32M16 each), 64- and
  48-bit rounding shifts (1,000 LUT); with several passes, 38 LUT and 80 FF per result lane to hold and slice
  the result.
- The rest (controller, descriptor and constant fetch, address generator, pool, AXI ports, the L2NORM factor):
  56 DSP, 19,200 LUT, 5,564 FF plus 1 DSP, 607 LUT and 140 FF per result lane (refitted on the three units).
- Weight buffer: `weight_rows` rows of PE_ROWS x VEC bytes, ping-pong: PE_ROWS banks of VEC bytes, each
  2 x weight_rows deep, counted in the block RAM's best aspect ratio (BRAM36 512x72 ... 32Kx1, URAM288
  4Kx72). On parts with UltraRAM the exploration tries the buffer in either.
- Pool line buffer: (max_kernel + 1) rows x widest row x granule bytes; the reader's and writer's queues.
- Window path (pixels P > 1): the array grows to P x PE_ROWS x VEC (one multiplier array shared with the
  per-tap path); P window banks of `window_words` x VEC bytes; per pixel and output channel an accumulator and
  the finished group's copy (2 x 32 FF and LUT), the bank-to-pixel rotation, the residual queue (512 beats of
  LUTRAM), a group's extra tiles' parameters (GROUP_*), 10 DSPs of address arithmetic; the depthwise kernel-row
  path (per pixel and lane: the sums per output of the array's rows, the carry into the group before and that
  group's held sums, the masks of the taps: DEPTHWISE_*), built only where the build's depthwise layers use it
  (`depthwise_rows`; without it they take a tap per step on the array's diagonal). yosys in ABI v1, before the
  refit, 4 x 16 x 16 with an 8-lane epilogue and 2,048-word window banks: 9,284 more LUT and 4,340 more FF with
  the kernel-row logic than without.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from fpga_runtime.abi import EngineConfig
from fpga_runtime.boards import Board, over_budget

QUEUE_BRAM = 3          # the activation reader's run queue and the writer's
EPILOGUE_DSP, EPILOGUE_LUT = 6, 1000         # per epilogue lane (tables in registers read through 256:1 muxes: 3230)
CONTROL_DSP, CONTROL_LUT, CONTROL_FF = 56, 19_200, 5_564
# per result lane (G): its tables, reader and writer; its bias and requantisation registers, two banks of 72 bits
CONTROL_DSP_PER_LANE, CONTROL_LUT_PER_LANE, CONTROL_FF_PER_LANE = 1, 607, 140
WINDOW_DSP = 10           # the window path's address arithmetic (yosys)
RESIDUAL_QUEUE_LUT = 1_400
GROUP_LUT, GROUP_FF = 161, 160     # per result lane and extra tile of a group: its parameters and their choice
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
    dsp = math.ceil(macs / board.int8_macs_per_dsp) + cfg.vec + EPILOGUE_DSP * lanes + CONTROL_DSP \
        + CONTROL_DSP_PER_LANE * cfg.granule
    # the weight RAM: one bank of VEC bytes per PE row, both halves of the ping-pong in it; one row serves
    # every pixel of the array
    rows = -(-wbuf_bytes // (cfg.pe_rows * cfg.vec))
    bank = _memories(2 * rows, cfg.vec * 8, URAM_SHAPES if weights_in_uram else BRAM36_SHAPES)
    bram, uram = (0, cfg.pe_rows * bank) if weights_in_uram else (cfg.pe_rows * bank, 0)
    bram += _memories((cfg.max_kernel + 1) * max_width, cfg.granule * 8) + QUEUE_BRAM
    lut = round(CONTROL_LUT + CONTROL_LUT_PER_LANE * cfg.granule + 32.4 * macs + 161 * cfg.vec - 752
                + EPILOGUE_LUT * lanes + 38 * sliced)
    ff = round(CONTROL_FF + CONTROL_FF_PER_LANE * cfg.granule + 4.3 * macs + 640 + 34 * lanes + 80 * sliced)
    if cfg.pixels > 1:
        p = cfg.pixels
        dsp += WINDOW_DSP
        bram += p * _memories(cfg.window_words, cfg.vec * 8)
        lut += round(RESIDUAL_QUEUE_LUT + 64 * p * cfg.pe_rows + p * cfg.vec * 8 * max(1, p // 4)
                     + GROUP_LUT * cfg.granule * (p - 1))
        ff += 64 * p * cfg.pe_rows + GROUP_FF * cfg.granule * (p - 1)
        if cfg.depthwise_rows is not False:
            lut += p * cfg.vec * (DEPTHWISE_LUT + DEPTHWISE_LUT_P * p)
            ff += DEPTHWISE_FF * p * cfg.vec
    return Resources(dsp, bram, uram, lut, ff)
