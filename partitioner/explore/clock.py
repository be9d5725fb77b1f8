"""The clock an engine design runs at: the board's default fabric clock, or the engine's estimated Fmax where that
is lower. Every cycle count becomes seconds at this clock, so no fps figure assumes a clock the RTL does not reach.

The Fmax comes from a model fitted to the timing estimate (partitioner/codegen/timing.py) of yosys-synthesised
engines (`benchmarks/timing_estimate.py`, its rows in benchmarks/results/timing_estimate.jsonl), since synthesising
every candidate would take minutes each:

    critical path = a + b * log2(PE rows x VEC) + (pixels > 1) * window[pixels]   ns   (a narrow epilogue's
    select and the Winograd unit's path where longer; with the DSPs at twice the clock also twice the DSP clock's
    path)

(wider arrays: wider sums and more fan-out; the window path of P > 1 pixels may add its own, longer paths, whose
stall signal reaches every register of its P x PE rows x VEC array). Since the second pipelining the worst paths
without the window path are in control (the fused pool's emitter, the controller, the address generator's decode),
none in the array, so b is 0: the fit found no dependence on the array's size there; from the seventh to the tenth
the window path's were below them too (c and d 0); after the eleventh a window shape's own worst path was above them
(c its excess), after the twelfth it was not (c 0 again), after the thirteenth the widest window's was again, by
0.018 ns, and from the fourteenth to the twenty-eighth the window shapes' worst paths were 0.014-0.052 ns above
8x8's (3.788 ns, the controller's constant collection); in the twenty-ninth every shape's was one control path
(the address generator's), within 0.008 ns of 8x8's 3.766; in the thirtieth the window shapes' worst path (the
residual queue's pop behind the output buffer's drain) was 0.08 ns above 8x8's 3.555 again; in the thirty-first
0.09-0.21 ns above 8x8's 3.442 (each its own path), 0.33 at 2x on 2 pixels (the step loops' flags); since the
thirty-second 0.03-0.11 ns above 8x8's 3.428, most of them one path, the weights from the weight RAM into the array's
DSPs (block RAM clock-to-out, a row pick and the packed pair's 9-bit subtract), 0.01-0.05 at 2x; since the
thirty-third, whose DSPs' pre-adders make the pair, at most 0.024 ns above it on 1x shapes (2 pixels; 4 and 8
pixels at or below it), 0.036 at 2x (8 pixels: the 2x array's weights through the subtract into a fabric
register); since the thirty-fourth (and ABC9 told the route's delay) none above it, and the Winograd unit's own
term. A slower speed grade scales the path by the ratio its delay model gives on the same netlist. FITS says which
shapes each fit was fitted on and which it was checked on, out of sample; tests/test_timing.py holds both.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

from fpga_runtime.abi import EngineConfig
from fpga_runtime.boards import Board
from fpga_runtime.pl_clocks import PL_PLL_MHZ, clock_at_most, slowest_mmcm_mhz
from partitioner.targets.delay_model import SEVEN_SERIES_1, ULTRASCALE_PLUS_1, ULTRASCALE_PLUS_2LV, delay_model

FIT_TOLERANCE = 0.04      # the fit against the estimates it was fitted on (a errs on the slow side)
CHECK_TOLERANCE = 0.10    # ... and against those it was not


@dataclass(frozen=True)
class FmaxFit:
    board: str                          # the board whose part (and delay model) the estimates are for
    a_ns: float                         # without the window path
    b_ns: float                         # per log2 of the array's PE rows x VEC (0: no dependence found)
    # the window path's worst path above a, per pixel count (2, 4, 8): control paths that yosys/ABC mapped 4-6 LUTs
    # deep by shape in no order of the array's size until the thirty-first RTL; in the thirty-second the weights'
    # way into the array's DSPs, whose fan-out grows with the pixels; since the thirty-third control paths again,
    # none of them above a but on 2 pixels
    window_ns: tuple[tuple[int, float], ...]
    fitted_on: tuple[str, ...]          # benchmark shapes (shape_config) the fit was made from
    checked_on: tuple[str, ...]         # shapes left out of the fit

    # `--dsp-clock 2x`: the fabric's window term (the array's copy of the move register is also the step loops':
    # synthesis merges the two), and the DSP clock's worst path: the DSP's internal stage without the window path
    # (its enable is then a constant), else that register into the DSPs' enables, whose load grows with the array
    # (f0 + f1 * log2 of its MACs)
    window_2x_ns: tuple[tuple[int, float], ...] = ()
    fast_ns: float = 0.0
    fast_f0_ns: float = 0.0
    fast_f1_ns: float = 0.0
    # a narrow epilogue (EngineConfig.epilogue_passes > 1): its pass's operands and tables are picked among passes x
    # pixels candidates, so that select's path by the count of candidates (from that count up), where longer
    narrow_select_ns: tuple[tuple[int, float], ...] = ()
    # the Winograd unit (EngineConfig.winograd): its hold of four output sets makes the window path's output
    # registers' enable longer than a direct engine's, so its worst path where longer
    winograd_ns: float = 0.0

    def critical_ns(self, config: EngineConfig) -> float:
        """The fabric clock period the design needs: its worst fabric path, and with the DSPs at twice the clock
        twice the DSP clock's worst path (timing.py counts those at half the period)."""
        macs = math.log2(config.pixels * config.pe_rows * config.vec)
        fabric = self.a_ns + self.b_ns * math.log2(config.pe_rows * config.vec)
        if config.pixels > 1:
            table = dict(self.window_2x_ns if config.dsp_clock == 2 and self.window_2x_ns else self.window_ns)
            fabric += table[min(table, key=lambda p: (abs(p - config.pixels), -p))]
        candidates = config.epilogue_passes * config.pixels if config.epilogue_passes > 1 else 0
        fabric = max([fabric] + [ns for n, ns in self.narrow_select_ns if candidates >= n]
                     + [self.winograd_ns if config.winograd and config.pixels > 1 else 0.0])
        if config.dsp_clock != 2:
            return fabric
        if config.pixels == 1:
            return max(fabric, 2 * self.fast_ns)
        return max(fabric, 2 * (self.fast_f0_ns + self.fast_f1_ns * macs))


