"""Design-space exploration and the resource model."""
from __future__ import annotations

import re
from dataclasses import replace

import pytest
from ir_helpers import ir_of

from fpga_runtime.abi import EngineConfig
from fpga_runtime.boards import BOARDS, board
from fpga_runtime.engine_image import ENGINE_DIR, EngineImage
from partitioner.build import PartitionConfig, run_partition
from partitioner.explore.design_space import explore
from partitioner.explore.resources import Resources, compute_unit
from partitioner.passes.pipeline import run_fusion
from partitioner.placement.cost import CostModel
from partitioner.placement.partition import Device, partition
from partitioner.targets import fpga


def _fpga_nodes(path):
    import onnx
    g = run_fusion(ir_of(onnx.load(str(path))))
    p = partition(g, fpga, CostModel(board("zcu104")), offload_everything=True)
    sgs = [s for s in p.subgraphs if s.device is Device.FPGA]
    return g, [n for s in sgs for n in s.nodes], len(sgs)


def test_resource_model_per_parameter():
    """DSPs as yosys counts them for the pipelined RTL (198 for a 16x16 unit on xcup: 128 packed MAC pairs, 1 per VEC
    lane, 3 per epilogue lane, 6 for control; 202 before the twenty-seventh RTL moved a layer's three products into
    the fabric); LUTs and FFs within a few per cent of yosys's 39,193 and 25,326 (the thirty-third RTL; the
    twenty-eighth's were 39,641 and 24,272, the eleventh pipelining's 44,959 and 27,667). An 8x8 unit (392 weight
    rows): yosys 70 DSP, 19.5
    BRAM36, 21,635 LUT, 17,198 FF (benchmarks/results/timing_estimate.jsonl); on the PYNQ-Z2's DSP48E1s (one product
    each: 2 per VEC lane, 4 per epilogue lane, the 27 x 18 requantisation product in two; 25-bit operands, so the
    pixel addresses' and a constant run's 27-bit products take 4 more) 122 DSP."""
    zcu = board("zcu104")
    small = compute_unit(EngineConfig(vec=16, pe_rows=16), zcu, 147456, 208)
    assert small.dsp == 16 * 16 // 2 + 16 + 3 * 16 + 6 == 198                  # two int8 MACs per DSP48E2
    assert abs(small.lut / 39_193 - 1) < 0.05 and abs(small.ff / 25_326 - 1) < 0.05
    tiny = compute_unit(EngineConfig(vec=8, pe_rows=8), zcu, 392 * 64, 32)
    assert tiny.dsp == 8 * 8 // 2 + 8 + 3 * 8 + 6 == 70 and abs(tiny.bram36 - 19.5) <= 1
    assert abs(tiny.lut / 21_635 - 1) < 0.05 and abs(tiny.ff / 17_198 - 1) < 0.05
    assert compute_unit(EngineConfig(vec=16, pe_rows=16), board("pynq-z2"), 147456, 208).dsp == 256 + 32 + 64 + 10
    assert compute_unit(EngineConfig(vec=8, pe_rows=8), board("pynq-z2"), 392 * 64, 32).dsp == 122
    narrow = compute_unit(EngineConfig(vec=16, pe_rows=16, epilogue_lanes=8), zcu, 147456, 208)
    assert narrow.dsp == small.dsp - 8 * 3 and narrow.lut < small.lut      # 8 lanes fewer
    bigger = compute_unit(EngineConfig(vec=32, pe_rows=16), zcu, 147456 * 2, 208)
    assert bigger.dsp > small.dsp and bigger.bram36 > small.bram36 and bigger.lut > small.lut
    in_uram = compute_unit(EngineConfig(vec=16, pe_rows=16), zcu, 147456, 208, weights_in_uram=True)
    assert in_uram.uram > 0 and in_uram.bram36 < small.bram36


def test_resource_model_of_the_window_path():
    """yosys on the 4-pixel 16x16 unit (the pipelined RTL, full epilogue, 512-word window banks, 196 weight rows,
    depthwise on the array's diagonal): 585 DSP, 46.5 BRAM36, 56,391 LUT, 47,795 FF (the thirty-fifth RTL; among the
    shapes the LUT terms were fitted on). The weight RAM stays
    PE_ROWS x VEC bytes wide whatever the pixels: only the window's banks grow with them."""
    zcu = board("zcu104")
    full = compute_unit(EngineConfig(pixels=4, window_words=512, depthwise_rows=False), zcu, 196 * 256, 32)
    assert full.dsp == 4 * 16 * 16 // 2 + 16 + 3 * 16 + 6 + 3 == 585
    assert abs(full.bram36 - 46.5) <= 3
    assert abs(full.lut / 56_391 - 1) < 0.05 and abs(full.ff / 47_795 - 1) < 0.05
    # 8 pixels (the KV260's choice for the big detectors), fitted on neither: yosys 1,097 DSP, 75,264 LUT, 72,492 FF
    # on the thirty-fifth RTL (the model's LUTs a few per cent high, on the safe side)
    eight = compute_unit(EngineConfig(pixels=8, window_words=512, depthwise_rows=False), zcu, 147456, 208)
    assert eight.dsp == 8 * 16 * 16 // 2 + 16 + 3 * 16 + 6 + 3 == 1097
    assert 0 < eight.lut / 75_264 - 1 < 0.05 and abs(eight.ff / 72_492 - 1) < 0.05
    plain = compute_unit(EngineConfig(pixels=4, epilogue_lanes=8, window_words=512, depthwise_rows=False), zcu,
                         196 * 256, 32)
    assert plain.dsp == full.dsp - 8 * 3 and plain.lut < full.lut
    unit = compute_unit(EngineConfig(pixels=4, epilogue_lanes=8, window_words=2048), zcu, 196 * 256, 32)
    assert unit.dsp == plain.dsp and unit.lut > plain.lut and unit.bram36 > plain.bram36   # kernel rows, banks
    one = compute_unit(EngineConfig(pixels=1, epilogue_lanes=8), zcu, 196 * 256, 32)
    eight = compute_unit(EngineConfig(pixels=8, epilogue_lanes=8, window_words=2048), zcu, 196 * 256, 32)
    assert eight.bram36 - unit.bram36 == 4 * 8 and unit.bram36 - one.bram36 == 4 * 8     # 8 BRAM36 per bank


