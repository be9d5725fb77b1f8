"""The clock an engine design runs at: the board's default fabric clock, or the engine's estimated Fmax where that
is lower. Every cycle count becomes seconds at this clock, so no fps figure assumes a clock the RTL does not reach.

The Fmax comes from a model fitted to the timing estimate (partitioner/codegen/timing.py) of yosys-synthesised
engines (`benchmarks/timing_estimate.py`, its rows in benchmarks/results/timing_estimate.jsonl), since synthesising
every candidate would take minutes each:

    critical path = a + b * log2(PE rows x VEC) + (pixels > 1) * window[pixels]   ns   (a narrow epilogue's
    select where longer; with the DSPs at twice the clock also twice the DSP clock's path)

(wider arrays: wider sums and more fan-out; the window path of P > 1 pixels may add its own, longer paths, whose
stall signal reaches every register of its P x PE rows x VEC array). Since the second pipelining the worst paths
without the window path are in control (the fused pool's emitter, the controller, the address generator's decode),
none in the array, so b is 0: the fit found no dependence on the array's size there; from the seventh to the tenth
the window path's were below them too (c and d 0); after the eleventh a window shape's own worst path was above them
(c its excess), after the twelfth it was not (c 0 again), after the thirteenth the widest window's was again, by
0.018 ns, and from the fourteenth to the twenty-eighth the window shapes' worst paths were 0.014-0.052 ns above
8x8's (3.788 ns, the controller's constant collection); in the twenty-ninth every shape's was one control path
(the address generator's), within 0.008 ns of 8x8's 3.766; since the thirtieth the window shapes' worst path (the
residual queue's pop behind the output buffer's drain) is 0.08 ns above 8x8's 3.555 again, 0.28 at 2x on 2 pixels
(the step loops' flags). A slower
speed grade scales the path by the ratio its delay model gives on the same netlist. FITS says which shapes each fit
was fitted on and which it was checked on, out of sample; tests/test_timing.py holds both.
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
    # the window path's worst path above a, per pixel count (2, 4, 8): in the eighteenth RTL its step loops'
    # enables and resets, which yosys/ABC mapped 4-6 LUTs deep by shape in no order of the array's size; since the
    # nineteenth the step's readiness (2 and 4 pixels) or the layer decoder's group fit (8x8x8)
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

    def critical_ns(self, config: EngineConfig) -> float:
        """The fabric clock period the design needs: its worst fabric path, and with the DSPs at twice the clock
        twice the DSP clock's worst path (timing.py counts those at half the period)."""
        macs = math.log2(config.pixels * config.pe_rows * config.vec)
        fabric = self.a_ns + self.b_ns * math.log2(config.pe_rows * config.vec)
        if config.pixels > 1:
            table = dict(self.window_2x_ns if config.dsp_clock == 2 and self.window_2x_ns else self.window_ns)
            fabric += table[min(table, key=lambda p: (abs(p - config.pixels), -p))]
        candidates = config.epilogue_passes * config.pixels if config.epilogue_passes > 1 else 0
        fabric = max([fabric] + [ns for n, ns in self.narrow_select_ns if candidates >= n])
        if config.dsp_clock != 2:
            return fabric
        if config.pixels == 1:
            return max(fabric, 2 * self.fast_ns)
        return max(fabric, 2 * (self.fast_f0_ns + self.fast_f1_ns * macs))