# UltraScale+ -2 (zcu104). The thirty-fifth RTL (the window path's output pixel registers without the reset, so the
# residual queue's valid no longer reaches their enable; a queue's fill count picked from registered neighbours,
# sync_fifo.sv, where synthesis had shared one adder behind the push; docs/timing-history.md): 8x8, its +lean and @2x
# twins, 8x8x8 and 4x16x8:4+wino 3.316 ns (301.5 MHz; the activation reader's run-end flag into its address registers'
# enable, 4 LUTs); 2x8x16, +lean, @2x, 4x16x16, +wino, @2x 3.310 (the same path, 302.2); 8x16x16 and 8x16x16@2x 3.314
# (the window path's start into its pixel loop's one-before-last flag, 5 LUTs); 8x8x8+wino 3.325 (the same, 300.8).
# a = 8x8's; the window terms each pixel count's excess over a, at 2x their @2x twins', none above 0 (the fit errs
# slow by at most 0.006 ns); the Winograd term 8x8x8+wino's worst path (4x16x16+wino and 4x16x8:4+wino, left out, are
# 0.015 and 0.009 ns faster); no narrow term; 14 ZCU104 shapes. The thirty-fourth's: the same a, the Winograd unit's
# 3.339-3.391 ns (the residual queue's valid into the output registers' enable).
# The twenty-eighth RTL (the 2x array's DSP summing two lanes in its P, mac_quad.sv; the
# activation tables one memory a beat wide, and an engine without them) moved no fabric estimate (all 22 rows equal
# the twenty-seventh's); the DSP clock's worst path is now the DSP's own stage on every 2x shape, 1.44 ns (694.4 MHz),
# where the first product's catch took 1.791-1.911 ns: f0 = 1.44, f1 = 0 (fitted on 2x8x16@2x, 4x16x16@2x,
# 8x16x16@2x; 8x8@2x, without the window path, is fast_ns).
# The thirty-third's, thirty-second's, thirty-first's, thirtieth's, twenty-ninth's, twenty-seventh's and earlier
# refits, with the figures each was made from: docs/timing-history.md ("The Fmax model's earlier fits").
ULTRASCALE_FIT = FmaxFit("zcu104", a_ns=3.316, b_ns=0.0, window_ns=((2, 0.0), (4, 0.0), (8, 0.0)),
                         window_2x_ns=((2, 0.0), (4, 0.0), (8, 0.0)),
                         fitted_on=("8x8", "2x8x16", "4x16x16", "8x16x16", "8x8@2x", "2x8x16@2x", "4x16x16@2x",
                                    "8x16x16@2x", "8x8x8+wino"),
                         checked_on=("8x8x8", "8x8+lean", "2x8x16+lean", "4x16x8:4+wino", "4x16x16+wino"),
                         fast_ns=1.44, fast_f0_ns=1.44, fast_f1_ns=0.0, winograd_ns=3.325)