def test_resource_model_of_a_narrow_epilogue():
    """Engines whose epilogue takes half the result lanes a pass (yosys): 2x16x16:8 305 DSP, 38,130 LUT, 33,749 FF
    (the thirty-third RTL: the model's FFs +5.1 %, as the timing rounds' terms were fitted on full epilogues);
    4x16x16:8 561 DSP, 47,299 LUT (the twenty-eighth RTL, its FFs not counted since; the 27-bit sums' change fitted
    on it on the twenty-fifth RTL, checked on the first). Three DSPs fewer per lane left out; the tables' and the
    pass's selects within the LUTs."""
    zcu = board("zcu104")
    for shape, dsp, lut, ff in (((2, 16, 16), 305, 38_130, 33_749), ((4, 16, 16), 561, 47_299, None)):
        p, r, v = shape
        cfg = EngineConfig(vec=v, pe_rows=r, pixels=p, epilogue_lanes=8, depthwise_rows=False)
        unit = compute_unit(cfg, zcu, cfg.weight_rows * r * v, 32)
        assert unit.dsp == dsp == p * r * v // 2 + v + 3 * 8 + 6 + 3
        assert abs(unit.lut / lut - 1) < 0.03 and (ff is None or abs(unit.ff / ff - 1) < 0.06)


def test_resource_model_of_the_winograd_unit():
    """The Winograd unit's LUTs and FFs (yosys: the engine with the unit less the same shape without it,
    benchmarks/results/timing_estimate.jsonl). The twenty-seventh RTL holds the patch's bytes and forms each row sum
    of B^T d with one adder when it is read, not four held sums: 4x16x16 +17,138 LUT, +23,475 FF (fitted), 8x8x8
    +16,040 / +22,181 (checked: the model +4.5 %, +0.4 %; the twenty-eighth's the same but 8x8x8's +16,032 LUT);
    the twenty-fifth's were +21,725 / +23,944 and +20,258 / +22,586, so the unit's LUTs fell by a fifth. Its output
    row step is a product in the fabric (lut_mult.sv): the unit takes no DSP of its own, and yosys counts the same
    DSPs with it as without (585 and 297 both ways)."""
    from partitioner.explore.resources import winograd_unit
    lut, ff = winograd_unit(EngineConfig.from_shape("4x16x16"))
    assert abs(lut / 17_138 - 1) < 0.02 and abs(ff / 23_475 - 1) < 0.02
    lut, ff = winograd_unit(EngineConfig.from_shape("8x8x8"))
    assert abs(lut / 16_032 - 1) < 0.05 and abs(ff / 22_181 - 1) < 0.05
    zcu = board("zcu104")
    plain = compute_unit(EngineConfig(pixels=4, window_words=512, depthwise_rows=False), zcu, 196 * 256, 32)
    unit = compute_unit(EngineConfig(pixels=4, window_words=512, depthwise_rows=False, winograd=True), zcu,
                        196 * 256, 32)
    assert unit.dsp == plain.dsp == 585 and unit.lut - plain.lut == winograd_unit(EngineConfig(pixels=4))[0]


def test_resource_model_of_weights_in_ultraram():
    """yosys on the twenty-sixth RTL with WEIGHT_URAM set (benchmarks/timing_estimate.py 4x16x16+wino+uram and
    8x8+uram, the weight RAM at the rows the golden cases need): 32 and 8 URAM288, 14.5 and 3.5 BRAM36 (46.5 and
    19.5 with the weights in block RAM), the same DSPs and LUTs within 0.1 % and the same estimated Fmax. The model
    counts the UltraRAMs exactly and the block RAM left within 1.5."""
    from dataclasses import replace as with_

    from partitioner.engine.geometry import engine_limits
    from partitioner.explore.clock import shape_config
    zcu = board("zcu104")
    for shape, uram, bram in (("4x16x16+wino", 32, 14.5), ("8x8", 8, 3.5)):
        cfg = shape_config(shape)
        limits = engine_limits([], cfg)
        cfg = with_(cfg, weight_rows=limits["weight_rows"], window_words=limits["window_words"],
                    depthwise_rows=limits["depthwise_rows"])
        got = compute_unit(cfg, zcu, limits["wbuf_bytes"], limits["pool_width"], weights_in_uram=True)
        assert got.uram == uram and abs(got.bram36 - bram) <= 1.5, shape