# UltraScale+ -2 (zcu104). The thirtieth RTL (the Winograd residual walk's own copy of the nest's step; the
# descriptor's window check split; the weights' row picks as per-row registers; the burst writer's lengths' pop on
# a copy of the data queue's valid; the reader's queue flags from kept next pointers; the window path's per-layer
# origin steps, slot bases, output coordinates and step count in registers, the hold's set addresses summed as a
# group comes in, the output buffer read at a pointer, not shifted; the MAC stage's copy address over two stages;
# the control port's counter pick without a subtract): 8x8 3.555 ns (281.3 MHz; the address generator's window-path
# decode into its residual flags, 5 LUTs), was 3.766; every window shape 3.634-3.640 (274.7-275.2; the residual
# queue's pop behind the output buffer's drain and the layer's flag, 5 LUTs), 8x8x8 3.600, 2x8x16@2x 3.831 (the step
# loops' group-last flag into the beat loop's, 6 LUTs); 4x16x8:4+wino unchanged (3.894, the narrow select). a = 8x8's,
# the window terms each pixel count's worst excess (2x8x16, 4x16x16, 8x16x16; at 2x their @2x twins), fitted on
# those; a shorter series than the twenty-ninth's (14 ZCU104 shapes, was 19): left unsynthesised 2x16x16:8, 4x16x16:8,
# 4x16x16:8+lean, 16x16+lean and 4x16x16+lean, which the twenty-ninth checked on.
# The twenty-ninth RTL (the window path's group end, hold move, accumulator enable and step
# fire as registers set a cycle ahead; the writer's skid register; the constant run's request a register; the tap
# loop's moves as flat ANDs on a start of its own; the descriptor's checks split; the MAC stage's first-beat flag
# compared at P1; the narrow epilogue's pass picked by one-hot registers; the Winograd hold's counts from T2's
# registers): every shape's worst path but 4x16x8:4+wino's is now one path, the address generator's nest step into
# its Winograd residual walk's group registers (nest_en_q -> grp_narrow, 5 LUTs), 3.766-3.774 ns (265.0-265.5 MHz)
# over 18 shapes, where the twenty-eighth's were 3.789-3.922 (255.0-263.9): a = 8x8's 3.766, the window terms its
# 0.003-0.007 ns excess; the Winograd unit's terms (w0 + w1 log2 pixels + wv log2 VEC, where longer) gone from the
# model (its shapes' worst path is that one: 4x16x16+wino and 8x8x8+wino checked on, the model within 0.001 ns); the
# narrow select of 16 candidates (4x16x8:4+wino) 3.894 ns, was 5.629 (177.6 -> 256.8 MHz), the pass's one-hot
# select into the lane's residual sum ahead of its DSP (5 LUTs, 12 carry bits).
# The twenty-eighth RTL (the 2x array's DSP summing two lanes in its P, mac_quad.sv; the
# activation tables one memory a beat wide, and an engine without them) moved no fabric estimate (all 22 rows equal
# the twenty-seventh's); the DSP clock's worst path is now the DSP's own stage on every 2x shape, 1.44 ns (694.4 MHz),
# where the first product's catch took 1.791-1.911 ns: f0 = 1.44, f1 = 0 (fitted on 2x8x16@2x, 4x16x16@2x,
# 8x16x16@2x; 8x8@2x, without the window path, is fast_ns).
# The twenty-seventh RTL (the Winograd patch's row sums formed as read; a layer's three
# products and the Winograd row step in the fabric, lut_mult.sv) moved no shape's estimate by more than 0.01 ns
# but three: 8x8x8 3.887 (was 3.976, fitted on: the model 2.3 % slow there), 8x16x16 and 8x16x16@2x 3.922 (3.890,
# 3.914: a 7-LUT path of the descriptor's checks, layer_descriptor.ok_pool_q). Not refitted.
# The twenty-sixth RTL (each unit's weight RAM UltraRAM or block RAM by its WEIGHT_URAM,
# ram_style set either way) moved no shape's estimate: every row equals the twenty-fifth's, and with the weights in
# UltraRAM (4x16x16+wino+uram, 8x8+uram) too, whose worst paths are the same control paths. Not refitted.
# The twenty-fifth RTL (every sum in 27 bits, engine_pkg::ACC_W) moved no fitted shape's
# estimate by more than 0.03 ns (the same paths): 8x16x16 3.890 (was 3.911), 8x16x16@2x 3.913 (3.935), 8x8x8+wino
# 3.946 (3.956), 4x16x8:4+wino 5.629 (5.619); 8x8+lean, checked on, 3.813 (3.789: now the MAC stage's first-beat
# flag, 5 LUTs). Not refitted.
# The twenty-fourth RTL (ABI v3: the requantisation's x * m one 27 x 18 DSP48E2 product, not two) moved no worst
# path but 4x16x8:4+wino's, 5.624 -> 5.619 ns (the narrow epilogue's select, refitted); the chosen SSD-MobileNet
# design, 4x16x16+lean, is checked on (256.2 MHz, as 4x16x16).
# The twenty-third RTL (the optional parts: lane products and the epilogue's second-operand
# stage, left out where a build has no layer using them) moved no shape's worst path: every full shape's estimate
# is the twenty-second's; without the parts (+lean, checked on, not fitted) 8x8 and 4x16x16:8 reach their full
# twins' 263.9 and 255.8 MHz (the same control paths), so the fit leaves the parts out of its terms.
# The twenty-second RTL (the layer tables' running copy in flip-flops, no bank select; the
# narrow epilogue's pass by plain selects): every shape's worst path as the twenty-first's, and now checked on
# engines with a narrow epilogue, which no fit had synthesised: 2x16x16:8 was 8.069 ns (123.9 MHz: the pass counter
# through a part-select at a computed offset, 9 LUTs and a DSP48E2 inferred without registers) and is 3.886 (its
# window's readiness, as 2x8x16's); 4x16x16:8 4.011 (the pass counter, at a load of 2,146, into the queue's pop
# through the epilogue's readiness) and, with that readiness in a register, 3.909 (the tap-loop flag, as 4x16x16's).
# Left out of the fit, both: the model 3.885 and 3.903 ns. A narrow epilogue of four passes on a 4-pixel engine,
# 4x16x8:4+wino (the exploration's YOLOv3 pick with the Winograd unit, had it been credited 250 MHz), reaches 177.8
# MHz: its 16 candidates of a pass's tables (passes x tiles) chained 9 LUTs deep from the select, 5.624 ns: the
# narrow_select term, fitted on it alone (no engine with 16 candidates is left to check it on; 8, on 4x16x16:8,
# showed no such path). Its Winograd path, 4.093 ns (the hold's set count, 24 carry bits), is slower than
# 4x16x16+wino's (below its 3.909 worst path) and 8x8x8+wino's (3.956, 12 carry bits): with VEC 8 the path is
# longer, so the w terms take log2(VEC) too (at most 16's: no wider engine with the unit synthesised), fitted on the
# three Winograd shapes (4x16x16+wino at its worst path, an upper bound of its Winograd path): three shapes for
# three terms, none left to check them on.
# The twenty-first RTL (the Winograd unit's residual walk in the address generator, the
# fused pool's ring taking a Winograd pair's rows interleaved): 1x 3.789 ns on 8x8, 3.885 on 2x8x16, 3.977 on 8x8x8
# and 3.911 on 8x16x16 as before, 3.903 on 4x16x16 (was 3.870: the tile's start into the address generator's tap
# loop flags, 6 LUTs, a mapping yosys chose for the unchanged loop); with the Winograd unit 3.909 on 4x16x16+wino
# (was 3.905) and 3.956 on 8x8x8+wino; 2x: 3.789 on 8x8@2x, 3.885 on 2x8x16@2x, 3.903 on 4x16x16@2x (was 3.885, the
# same path as 4x16x16's), 3.934 on 8x16x16@2x; the DSP clock's 1.44-1.912 ns as before. The 4-pixel window terms
# (1x and 2x) and the w terms refitted; left out, 8x16x16: the model 3.977, 1.7 % slow.
# The twentieth RTL (the array's lane pairs summed in cascaded DSPs, ARRAY_LATENCY 6; the
# Winograd sets without a bias select): 1x 3.789 ns on 8x8, 3.885 on 2x8x16, 3.870 on 4x16x16, 3.977 on 8x8x8 as
# before; 2x as before but 3.935 on 8x16x16@2x (the window path's RAM read enable into itself, 4 LUTs; was 3.887),
# the DSP clock's 1.44-1.912 ns as before (f terms refitted within 0.02 ns); with the Winograd unit 3.905 and 3.956
# as before. Left out, 8x16x16: 3.911 ns (the same read enable; the model 3.976, 1.7 % slow). Every window term
# within 0.002 ns of the nineteenth's but the 8-pixel 2x one.
# The nineteenth RTL (the window path's rotated words registered before the array, the pixels'
# input bounds compared a stage after T0's offsets, the step loops' counters without the reset, the loops' copy of
# the move register unmergeable with the 2x array's): 1x 3.789 ns on 8x8 (unchanged), 3.885 on 2x8x16, 3.868 on
# 4x16x16 (was 4.143), 3.887 on 8x16x16 and 3.976 on 8x8x8 (the layer decoder's group fit, unchanged); 2x 3.788,
# 3.885, 3.885 (4x16x16@2x, was 4.539), 3.887; the window shapes' worst path is now the step's readiness into
# itself (5 LUTs through the fire and the row change). With the Winograd unit 3.905 on 4x16x16+wino (was 4.462) and
# 3.956 on 8x8x8+wino (was 4.935; its worst path the hold's set counts): the w terms, fitted on both, are no longer
# above the direct shapes' by more than 0.04 ns. Window terms per pixel count, fitted on one shape each; left out,
# 8x16x16 (the 8-pixel term from 8x8x8: the model 2.3 % slow there).
# The eighteenth RTL (the Winograd unit's V from two registered selects, several output tiles
# per Winograd pass, the step loops on their own copy of the move register, which yosys merges with the array's in
# 2x): 1x 3.789 ns on 8x8, 3.801 on 2x8x16, 4.143 on 4x16x16 (the step loops' set, 5 LUTs from their `active`),
# 3.976 on 8x8x8 (the layer decoder's group fit), 3.840 on 8x16x16 (the window's bank rotation into the array; stop
# 56's 4.324 gone); 2x 3.788, 3.833, 4.539 (4x16x16@2x: the shared copy into the step loops' set), 3.954; the DSP
# clock's 1.44-1.911 ns as before; with the Winograd unit 4.462 on 4x16x16+wino and 4.935 on 8x8x8+wino (the window
# words' bank rotation and the select between them and V into the array, 5 and 6 LUTs: the w terms, fitted on
# both, not checked on a third). No smooth function of the array's size fits the window shapes (4 pixels is the
# slowest), so the window term is per pixel count, fitted on one shape each; left out, 8x16x16 (the 8-pixel term
# from 8x8x8: the model 3.5 % slow there).
# The seventeenth RTL (the window path's Winograd unit, built only where used; the fused
# pool's unread rows let through): 1x 3.789 ns on 8x8, 3.801 on 2x8x16 as before, but 4.324 on 8x16x16 (was 3.840):
# the window path's move register into its step counters' enables, 5 LUTs at a load of 811, a mapping yosys/ABC
# chose for the unchanged counters (the RTL of those loops is the sixteenth's; what moved is around them); 2x:
# 3.788, 3.802, 4.330 on 8x8@2x, 2x8x16@2x, 8x16x16@2x (the same fabric paths; the DSP clock's 1.911 ns unchanged),
# 3.867 on 4x16x16@2x (the window's row flags). The e term takes 8x16x16 (fitted); left out, 4x16x16 and
# 4x16x16@2x. The sixteenth RTL (the epilogue's merged products, the 2x array's own copy of the window
# path's move register, the depthwise row masks' taps a register earlier): 1x as the fifteenth's (3.789 ns on 8x8,
# 3.801 on 2x8x16 and 4x16x16, 3.840 on 8x16x16); 2x: the fabric's worst paths are now the 1x shapes' (3.788, 3.802,
# 3.801 ns on 8x8@2x, 2x8x16@2x, 4x16x16@2x: the window path no longer shares its register with the DSPs' enables,
# so the e terms that modelled that load are gone), and 8x16x16@2x is bound by its DSP clock: 1.911 ns, twice that
# 3.822 (261.6 MHz, was 251.5); the DSP clock's worst paths 1.44, 1.791, 1.872, 1.911 ns, the f terms unchanged
# (within 0.3 %). Fitted and checked on the same shapes as before.
# The fifteenth RTL (the double-pumped array, `--dsp-clock 2x`, beside the unchanged 1x one):
# 1x 3.789 ns on 8x8, 3.801 on 2x8x16 and 4x16x16, 3.840 on 8x16x16, as the fourteenth's, so a, c, d stay; 2x:
# 3.788 on 8x8@2x (no window path: the DSPs' enable is a constant; the DSP clock's worst path, 1.44 ns, is the DSP's
# own stage), 3.858 on 2x8x16@2x and 3.935 on 4x16x16@2x, the window path's move register (which also enables every
# DSP of the array) into the window path's counters, slower as its load grows; the DSP clock's worst path that
# register into the first product's catch, 1.797 and 1.873 ns (556.6 and 534.0 MHz DSP clock). The 2x terms are
# fitted on those three (exact); out of sample, 8x16x16@2x: 3.976 ns (251.5 MHz; the model 3.974) and its DSP clock's
# worst path 1.912 ns (the model 1.911). The fourteenth pipelining's RTL: 3.788 ns on 8x8
# (264.0 MHz; the controller's collection into its run-issued flag, 6 LUTs), 3.802 on 2x8x16 and 3.801 on 4x16x16
# (the same path), 3.840 on 8x16x16 (the window path's bank rotation into the array's DSP inputs, 260.4 MHz). a is
# 8x8's; the window term (c, d) takes 2x8x16 and 8x16x16 to within 0.001 ns above them, so no shape synthesised
# runs above its own estimate (the KV260's clock of 214.3 MHz needs 3.854 ns at -2: every shape makes it now); b is 0
# (no array term). Fitted on 8x8, 2x8x16 and 8x16x16; left out: 4x16x16, the model 0.7 % slow there. The
# thirteenth's: 3.840 ns on 8x8, 2x8x16 and 4x16x16, 3.858 on 8x16x16 (a = 3.840, c = -0.048, d = 0.006)
ULTRASCALE_FIT = FmaxFit("zcu104", a_ns=3.555, b_ns=0.0, window_ns=((2, 0.080), (4, 0.085), (8, 0.085)),
                         window_2x_ns=((2, 0.276), (4, 0.083), (8, 0.083)),
                         fitted_on=("8x8", "2x8x16", "4x16x16", "8x16x16", "8x8@2x", "2x8x16@2x", "4x16x16@2x",
                                    "8x16x16@2x", "4x16x8:4+wino"),
                         checked_on=("8x8x8", "8x8+lean", "2x8x16+lean", "4x16x16+wino", "8x8x8+wino"),
                         fast_ns=1.44, fast_f0_ns=1.44, fast_f1_ns=0.0, narrow_select_ns=((16, 3.894),))
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