# 7-series -1 (pynq-z2): one synthesised shape (8x8: 8.153 ns since the twenty-fourth RTL, the epilogue's x * m: on a
# DSP48E1 (25 x 18) yosys builds the 27 x 18 product with its rounding half added in a 48-bit fabric carry chain, still
# above the PYNQ-Z2's 100 MHz; the twenty-third's 6.647 was the writer's beat address, a 34-bit sum behind the write
# queue's head; the thirteenth's 7.966 the address generator's row sum into an inferred DSP48E1): a alone, as on
# UltraScale+; not checked on another
SEVEN_SERIES_FIT = FmaxFit("pynq-z2", a_ns=8.153, b_ns=0.0, window_ns=((2, 0.0),),
                           fitted_on=("8x8",), checked_on=())
FITS = {"UltraScale+": ULTRASCALE_FIT, "7-series": SEVEN_SERIES_FIT}
# slower grades: the estimate of one netlist (8x8 on xcup, the RTL before the descriptor was decoded into
# registers; the ratio is the delay models', 1.20-1.21) with their delay model against -2 at 0.85 V
GRADE_SCALE = {ULTRASCALE_PLUS_1.name: 1.2016, ULTRASCALE_PLUS_2LV.name: 1.2109}


def shape_config(shape: str, clock_mhz: float | None = None) -> EngineConfig:
    """The engine a benchmark shape names: `[PIXELSx]ROWSxVEC[:LANES][@2x][+wino][+lean]`, as `partition --engine`
    takes the array (LANES: the epilogue's, 0 for all of them; @2x: `--dsp-clock 2x`; +wino: with the Winograd unit;
    +lean: without the optional parts a build of convolutions alone leaves out, engine_parts.py).
    benchmarks/timing_estimate.py names its rows so, and FmaxFit.fitted_on/checked_on name those rows."""
    shape, *extras = shape.split("+")
    if set(extras) - {"wino", "lean"} or len(set(extras)) < len(extras):
        raise ValueError(f"{shape}+{'+'.join(extras)}: the suffixes are +wino and +lean")
    shape, _, clock = shape.partition("@")
    if clock not in ("", "1x", "2x"):
        raise ValueError(f"{shape}@{clock}: the DSP clock is @1x or @2x")
    spec, _, lanes = shape.partition(":")
    fields = {} if clock_mhz is None else {"clock_mhz": clock_mhz}
    lean = "lean" in extras
    return EngineConfig.from_shape(spec, epilogue_lanes=int(lanes or 0), dsp_clock=2 if clock == "2x" else 1,
                                   winograd="wino" in extras, lane_products=not lean, residual_stage=not lean,
                                   activation_tables=not lean, **fields)