def test_resource_model_of_an_engine_without_its_optional_parts():
    """yosys (the twenty-eighth RTL, benchmarks/results/timing_estimate.jsonl), each shape and its +lean twin (no
    lane products, no residual stage, no activation tables): the DSPs exact (a VEC lane's packed product, the L2
    factor's, two a result lane); the LUT and FF terms fitted exactly on 8x8 and 4x16x16:8, the tables counted from
    lut_ram.sv alone (TABLE_LUT); 2x8x16, 16x16 and 4x16x16 left out (the LUTs saved 11,588, 11,479 and 11,431, the
    model 11,760 each). The whole unit's count within 6 % of yosys on each but the smallest, 8x8+lean: -4.1 %
    (-5.5 % on the twenty-seventh RTL). The flip-flops since the timing rounds' registers (TIMING_FF*): against the
    thirty-third RTL's counts where it was synthesised, within 5 %."""
    from dataclasses import replace

    from partitioner.engine.geometry import engine_limits
    from partitioner.explore.clock import shape_config
    zcu = board("zcu104")
    yosys = {"8x8": (70, 21_635, 17_198), "8x8+lean": (45, 17_002, 15_771),
             "4x16x16:8": (561, 47_299, 44_647), "4x16x16:8+lean": (528, 40_868, 43_180),
             "2x8x16": (201, 42_437, 30_998), "2x8x16+lean": (152, 30_849, 28_371),
             "16x16": (198, 39_641, 24_272), "16x16+lean": (149, 28_162, 21_709),
             "4x16x16": (585, 54_567, 46_320), "4x16x16+lean": (536, 43_136, 43_757)}
    ff_33 = {"8x8": 17_960, "8x8+lean": 16_460, "2x8x16": 32_376, "2x8x16+lean": 29_588, "4x16x16": 47_699,
             "16x16": 25_326}
    units = {}
    for shape, (dsp, lut, _) in yosys.items():
        cfg = shape_config(shape)
        limits = engine_limits([], cfg)
        cfg = replace(cfg, weight_rows=limits["weight_rows"], window_words=limits["window_words"],
                      depthwise_rows=limits["depthwise_rows"])
        unit = units[shape] = compute_unit(cfg, zcu, limits["wbuf_bytes"], limits["pool_width"])
        assert unit.dsp == dsp, shape
        assert abs(unit.lut / lut - 1) < (0.065 if shape == "8x8+lean" else 0.06), shape
        if shape in ff_33:
            assert abs(unit.ff / ff_33[shape] - 1) < 0.05, shape
    for shape, lanes, vec in (("8x8", 8, 8), ("4x16x16:8", 8, 16), ("2x8x16", 16, 16), ("16x16", 16, 16),
                              ("4x16x16", 16, 16)):
        full, lean = units[shape], units[shape + "+lean"]
        assert full.dsp - lean.dsp == vec + 1 + 2 * lanes
        saved = yosys[shape][1] - yosys[shape + "+lean"][1]
        assert abs((full.lut - lean.lut) / saved - 1) < (0.03 if shape in ("16x16", "4x16x16") else 0.15), shape


def _synthesised_units(digest: str) -> list[tuple[str, EngineConfig, dict, Resources]]:
    """Each ZCU104 shape yosys synthesised on one RTL (benchmarks/results/timing_estimate.jsonl): its name, its
    config with the buffers the compiler sizes, its row, and the resource model's unit for it."""
    import json
    from pathlib import Path

    from partitioner.engine.geometry import engine_limits
    from partitioner.explore.clock import shape_config
    results = Path(__file__).resolve().parent.parent / "benchmarks" / "results" / "timing_estimate.jsonl"
    rows = {r["shape"]: r for r in map(json.loads, results.read_text().splitlines())
            if r["rtl_digest"] == digest and r["board"] == "zcu104"}
    zcu = board("zcu104")
    out = []
    for shape, row in rows.items():
        cfg = shape_config(shape)
        limits = engine_limits([], cfg)
        cfg = replace(cfg, weight_rows=limits["weight_rows"], window_words=limits["window_words"],
                      depthwise_rows=limits["depthwise_rows"])
        out.append((shape, cfg, row, compute_unit(cfg, zcu, limits["wbuf_bytes"], limits["pool_width"])))
    return out


def test_resource_model_registers_of_the_thirty_third_rtl():
    """The registers the timing rounds added to the window path's engines (TIMING_FF*, resources.py: per epilogue
    lane, per pixel and per pixel and PE row) against yosys on the thirty-third RTL
    (benchmarks/results/timing_estimate.jsonl): exact on the three window shapes they were fitted on, within 1.5 %
    on the window shapes left out (2x clock, Winograd unit, lean and four-pass epilogues, 8x16x16; before them the
    model was 1.4-6.4 % under); the one-pixel engines, which the terms leave alone, within 5 %."""
    units = _synthesised_units("825dbc24d1120838")
    fitted = {"2x8x16", "4x16x16", "8x8x8"}
    assert len(units) == 14 and fitted < {shape for shape, *_ in units}
    for shape, cfg, row, unit in units:
        assert unit.dsp == row["DSP"], shape
        tolerance = 0.001 if shape in fitted else 0.015 if cfg.pixels > 1 else 0.05
        assert abs(unit.ff / row["FF"] - 1) < tolerance, (shape, unit.ff, row["FF"])


def test_resource_model_against_the_thirty_fifth_rtl():
    """The LUT terms of synthesis's route-aware mapping and of the 2x array's weight picks (ROUTE_LUT,
    DOUBLE_LUT_PER_DSP, resources.py), fitted on 8x8, 2x8x16, 4x16x16 and 4x16x16@2x of the thirty-fifth RTL
    (benchmarks/results/timing_estimate.jsonl), against yosys: within 2 % on those, within 3.5 % on the other nine
    shapes but the four-pass epilogue with the Winograd unit (8.2 % under, as the model was before the terms); the
    terms took the model from 3-9 % under to either side. DSPs exact; flip-flops as on the thirty-third."""
    units = _synthesised_units("db622998fe18b90d")
    fitted = {"8x8", "2x8x16", "4x16x16", "4x16x16@2x"}
    assert len(units) == 14 and fitted < {shape for shape, *_ in units}
    for shape, cfg, row, unit in units:
        assert unit.dsp == row["DSP"], shape
        assert abs(unit.ff / row["FF"] - 1) < (0.015 if cfg.pixels > 1 else 0.05), (shape, unit.ff, row["FF"])
        error = unit.lut / row["LUT"] - 1
        if shape == "4x16x8:4+wino":
            assert -0.09 < error < -0.07, (shape, unit.lut, row["LUT"])
        else:
            assert abs(error) < (0.02 if shape in fitted else 0.035), (shape, unit.lut, row["LUT"])
    assert sum(unit.lut > row["LUT"] for _, _, row, unit in units) >= 5    # no longer under on (nearly) every shape


def test_the_exploration_counts_only_the_parts_a_model_uses(zoo):
    """Each candidate has the optional parts (engine_parts.py) the model's layers use, as its build will: for
    YOLOv3-tiny (convs, pools, copies) only the tables of its leaky ReLUs, the second-operand stage for residual
    blocks (and the tables, for the ReLU after the add), the lane products for an L2 norm, and for depthwise convs
    only on an engine without the window path; SSD-MobileNet's ReLU6 is a clamp, so no tables."""
    from partitioner.explore.design_space import _Layers
    from partitioner.explore.resources import table_lut
    b = board("zcu104")
    for name, size, window, one_pixel in (("yolov3-tiny", 96, (False, False, True), (False, False, True)),
                                          ("resblock", None, (False, True, True), (False, True, True)),
                                          ("ssd-mobilenet-v1", 96, (False, False, False), (True, False, False))):
        g, nodes, _ = _fpga_nodes(zoo(name, size) if size else zoo(name))
        layers = _Layers(g, nodes)
        for pixels, want in ((4, window), (1, one_pixel)):
            c = layers.sized(EngineConfig(vec=8, pe_rows=8, pixels=pixels))
            assert (c.lane_products, c.residual_stage, c.activation_tables) == want, (name, pixels)
            full = compute_unit(replace(c, lane_products=True, residual_stage=True, activation_tables=True), b,
                                147456, 32)
            lean = compute_unit(c, b, 147456, 32)
            assert full.dsp - lean.dsp == (0 if c.lane_products else 8 + 1) + (0 if c.residual_stage else 2 * 8)
            tables = compute_unit(replace(c, activation_tables=True), b, 147456, 32)
            assert tables.lut - lean.lut == (0 if c.activation_tables
                                             else table_lut(8) * 8 * (2 if c.residual_stage else 1)), (name, pixels)


def test_resource_model_of_the_double_pumped_array():
    """`--dsp-clock 2x`: one DSP per four MACs of the array (mac_quad.sv: two lanes of two rows, the lane pair
    summed in its P), the rest unchanged; its fabric registers and LUTs per DSP (yosys, the thirty-fifth RTL: 8x8 54
    DSP against 70, 19,416 FF, 446 LUT more than the 1x unit, whose lane pairs sum in cascaded DSPs; 4x16x16 329 DSP
    against 585, 63,013 LUT, 69,556 FF, 6,622 LUT more, the lanes' weight picks in front of the DSPs' A and D;
    2x8x16, not fitted on, 137 DSP, 44,457 LUT, 37,913 FF). The twenty-seventh RTL's 2x array, which summed every
    product in the fabric, took 4x16x16 to 65,929 LUT and 84,913 FF."""
    zcu = board("zcu104")
    one = compute_unit(EngineConfig(vec=8, pe_rows=8), zcu, 392 * 64, 32)
    two = compute_unit(EngineConfig(vec=8, pe_rows=8, dsp_clock=2), zcu, 392 * 64, 32)
    assert one.dsp - two.dsp == 8 * 8 // 4 == 16 and two.dsp == 54
    assert abs(two.ff / 19_416 - 1) < 0.05 and abs((two.lut - one.lut) / 446 - 1) < 0.1
    window = compute_unit(EngineConfig(pixels=4, window_words=512, depthwise_rows=False, dsp_clock=2), zcu,
                          196 * 256, 32)
    assert window.dsp == 4 * 16 * 16 // 4 + 16 + 3 * 16 + 6 + 3 == 329
    assert abs(window.lut / 63_013 - 1) < 0.05 and abs(window.ff / 69_556 - 1) < 0.05
    one_window = compute_unit(EngineConfig(pixels=4, window_words=512, depthwise_rows=False), zcu, 196 * 256, 32)
    assert abs((window.lut - one_window.lut) / 6_622 - 1) < 0.15
    pair = compute_unit(EngineConfig(vec=16, pe_rows=8, pixels=2, window_words=512, depthwise_rows=False,
                                     dsp_clock=2), zcu, 196 * 128, 32)
    assert pair.dsp == 137 and abs(pair.lut / 44_457 - 1) < 0.06 and abs(pair.ff / 37_913 - 1) < 0.05


def test_the_exploration_takes_the_double_pumped_array_only_when_asked(zoo):
    """Every candidate of a `--dsp-clock 2x` exploration has its DSPs at twice the clock (PE rows and lanes in twos),
    none of a default one; the 2x array fits at least the MACs the 1x one does on the same board."""
    g, nodes, n = _fpga_nodes(zoo("yolov3-tiny", 128))
    b = board("zcu104")
    plain = explore(g, nodes, n, b)
    double = explore(g, nodes, n, b, dsp_clock=2)
    assert all(d.config.dsp_clock == 1 for d in plain.feasible)
    assert double.feasible and all(d.config.dsp_clock == 2 and d.config.pe_rows % 2 == 0 == d.config.vec % 2
                                     for d in double.feasible)
    assert double.chosen.resources.fits(b)
    biggest = max(d.config.array_macs * d.config.compute_units for d in plain.feasible)
    assert max(d.config.array_macs * d.config.compute_units for d in double.feasible) >= biggest