def rtl_digest() -> str:
    """A digest of the engine's RTL templates: the estimates a fit was made from belong to one RTL."""
    from hls_templates import RTL
    h = hashlib.sha256()
    for path in sorted(p for p in RTL.rglob("*") if p.suffix in (".sv", ".svh", ".j2")):
        h.update(path.relative_to(RTL).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def estimated_fmax_mhz(board: Board, config: EngineConfig) -> float:
    """The RTL engine's estimated Fmax for this shape on this board's part (speed grade included)."""
    model = delay_model(board.family, board.part)
    fit = FITS["7-series" if model is SEVEN_SERIES_1 else "UltraScale+"]
    return 1000.0 / (fit.critical_ns(config) * GRADE_SCALE.get(model.name, 1.0))


def design_clock(board: Board, config: EngineConfig) -> tuple[float, str]:
    """(MHz, what limits it): the lower of the board's default clock and the engine's estimated Fmax, as the
    overlay makes it (fpga_runtime/pl_clocks.py): the fastest clock its MMCM makes not above that (a clock it
    cannot make would be rounded up, past the estimate), on a board without a PS the board's
    clock, or the Fmax rounded down to 5 MHz."""
    fmax = estimated_fmax_mhz(board, config)
    why = "board" if fmax >= board.clock_mhz else "timing"
    if board.family not in PL_PLL_MHZ:
        return (board.clock_mhz if why == "board" else max(5.0, math.floor(fmax / 5.0) * 5.0)), why
    return overlay_clock(board, min(board.clock_mhz, fmax), config.dsp_clock), why


def overlay_clock(board: Board, mhz: float, dsp_clock: int = 1) -> float:
    """`mhz` as the board's overlay makes it: on a Zynq the fastest clock its MMCM makes not above it, to the kHz
    the IP's FREQ_HZ and the overlay's clock are written in (a ValueError below the slowest it makes); elsewhere
    (Alveo: the shell's clock) `mhz`."""
    if board.family not in PL_PLL_MHZ:
        return mhz
    made = clock_at_most(board.family, mhz, dsp_clock)
    if made is None:
        raise ValueError(f"{mhz:g} MHz is below the slowest engine clock the overlay's MMCM makes on {board.name} "
                         f"({slowest_mmcm_mhz(board.family, dsp_clock):g} MHz)")
    return round(made, 3)


def fixed_engine_clock(board: Board, engine: EngineConfig, asked: float | None, fpga: bool
                       ) -> tuple[float, list[str]]:
    """(clock, warnings) of a fixed engine: `asked` (--clock-mhz) where given, else the one the engine asks for but
    no more than it reaches (warned where it is built for the FPGA); as the overlay makes it."""
    if asked is not None:
        return overlay_clock(board, asked, engine.dsp_clock), []
    reached, _ = design_clock(board, engine)
    if engine.clock_mhz > reached and fpga:
        return reached, [f"engine clock {engine.clock_mhz:g} MHz lowered to {reached:g} MHz, the engine's estimated "
                         f"Fmax on {board.name} (partitioner/explore/clock.py); --clock-mhz fixes it"]
    return overlay_clock(board, engine.clock_mhz, engine.dsp_clock), []


def asked_clock_warnings(board: Board, engine: EngineConfig, asked: float) -> list[str]:
    """What --clock-mhz `asked` comes to in the build running `engine`: the clock the overlay's MMCM makes below
    it, and a clock above the engine's estimated Fmax."""
    out = []
    if engine.clock_mhz != asked:
        out.append(f"--clock-mhz {asked:g}: the overlay's MMCM makes {engine.clock_mhz:g} MHz, the fastest clock it "
                   "makes not above that (fpga_runtime/pl_clocks.py); the build runs at it")
    fmax = estimated_fmax_mhz(board, engine)
    if engine.clock_mhz > fmax:
        out.append(f"--clock-mhz {asked:g} is above this engine's estimated Fmax on {board.name} ({fmax:.0f} MHz, "
                   f"partitioner/explore/clock.py): every time and rate here assumes {engine.clock_mhz:g} MHz, which "
                   "only a routed design that meets it makes true")
    return out