def test_the_exploration_weighs_the_winograd_unit_only_when_asked(zoo):
    """`--winograd auto`: window-path candidates also with the Winograd unit, which costs LUTs and FFs (and a DSP)
    and, at its estimated Fmax, clock; auto takes a conv as Winograd only where the cycle model makes it faster, so
    no such design takes more cycles than the same array without the unit and some take fewer (YOLOv3-tiny-416's
    26x26 convs); a default exploration has none."""
    g, nodes, n = _fpga_nodes(zoo("yolov3-tiny", 416))
    b = board("zcu104")
    plain = explore(g, nodes, n, b)
    wino = explore(g, nodes, n, b, winograd="auto")
    assert not any(d.config.winograd for d in plain.feasible)
    units = [d for d in wino.feasible if d.config.winograd]
    assert units and all(d.config.pixels > 1 for d in units)
    twins = {(d.config.pixels, d.config.pe_rows, d.config.vec, d.config.compute_units, d.config.epilogue_lanes,
              d.config.weight_rows, d.weights_in): d for d in wino.feasible if not d.config.winograd}
    compared, faster = 0, 0
    for d in units:
        twin = twins.get((d.config.pixels, d.config.pe_rows, d.config.vec, d.config.compute_units,
                          d.config.epilogue_lanes, d.config.weight_rows, d.weights_in))
        if twin is None:
            continue
        compared += 1
        assert d.resources.lut > twin.resources.lut and d.resources.ff > twin.resources.ff
        # the unit's own path sets its clock (clock.py): no faster than the twin's; in cycles no slower
        assert d.config.clock_mhz <= twin.config.clock_mhz
        cycles, twin_cycles = d.frame_s * d.config.clock_mhz, twin.frame_s * twin.config.clock_mhz
        assert cycles <= twin_cycles * (1 + 1e-9)
        faster += cycles < twin_cycles
    assert compared and faster


@pytest.mark.parametrize("name", sorted(BOARDS))
def test_chosen_design_fits_and_is_fastest(zoo, name):
    g, nodes, n = _fpga_nodes(zoo("yolov3-tiny", 128))
    b = board(name)
    ex = explore(g, nodes, n, b)
    assert ex.chosen is not None and ex.chosen.resources.fits(b)
    assert ex.chosen.fps >= max(d.fps for d in ex.feasible) - 1e-9
    assert 0 < ex.chosen.mac_utilisation <= 1


def test_the_exploration_adds_units_while_they_fit(zoo):
    """Compute units are copies: the exploration tries up to six (their AXI masters share the PS's HP ports), and a
    design of k units takes k times one unit's resources (u of them with their weights in UltraRAM: u times that
    unit's), so more units of an array that fits are feasible up to the budget and no further."""
    from partitioner.explore.design_space import UNITS
    g, nodes, n = _fpga_nodes(zoo("yolov3-tiny", 128))
    b = board("zcu104")
    ex = explore(g, nodes, n, b)
    assert max(UNITS) >= 5
    most: dict = {}
    for d in ex.feasible:
        one = replace(d.config, compute_units=1)
        unit = {e.weights_in: e.resources for e in ex.feasible if e.config == one}
        k, u = d.config.compute_units, d.uram_units
        # (a unit in one memory is feasible alone wherever k units with some in it are)
        assert d.resources == sum((unit[m].times(n) for m, n in (("bram", k - u), ("uram", u)) if n),
                                  Resources(0, 0, 0, 0, 0))
        if u in (0, k):
            key = (one, d.weights_in)
            most[key] = (max(most.get(key, (0, unit[d.weights_in]))[0], k), unit[d.weights_in])
    assert max(k for k, _ in most.values()) >= 5
    assert any(0 < d.uram_units < d.config.compute_units for d in ex.feasible)
    for k, unit in most.values():
        assert k == max(UNITS) or not unit.times(k + 1).fits(b)


def test_units_may_keep_their_weights_in_different_memories():
    """Three 4-pixel Winograd units at 512 weight rows: all weights in block RAM overrun the BRAM budget, all in
    UltraRAM the URAM budget (32 URAM288 a unit: 16 banks of 128 bits, 1,024 deep), two in UltraRAM and one in block
    RAM fit, and that is what the build gives the overlay. The overlay sets each instance's memory, so any mix is a
    design on a Zynq part; an Alveo build links one kernel for every unit (all or none); without UltraRAM, none."""
    from fpga_runtime.boards import weight_mixes
    from partitioner.explore.resources import fewest_uram_units, units_with_weights, weights_label
    cfg = EngineConfig(pixels=4, epilogue_lanes=8, winograd=True, compute_units=3, weight_rows=512,
                       window_words=2048, lane_products=False, residual_stage=False, depthwise_rows=False)
    zcu = board("zcu104")
    wbuf = 512 * 16 * 16
    mixes = {u: units_with_weights(cfg, zcu, wbuf, 416, u) for u in weight_mixes(zcu, 3)}
    assert set(mixes) == {0, 1, 2, 3}
    assert [k for k, r in mixes.items() if r.fits(zcu)] == [2] == [fewest_uram_units(cfg, zcu, wbuf, 416)]
    assert any(o.startswith("BRAM36") for o in mixes[0].over_budget(zcu))
    assert any(o.startswith("URAM") for o in mixes[3].over_budget(zcu))
    unit_bram, unit_uram = (compute_unit(replace(cfg, compute_units=1), zcu, wbuf, 416, m) for m in (False, True))
    assert unit_uram.uram == 32 and unit_bram.uram == 0
    assert mixes[2] == unit_uram.times(2) + unit_bram
    assert weight_mixes(board("alveo-u250"), 3) == (0, 3) and weight_mixes(board("pynq-z2"), 3) == (0,)
    assert [weights_label(u, 3) for u in range(4)] == ["bram", "1 uram + 2 bram", "2 uram + 1 bram", "uram"]


def test_target_fps_picks_the_smallest_design_that_meets_it(zoo):
    g, nodes, n = _fpga_nodes(zoo("yolov3-tiny", 128))
    b = board("zcu104")
    fastest = explore(g, nodes, n, b).chosen
    modest = explore(g, nodes, n, b, target_fps=fastest.fps / 4)
    assert modest.chosen.fps >= fastest.fps / 4
    assert modest.chosen.resources.dsp < fastest.resources.dsp
    impossible = explore(g, nodes, n, b, target_fps=fastest.fps * 100)
    assert "no design reaches" in impossible.note and impossible.chosen.fps == pytest.approx(fastest.fps)


def _stages(path):
    import onnx

    from partitioner.explore.draft import full_offload_draft
    g = run_fusion(ir_of(onnx.load(str(path))))
    nodes, n, stages = full_offload_draft(g, board("zcu104"))
    return g, nodes, n, stages


def test_objectives_rank_whole_frames_by_the_runtime_schedule(zoo):
    """With the draft partition's stages, every feasible design gets a whole-frame rate (CPU stages included,
    the runtime's frames in flight and workers) and a one-frame latency; "throughput" picks the highest rate,
    "latency" the shortest frame, and a frame is never faster than its FPGA layers or its CPU stages alone."""
    from partitioner.explore.design_space import OBJECTIVES, ranked
    g, nodes, n, stages = _stages(zoo("ssd-mobilenet-v1", 128))
    assert {s.device for s in stages} == {"cpu", "fpga"}
    b = board("zcu104")
    fast = explore(g, nodes, n, b, objective="throughput", stages=stages)
    quick = explore(g, nodes, n, b, objective="latency", stages=stages)
    cpu_s = sum(s.fixed_s for s in stages if s.device == "cpu")
    for d in fast.feasible:
        assert d.frame_fps is not None and 0 < d.frame_fps <= d.fps * 1.0001
        assert d.latency_s >= d.frame_s / d.config.compute_units and d.latency_s >= cpu_s
    assert fast.chosen.frame_fps >= 0.99 * max(d.frame_fps for d in fast.feasible)
    assert quick.chosen.latency_s <= 1.01 * min(d.latency_s for d in quick.feasible)
    # each objective's pick is at least as good as the other's on its own criterion (they may coincide)
    assert quick.chosen.latency_s <= fast.chosen.latency_s and fast.chosen.frame_fps >= quick.chosen.frame_fps
    order = ranked(fast)
    assert order[0].config == fast.chosen.config and order[1].config != order[0].config
    # "fpga": the FPGA layers' own frames/s, whole frames breaking ties within TIE
    engine = explore(g, nodes, n, b, objective="fpga", stages=stages)
    top = max(d.fps for d in engine.feasible)
    assert engine.chosen.fps >= 0.99 * top and engine.chosen.fps >= 0.99 * fast.chosen.fps     # up to TIE
    assert engine.chosen.rate >= max(d.rate for d in engine.feasible if d.fps >= 0.99 * top) * 0.9999
    assert OBJECTIVES == ("throughput", "latency", "fpga")
    with pytest.raises(ValueError, match="objective must be one of throughput, latency, fpga"):
        explore(g, nodes, n, b, objective="fps")


def test_fpga_objective_keeps_the_split_its_engine_layers_run_fastest_under(zoo):
    """A branch split's extra FPGA subgraphs are program starts, FPGA time: under "fpga" each design keeps the
    split with the most FPGA frames/s (the fewest subgraphs), whatever the whole frames give (SSD's heads split
    off in up to 18 subgraphs; its whole frames are CPU-bound under every split), and so its FPGA rate is at least
    the throughput pick's."""
    from partitioner.explore.choice import choose_design
    from partitioner.explore.design_space import TIE
    from partitioner.frontend.importer import import_model
    from partitioner.passes.pipeline import run_fusion
    g = run_fusion(import_model(zoo("ssd-mobilenet-v1", 300)).graph)
    b = board("zcu104")
    fast = choose_design(g, b, objective="throughput")
    engine = choose_design(g, b, objective="fpga")
    counts = sorted(o.split.fpga_subgraphs for o in engine.splits)
    assert counts[-1] > counts[0]                            # splits to choose from: the case in point
    assert engine.chosen.split.fpga_subgraphs == counts[0]
    for outcome in engine.splits:                            # each split's best design, as fast up to TIE
        assert engine.chosen.fps >= outcome.best.fps * (1 - TIE)
    assert engine.chosen.fps >= fast.chosen.fps


def test_cpu_bound_designs_are_said_to_be(zoo):
    """Where the CPU stages' work per frame on the runtime's workers exceeds the engine's, the design is
    CPU-bound and its rate is the CPU's, whatever the engine."""
    from dataclasses import replace

    from fpga_runtime.run.policy import CPU_WORKERS
    g, nodes, n, stages = _stages(zoo("ssd-mobilenet-v1", 128))
    slow = [replace(s, fixed_s=0.5) if s.device == "cpu" else s for s in stages]     # half a second each
    ex = explore(g, nodes, n, board("zcu104"), stages=slow)
    cpu = sum(s.fixed_s for s in slow if s.device == "cpu")
    assert all(d.cpu_bound for d in ex.feasible)
    assert ex.chosen.frame_fps == pytest.approx(CPU_WORKERS / cpu, rel=0.02)


def test_build_reports_both_objectives_for_chosen_and_runner_up(tmp_path, zoo):
    """`--objective latency` builds the shortest-frame design; the report shows rate and latency for the chosen
    design and the runner-up."""
    from click.testing import CliRunner

    from partitioner.cli import main
    out = tmp_path / "b"
    result = CliRunner().invoke(main, [str(zoo("ssd-mobilenet-v1", 96)), "-o", str(out), "--no-picture",
                                       "--no-accuracy", "--objective", "latency"])
    assert result.exit_code == 0, result.output
    report = (out / "report.md").read_text()
    assert "objective: latency" in report and "shortest frame (whole frames)" in report
    lines = report.splitlines()
    header = next(line for line in lines if line.startswith("|  | pixels x PE rows x VEC"))
    column = {name.strip(): i for i, name in enumerate(header.strip("|").split("|"))}
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines
            if line.startswith("| chosen") or line.startswith("| runner-up")]
    assert len(rows) == 2
    rate, latency = column["frames/s (fpga-run)"], column["latency ms"]
    for cells in rows:
        assert float(cells[rate].split()[0]) > 0 and float(cells[latency]) > 0
        assert cells[column["depthwise per step"]] in ("kernel row", "tap")   # SSD-MobileNet has depthwise layers
        assert cells[column["DSP clock"]] == "1x"                               # the default
    # the chosen frame is the shorter, up to the exploration's tie (within it the higher rate wins)
    from partitioner.explore.design_space import TIE
    chosen, runner_up = rows
    assert float(chosen[latency]) <= float(runner_up[latency]) * (1 + TIE)
    if float(chosen[latency]) > float(runner_up[latency]):
        assert float(chosen[rate]) >= float(runner_up[rate])
    bad = CliRunner().invoke(main, [str(zoo("ssd-mobilenet-v1", 96)), "-o", str(tmp_path / "c"), "--objective", "fps"])
    assert bad.exit_code == 2 and "Invalid value for '--objective'" in bad.output


def test_build_uses_the_explored_design(tmp_path, zoo):
    result = run_partition(PartitionConfig(model=zoo("yolov3-tiny", 96), out_dir=tmp_path / "b", board="kv260",
                                           picture=False, accuracy=False))
    chosen = result.exploration.chosen.config
    assert result.plan.engine_config["vec"] == chosen.vec and result.plan.engine_config["pe_rows"] == chosen.pe_rows
    header = (tmp_path / "b" / "fpga" / "hls" / "engine_config.h").read_text()
    assert f"#define ENGINE_VEC {chosen.vec}" in header and f"#define ENGINE_PE_ROWS {chosen.pe_rows}" in header
    assert "Engine design" in (tmp_path / "b" / "report.md").read_text()


def test_predict_gives_the_steady_rate_the_report_gives(tmp_path, zoo):
    """`fpga-run predict` with its defaults prints the long-stream rate the exploration chose the design by (the
    report's frames/s), not one frame's 1/latency."""
    from click.testing import CliRunner

    from fpga_runtime import predict
    from fpga_runtime.cli import main as fpga_run
    out = tmp_path / "b"
    result = run_partition(PartitionConfig(model=zoo("yolov3-tiny", 96), out_dir=out, board="kv260",
                                           picture=False, accuracy=False))
    chosen = result.exploration.chosen
    p = predict(out)
    assert p.steady_fps == pytest.approx(chosen.frame_fps, rel=0.02)
    assert p.steady_fps > p.fps * 1.2                       # one frame alone is not the stream's rate
    shown = CliRunner().invoke(fpga_run, ["predict", str(out)])
    assert shown.exit_code == 0, shown.output
    row = next(line for line in shown.output.splitlines() if line.startswith("| kv260"))
    assert float(row.split("|")[3]) == pytest.approx(chosen.frame_fps, rel=0.02)
    assert f"Engine clock {chosen.config.clock_mhz:g} MHz on kv260" in shown.output


@pytest.mark.parametrize(
    "args,message",
    [
        (
            ["--engine", "64x64"],
            r"error: engine 64x64 x 1 unit does not fit zcu104: needs DSP [\d,]+ of zcu104's 1,641 "
            r"\(95% of 1,728\)",
        ),
        (
            ["--engine", "16x16", "--compute-units", "9", "--board", "pynq-z2"],
            r"error: engine 16x16 x 9 units does not fit pynq-z2: needs DSP [\d,]+ of pynq-z2's 209",
        ),
        (
            ["--compute-units", "48"],
            r"error: no engine design fits zcu104: the smallest, 8x8 \(epilogue 2 lanes\) x 48 units, "
            r"needs DSP",
        ),
        (
            ["--target-fps", "1e9"],
            r"error: --target-fps 1e\+09: no engine design reaches it on zcu104; the fastest that "
            r"fits, (\d+x)?\d+x\d+( \(epilogue \d+ lanes\))? x \d units?, gives [\d.]+ fps \(modelled\)",
        ),
        (["--target-fps", "0"], r"Invalid value for '--target-fps'"),
        (["--engine", "16"], r"'16': expected ROWSxVEC or PIXELSxROWSxVEC"),
        (["--engine", "12x16"], r"'12x16': PE rows and VEC must each be 8, 16, 32 or 64"),
        (["--engine", "3x16x16"], r"'3x16x16': pixels must be 1, 2, 4, 8 or 16"),
        (["--dsp-clock", "2x", "--board", "pynq-z2"], r"--dsp-clock.*2x needs UltraScale\+ DSP48E2s"),
        (["--dsp-clock", "2x", "--board", "alveo-u250"], r"--dsp-clock.*aligned edges from one MMCM"),
        (["--dsp-clock", "2x", "--engine-impl", "hls"], r"--dsp-clock 2x is the RTL engine's"),
        (["--dsp-clock", "3x"], r"Invalid value for '--dsp-clock'"),
    ],
)
def test_budgets_and_targets_are_enforced(tmp_path, zoo, args, message):
    """A design that does not fit the board, or a rate no design reaches, is one line and exit 2, and nothing
    is written."""
    import re

    from click.testing import CliRunner

    from partitioner.cli import main
    out = tmp_path / "b"
    result = CliRunner().invoke(main, [str(zoo("yolov3-tiny", 96)), "-o", str(out), "--no-picture", "--no-accuracy",
                                       *args])
    assert result.exit_code == 2, result.output
    assert re.search(message, result.output), result.output
    assert not (out / "plan.json").exists()


def test_predict_refuses_a_board_the_engine_does_not_fit(tmp_path, zoo):
    """The plan records one unit's estimated resources per board; predict refuses a board or a unit count that
    does not fit, in one line."""
    from click.testing import CliRunner

    from fpga_runtime.cli import main as fpga_run
    out = tmp_path / "b"
    run_partition(PartitionConfig(model=zoo("yolov3-tiny", 96), out_dir=out, picture=False, accuracy=False,
                                  engine=EngineConfig(vec=16, pe_rows=16)))
    fits = CliRunner().invoke(fpga_run, ["predict", str(out), "--board", "kv260"])
    assert fits.exit_code == 0, fits.output
    small = CliRunner().invoke(fpga_run, ["predict", str(out), "--board", "pynq-z2"])
    assert small.exit_code == 2
    # a build of convolutions alone: no lane products (32 DSP48E1s and the L2 factor's), no second-operand stage
    # (two DSPs a lane)
    assert not EngineImage.load(out / ENGINE_DIR).config.residual_stage
    assert ("error: engine 16x16 x 1 unit does not fit pynq-z2: needs DSP 297 of pynq-z2's 209 (95% of 220)\n"
            in small.output)                                                      # each resource over the budget
    assert "BRAM" not in small.output and "LUT" not in small.output               # ... and only those
    many = CliRunner().invoke(fpga_run, ["predict", str(out), "--compute-units", "12"])
    assert many.exit_code == 2 and "x 12 units does not fit zcu104: needs DSP" in many.output
    # units may keep their weights in different memories: three that fit only as two in UltraRAM and one in
    # block RAM (all in BRAM: 339 BRAM36 of 265; all in URAM: 96 of 81) are predicted, four are not
    import json
    plan = json.loads((out / "plan.json").read_text())
    plan["unit_resources"]["zcu104"] = {"dsp": 500, "bram36": 113, "uram": 0, "lut": 60_000, "ff": 60_000,
                                        "uram_weights": {"bram36": 49, "uram": 32}}
    (out / "plan.json").write_text(json.dumps(plan))
    three = CliRunner().invoke(fpga_run, ["predict", str(out), "--compute-units", "3"])
    assert three.exit_code == 0, three.output
    four = CliRunner().invoke(fpga_run, ["predict", str(out), "--compute-units", "4"])
    assert four.exit_code == 2 and "x 4 units does not fit zcu104" in four.output
    plan["unit_resources"]["zcu104"]["uram_weights"] = {"uram": "32"}
    (out / "plan.json").write_text(json.dumps(plan))
    bad = CliRunner().invoke(fpga_run, ["predict", str(out), "--compute-units", "3"])
    assert bad.exit_code == 2 and "unit_resources['zcu104']: not one unit's" in bad.output, bad.output


def test_a_board_no_engine_fits_gets_a_cpu_build_that_says_why(tmp_path, zoo, monkeypatch):
    from dataclasses import replace

    import fpga_runtime.boards as boards
    monkeypatch.setitem(boards.BOARDS, "pynq-z2", replace(boards.BOARDS["pynq-z2"], dsp=80))
    result = run_partition(PartitionConfig(model=zoo("yolov3-tiny", 96), out_dir=tmp_path / "b", board="pynq-z2",
                                           picture=False, accuracy=False))
    assert all(sg.device == "cpu" for sg in result.plan.subgraphs)
    assert not (tmp_path / "b" / "fpga").exists()
    why = "no engine design fits pynq-z2: the smallest, 8x8 (epilogue 2 lanes) x 1 unit, needs DSP 77 of pynq-z2's 76"
    assert any(w.startswith(why) and w.endswith("every layer stays on the CPU") for w in result.warnings)
    assert why in (tmp_path / "b" / "report.md").read_text()


def test_the_clock_is_what_the_engine_reaches_unless_fixed(tmp_path, zoo):
    """A fixed engine asking for more than its estimated Fmax runs at the Fmax (warned); --clock-mhz fixes the
    clock, above the estimate with a warning in the report, as the overlay's MMCM makes it."""
    from partitioner.explore.clock import design_clock, estimated_fmax_mhz
    model = zoo("two-branch")
    # the KV260's -2LV part: an engine the ZCU104's -2 runs at its 300 MHz is estimated below the KV260's 250
    asked = EngineConfig(vec=8, pe_rows=8, clock_mhz=250)
    reached, why = design_clock(BOARDS["kv260"], asked)
    assert why == "timing" and reached < 250
    lowered = run_partition(PartitionConfig(model=model, out_dir=tmp_path / "a", picture=False, accuracy=False,
                                            board="kv260", engine=asked))
    assert lowered.plan.engine_config["clock_mhz"] == reached
    assert any("lowered to" in w for w in lowered.warnings)
    fixed = run_partition(PartitionConfig(model=model, out_dir=tmp_path / "b", picture=False, accuracy=False,
                                          clock_mhz=312.5))
    # the premise: 312.5 MHz (an MMCM step) is above what the chosen engine reaches; once an engine reaches it, this
    # test needs a faster clock, not a weaker check
    assert estimated_fmax_mhz(BOARDS["zcu104"], EngineConfig(**fixed.plan.engine_config)) < 312.5
    assert fixed.plan.engine_config["clock_mhz"] == 312.5
    assert any("--clock-mhz 312.5 is above" in w for w in fixed.warnings)
    # a clock the overlay's MMCM does not make (100 MHz x eighths over a whole divisor): the one below it, warned
    rounded = run_partition(PartitionConfig(model=model, out_dir=tmp_path / "d", picture=False, accuracy=False,
                                            clock_mhz=276))
    assert rounded.plan.engine_config["clock_mhz"] == 275
    assert any("--clock-mhz 276: the overlay's MMCM makes 275 MHz" in w for w in rounded.warnings)
    assert "**above** this engine's estimated Fmax" in (tmp_path / "b" / "report.md").read_text()
    explored = run_partition(PartitionConfig(model=model, out_dir=tmp_path / "c", picture=False, accuracy=False))
    config = explored.plan.engine_config
    assert config["clock_mhz"] == design_clock(BOARDS["zcu104"], EngineConfig(**config))[0] <= 300
    m = re.search(r"The overlay makes it with an MMCM from the processor's 100 MHz PL clock 0 \(x ([\d.]+) / (\d+),",
                  (tmp_path / "c" / "report.md").read_text())
    assert m and 100 * float(m.group(1)) / int(m.group(2)) == pytest.approx(config["clock_mhz"], abs=1e-3)
