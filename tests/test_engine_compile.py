"""The engine compiler's small parts on their own: memory arenas, calibration thresholds, descriptor geometry."""
from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from graphs import Net
from ir_helpers import ir_of
from onnx import helper

from fpga_runtime.abi import ALIGN, EngineConfig, Flag
from partitioner.engine.calibration import _least_squared_error, _percentile
from partitioner.engine.geometry import (
    GOLDEN_TILE_INPUTS,
    GOLDEN_WIDTH,
    conv_descriptor,
    conv_output_hw,
    engine_limits,
    layer_shape,
)
from partitioner.engine.memory import ActivationArena, ConstArena
from partitioner.passes.pipeline import run_fusion


def test_constant_arena_aligns_every_chunk_and_keeps_its_bytes():
    arena = ConstArena()
    addrs = [arena.put(b"\x01" * n) for n in (1, ALIGN, ALIGN + 3)]
    assert addrs == [0, ALIGN, 2 * ALIGN]
    image = arena.image()
    assert len(image) == arena.size == 4 * ALIGN
    assert image[:1] == b"\x01" and image[1:ALIGN] == b"\0" * (ALIGN - 1)
    assert image[2 * ALIGN:3 * ALIGN + 3] == b"\x01" * (ALIGN + 3)


def test_activation_arena_never_overlaps_two_buffers():
    arena = ActivationArena()
    spans = [(arena.alloc(n), n) for n in (5, 64, 200, 1)]
    for (a, n), (b, _) in zip(spans, spans[1:]):
        assert a + n <= b and a % ALIGN == 0
    assert arena.end % ALIGN == 0 and arena.end >= spans[-1][0] + 1


def _int8_mse(values: np.ndarray, threshold: float) -> float:
    step = threshold / 127
    return float(np.mean((np.clip(np.round(values / step), -127, 127) * step - values) ** 2))


def test_calibration_thresholds_trade_clipping_against_rounding():
    """The MSE threshold lands where the int8 error of the real values is least (checked against quantising them
    at a sweep of thresholds); the percentile ignores one outlier; a range with nothing rare is kept whole."""
    rng = np.random.default_rng(0)
    values = np.abs(rng.standard_normal(100_000))
    values[0] = 40.0                                  # one outlier far beyond the rest
    counts, _ = np.histogram(values, 2048, (0.0, 40.0))
    mse = _least_squared_error(counts, 40.0)
    sweep = min(_int8_mse(values, t) for t in np.linspace(1.0, 40.0, 157))
    assert mse < 40.0 and _int8_mse(values, mse) <= 1.05 * sweep < _int8_mse(values, 40.0)
    assert 3.0 < _percentile(counts, 40.0) < 6.0      # the bulk of |N(0,1)|, not the outlier
    flat, _ = np.histogram(rng.uniform(0, 1, 100_000), 2048, (0.0, 1.0))
    assert _least_squared_error(flat, 1.0) > 0.95      # nothing to clip in a uniform range


@pytest.mark.parametrize("k,stride,dil", [(3, 1, 1), (3, 2, 1), (5, 1, 2), (1, 1, 1)])
def test_conv_geometry_matches_onnx_shape_inference(k, stride, dil):
    n = Net(channels=8, size=13)
    model = n.model([n.conv("x", "c", k=k, stride=stride, dil=dil)])
    g = run_fusion(ir_of(model))
    node = g.nodes["c"]
    cfg = EngineConfig(vec=8, pe_rows=8)
    assert conv_output_hw(node, g) == tuple(g.tensors[node.outputs[0]].shape[2:])
    d = conv_descriptor(node, g, cfg)
    assert (d.kh, d.stride_h, d.dil_h, d.in_c, d.out_c) == (k, stride, dil, 8, 8) and not d.flags & Flag.DEPTHWISE
    shape = layer_shape(node, g, cfg)
    assert (shape.conv_h, shape.conv_w, shape.kh) == (*conv_output_hw(node, g), k)


def test_buffers_are_sized_for_the_layers_and_never_below_the_golden_floors():
    cfg = EngineConfig(vec=8, pe_rows=8)
    limits = engine_limits([], cfg)
    assert limits["max_width"] == GOLDEN_WIDTH
    assert limits["weight_rows"] * cfg.pe_rows * cfg.vec >= GOLDEN_TILE_INPUTS * cfg.pe_rows
    n = Net(channels=64, size=48)
    g = run_fusion(ir_of(n.model([n.conv("x", "wide", k=7)])))
    d = conv_descriptor(g.nodes["wide"], g, cfg)
    wide = engine_limits([d], cfg)
    assert wide["max_width"] == 48 and wide["weight_rows"] >= limits["weight_rows"]


def test_calibration_frames_from_a_folder_of_arrays_and_images(tmp_path):
    from PIL import Image

    from fpga_runtime.plan import TensorSpec
    from partitioner.engine.calibration_frames import load_frames
    from partitioner.errors import ModelError
    frame = TensorSpec("images", [1, 8, 10, 3], "uint8")
    np.save(tmp_path / "a.npy", np.full((1, 8, 10, 3), 7, np.uint8))
    Image.new("RGB", (40, 30), (200, 10, 0)).save(tmp_path / "b.png")
    (tmp_path / "notes.txt").write_text("not a frame")
    frames = load_frames(tmp_path, [frame])
    assert len(frames) == 2 and frames[0]["images"].max() == 7
    assert frames[1]["images"].shape == (1, 8, 10, 3) and tuple(frames[1]["images"][0, 0, 0]) == (200, 10, 0)
    only_images = tmp_path / "photos"
    only_images.mkdir()
    (tmp_path / "b.png").rename(only_images / "b.png")
    with pytest.raises(ModelError, match="--calibrate b.png: pictures feed only a uint8"):
        load_frames(only_images, [TensorSpec("x", [1, 3, 8, 10], "float32")])
    from fpga_runtime.preprocess import PRESETS
    yolo = load_frames(only_images, [frame], PRESETS["yolo"])      # a raw frame input takes the picture itself,
    assert tuple(yolo[0]["images"][0, 4, 5]) == (200, 10, 0)       # as fpga-run run --image feeds it (not / 255)
    np.save(tmp_path / "c.npy", np.zeros((1, 3, 8, 10), np.float32))
    with pytest.raises(ModelError, match="c.npy: float32 \\[1, 3, 8, 10\\]"):
        load_frames(tmp_path, [frame])


def test_a_standalone_max_pool_shares_the_channel_placement_its_add_gives_its_output(tmp_path):
    """Found by hypothesis: a max pool the transposed conv before it cannot take, added to a tensor a split
    and concat placed, wrote its 8 channels into a 16-channel slot (a numpy broadcast error at the first run)."""
    from partitioner.build import PartitionConfig, run_partition
    from partitioner.golden.graph_builder import OnnxNet
    n = OnnxNet(channels=4, size=6)
    a = n.node("Relu", [n.conv("x", "a")], "a_relu")
    b = n.node("Relu", [n.conv("x", "b")], "b_relu")
    n.nodes.append(helper.make_node("Split", [a, n.const("sizes", np.array([2, 2], np.int64))], ["a0", "a1"],
                                    name="split", axis=1))
    cat = n.node("Concat", [n.conv("a0", "half", cin=2, cout=2), "a1"], "cat", axis=1)
    up = n.node("ConvTranspose", [b, n.weight("up.w", (4, 4, 2, 2), 0.5), n.weight("up.b", (4,), 0.1)], "up",
                kernel_shape=[2, 2], strides=[2, 2])
    down = n.node("MaxPool", [n.node("Relu", [up], "up_relu")], "down", kernel_shape=[2, 2], strides=[2, 2])
    total = n.node("Add", [a, down], "sum")
    part = n.node("Slice", [total, n.const("s", np.array([0], np.int64)), n.const("e", np.array([2], np.int64)),
                            n.const("ax", np.array([1], np.int64))], "first")
    path = n.save([n.conv(part, "out1", cin=2), n.conv(cat, "out2", k=1)], tmp_path / "m.onnx")
    result = run_partition(PartitionConfig(model=path, out_dir=tmp_path / "b", verify=True, picture=False,
                                           offload_everything=True))
    assert result.verified and result.accuracy is not None
    assert min(o.cosine for o in result.accuracy.outputs) > 0.99


def test_bias_dominated_convs_are_one_warning_that_names_the_worst():
    from partitioner.engine.layers import bias_dominance_warning
    assert bias_dominance_warning([]) == []
    one, = bias_dominance_warning([("head", 3, 8, 12.5, 0)])
    assert one.startswith("node 'head': 3 of 8 output channels have a bias or a sum of weights too large")
    assert "12.5x" in one and "27 bits" in one
    many = bias_dominance_warning([(f"h{i}", 4, 4, float(i + 2), 0) for i in range(6)])
    assert len(many) == 1
    assert "6 convs ('h0', 'h1', 'h2', 'h3', ...; 24 output channels)" in many[0]
    assert "up to 7x coarser (in 'h5')" in many[0] and "accuracy report" in many[0]
    live, dead = bias_dominance_warning([("head", 3, 8, 4.0, 1), ("prior", 2, 2, 0.0, 2)])
    assert live.startswith("node 'head': 2 of 8 output channels") and "4x coarser" in live
    assert dead.startswith("3 output channel(s) of 'head', 'prior' are dead") and "harmless" in dead
    assert "e+" not in dead


def test_the_mse_threshold_is_the_argmin_of_its_definition():
    """The suffix-sum search picks the threshold the definition picks, candidate by candidate, on heavy- and
    light-tailed histograms."""
    from partitioner.engine.calibration import _BINS, _least_squared_error
    rng = np.random.default_rng(0)
    for _ in range(60):
        x = np.abs(rng.standard_t(rng.uniform(1, 10), size=int(rng.integers(100, 50000))))
        counts, _ = np.histogram(x, _BINS, (0.0, x.max()))
        centres = (np.arange(_BINS) + 0.5) / _BINS * x.max()
        candidates = [k / _BINS * x.max() for k in range(_BINS // 16, _BINS + 1, 8)]
        errors = [counts[centres <= t].sum() * (t / 127) ** 2 / 12 + np.sum(counts[centres > t]
                                                                          * (centres[centres > t] - t) ** 2)
                  for t in candidates]
        assert _least_squared_error(counts, x.max()) == candidates[int(np.argmin(errors))]


def test_a_dead_channel_is_said_to_be_harmless_not_a_huge_coarsening(tmp_path):
    """A channel whose weights are ~0 beside a large bias (pruned, or a text detector's dead SE channel) outputs its
    bias; the warning says so instead of "quantised 6.5e+22x coarser", and the int8 output keeps the bias."""
    from partitioner.build import PartitionConfig, run_partition
    n = Net(channels=8, size=6, seed=2)
    w = (n.rng.standard_normal((8, 8, 3, 3)) * 0.1).astype(np.float32)
    w[3] = 1e-20
    b = np.full(8, 0.1, np.float32)
    b[3] = 4.0
    n.inits += [onnx.numpy_helper.from_array(w, "c.w"), onnx.numpy_helper.from_array(b, "c.b")]
    y = n.node("Relu", [n.node("Conv", ["x", "c.w", "c.b"], "c", kernel_shape=[3, 3], pads=[1, 1, 1, 1])], "r")
    path = n.save([n.conv(y, "tail")], tmp_path / "m.onnx")
    result = run_partition(PartitionConfig(model=path, out_dir=tmp_path / "b", picture=False, offload_everything=True))
    dead = [w for w in result.warnings if "dead" in w]
    assert len(dead) == 1 and dead[0].startswith("1 output channel(s) of 'c' are dead") and "e+" not in dead[0]
    assert not any("coarser" in w for w in result.warnings)
    assert min(o.cosine for o in result.accuracy.outputs) > 0.99


def test_bias_correction_removes_the_mean_error_of_the_weights_rounding(tmp_path):
    """A depthwise conv on an input with a large mean (after a ReLU, a picture): each channel's 9 weights round
    coarsely, which shifts its output by (Wq - W) E[x]; corrected from the calibrated channel means, the int8
    output's mean error per channel shrinks, and the build says which convs it corrected."""
    from fpga_runtime import Session
    from fpga_runtime.checking.frames import original_outputs
    from partitioner.build import PartitionConfig, run_partition
    n = Net(channels=16, size=12, seed=5)
    w = (n.rng.standard_normal((16, 1, 3, 3)) * 0.3).astype(np.float32)
    n.inits.append(onnx.numpy_helper.from_array(w, "dw.w"))
    y = n.node("Conv", ["x", "dw.w"], "dw", kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=16)
    path = n.save([n.conv(y, "pw", k=1)], tmp_path / "m.onnx")
    rng = np.random.default_rng(0)
    frames = tmp_path / "frames"
    frames.mkdir()
    for i in range(6):
        np.save(frames / f"f{i}.npy", (3.0 + rng.standard_normal((1, 16, 12, 12))).astype(np.float32))
    feeds = {"x": (3.0 + rng.standard_normal((1, 16, 12, 12))).astype(np.float32)}
    want = original_outputs(path, feeds)["pw"]
    errors = {}
    for corrected in (False, True):
        out = tmp_path / f"b{corrected}"
        run_partition(PartitionConfig(model=path, out_dir=out, picture=False, offload_everything=True,
                                      calibrate_dir=frames, bias_correction=corrected))
        with Session(out) as s:
            got, = s.run(None, feeds)
        errors[corrected] = np.abs((got - want).mean(axis=(0, 2, 3))).mean()
        record = json.loads((out / "fpga" / "engine.json").read_text())["calibration"]["bias_corrected"]
        assert bool(record) is corrected and (not corrected or record[0][0] == "dw")
    assert errors[True] < 0.6 * errors[False], errors
    assert "bias correction" in (tmp_path / "bTrue" / "report.md").read_text()


def test_a_squeeze_excite_gate_is_coded_over_its_whole_range():
    """A sigmoid gate lies in [0, 1]: zero point -128 gives it 8 bits where a symmetric code has 7, and the SCALE
    layer adds the offset back (res_mult_b = 128); every backend replays the golden SE cases bit for bit, and the
    program check refuses an offset past a byte."""
    from golden_replay import GOLDEN, Case

    from fpga_runtime.abi import Op
    from fpga_runtime.program_check import _refusal
    case = Case(GOLDEN / "squeeze_excite_sigmoid.npz")
    scale = [d for d in case.descriptors() if d.op == Op.SCALE]
    assert [d.res_mult_b for d in scale] == [128]
    bad = scale[0]
    bad.res_mult_b = 300

    class _Image:
        config = case.config
        tensors: dict = {}
    assert "gate offset" in (_refusal(bad, _Image(), case.const) or "")


def test_the_program_check_refuses_a_fused_pool_of_one_tap():
    """The RTL's fused pool steps its pixel loop on a compare a cycle old, which needs two taps per pooled pixel
    (pool_unit.sv); a 1x1 fused pool is refused by the check every backend runs, as the engine refuses it."""
    from golden_replay import GOLDEN, Case

    from fpga_runtime.abi import Flag
    from fpga_runtime.program_check import _refusal
    case = Case(GOLDEN / "conv_maxpool2.npz")
    pooled = next(d for d in case.descriptors() if d.flags & Flag.POOL)

    class _Image:
        config = case.config
        act_bytes = 1 << 30
        const_bytes = case.const.size
    assert _refusal(pooled, _Image(), case.const) is None
    pooled.pool_kh = pooled.pool_kw = 1
    assert "fused 1x1 pool" in (_refusal(pooled, _Image(), case.const) or "")


def test_the_program_check_refuses_a_tensor_past_the_engines_pixel_addressing(monkeypatch):
    """The RTL's pixel addresses are exact below MAX_PIXELS pixels per tensor (27-bit DSP operands): a program
    with a tensor at the limit is refused by the check every backend runs (the limit lowered to reach it)."""
    from golden_replay import GOLDEN, Case

    from fpga_runtime import program_check
    case = Case(GOLDEN / "squeeze_excite_sigmoid.npz")
    conv = next(d for d in case.descriptors() if d.op == program_check.Op.CONV)

    class _Image:
        config = case.config
        act_bytes = 1 << 30
        const_bytes = case.const.size
    assert program_check._refusal(conv, _Image(), case.const) is None
    pixels = conv.batch * conv.in_h * conv.in_w
    monkeypatch.setattr(program_check, "MAX_PIXELS", pixels)
    assert f"in: {pixels:,} pixels" in (program_check._refusal(conv, _Image(), case.const) or "")


def test_a_table_activation_codes_only_the_span_where_its_function_moves(tmp_path, monkeypatch):
    """SiLU is flat below about -6: a conv output reaching -40 gets its stage codes over [about -6, max] with a
    zero point (in the bias and the table, nothing at run time), which halves the stage's step and the int8 error
    of the layer against a symmetric stage."""
    from fpga_runtime import Session
    from fpga_runtime.checking.frames import original_outputs
    from partitioner.build import PartitionConfig, run_partition
    from partitioner.engine import layout
    from partitioner.engine.activations import FLAT, activation_fn, useful_span
    from partitioner.ir.graph import Activation, ActKind
    silu = Activation(ActKind.SILU)
    a, b, clipped_lo, clipped_hi = useful_span(silu, 0.1, -40.0, 10.0)
    assert clipped_lo and not clipped_hi and b == 10.0 and -9.0 < a < -5.0
    assert abs(activation_fn(silu)(np.array([a]))[0]) < FLAT * 0.1 * 1.01
    assert useful_span(Activation(ActKind.SIGMOID), 1 / 255, -30.0, 30.0)[2:] == (True, True)
    n = Net(channels=8, size=10, seed=3)
    w = (n.rng.standard_normal((8, 8, 3, 3)) * 0.3).astype(np.float32)
    bias = np.linspace(-25.0, 2.0, 8).astype(np.float32)            # deep negative pre-activations
    n.inits += [onnx.numpy_helper.from_array(w, "c.w"), onnx.numpy_helper.from_array(bias, "c.b")]
    y = n.node("Conv", ["x", "c.w", "c.b"], "c", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    path = n.save([n.node("Mul", [y, n.node("Sigmoid", [y], "sig")], "silu")], tmp_path / "m.onnx")
    rng = np.random.default_rng(1)
    frames = tmp_path / "frames"
    frames.mkdir()
    for i in range(4):
        np.save(frames / f"f{i}.npy", rng.standard_normal((1, 8, 10, 10)).astype(np.float32))
    feeds = {"x": rng.standard_normal((1, 8, 10, 10)).astype(np.float32)}
    want = original_outputs(path, feeds)["silu"]

    def error(out):
        run_partition(PartitionConfig(model=path, out_dir=out, picture=False, offload_everything=True,
                                      calibrate_dir=frames, accuracy=False))
        with Session(out) as s:
            got, = s.run(None, feeds)
        return float(np.sqrt(np.mean((got - want) ** 2)))

    spanned = error(tmp_path / "spanned")
    monkeypatch.setattr(layout, "_table_stage", lambda *args: None)
    symmetric = error(tmp_path / "symmetric")
    assert spanned < 0.75 * symmetric, (spanned, symmetric)


def test_column_packed_view_writes_each_pixel_with_its_neighbours_and_reads_back_the_tensor():
    """A view of 3 column taps (pad 1): packed pixel x holds columns x - 1, x, x + 1 in three channel blocks, the
    zero point past either edge; reading it gives the tensor again; a packing the channels cannot hold, or a view
    past its pixel's bytes, is refused when the image loads."""
    from fpga_runtime.engine_image import TensorView
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 3, 4, 5)).astype(np.float32)
    v = TensorView("x", 0, 2, 4, 5, 16, 0, list(range(9)), 0.02, "nchw", zero=-7, column_taps=3, column_pad=1,
                   source_w=5)
    memory = np.zeros(v.nbytes, np.uint8)
    v.write(memory, x)
    q = v.quantize(x)
    packed = memory.view(np.int8).reshape(2, 4, 5, 16)
    assert np.array_equal(packed[:, :, 1:, 0:3], q[:, :, :4]) and np.all(packed[:, :, 0, 0:3] == -7)
    assert np.array_equal(packed[..., 3:6], q)
    assert np.array_equal(packed[:, :, :4, 6:9], q[:, :, 1:]) and np.all(packed[:, :, 4, 6:9] == -7)
    assert np.array_equal(v.read_int8(memory), q)
    for bad in ({"column_taps": 2}, {"column_pad": 3}, {"source_w": 0}, {"c_stride": 8}):
        fields = {"column_taps": 3, "column_pad": 1, "source_w": 5, "c_stride": 16, **bad}
        with pytest.raises(ValueError, match="tensor 'x'"):
            TensorView("x", 0, 2, 4, 5, fields.pop("c_stride"), 0, list(range(9)), 0.02, "nchw", **fields)


def test_a_first_conv_reads_its_input_column_packed_in_fewer_cycles_and_computes_the_same(tmp_path, zoo,
                                                                                          monkeypatch):
    """The host writes a frame's first conv input column-packed (3 channels x 3 kernel columns in one 16-lane
    beat): the conv compiles to a 3x1 conv over 16 channels, the cycle model gives it fewer cycles, the
    exploration's shape and the compiled descriptor agree, and every engine output is byte for byte that of the
    same build without the packing (the same products summed)."""
    from fpga_runtime.abi import Op
    from fpga_runtime.checking.frames import random_frame
    from fpga_runtime.cycle_model import LayerShape, layer_cycles
    from fpga_runtime.engine_image import EngineImage
    from fpga_runtime.rtl_sim.single_layer import program_descriptors
    from fpga_runtime.run.session import Session
    from partitioner.build import PartitionConfig, run_partition
    from partitioner.engine import geometry
    model = zoo("yolov3-tiny", 96)
    engine = EngineConfig.from_shape("4x16x16", compute_units=1)

    def built(out):
        run_partition(PartitionConfig(model=model, out_dir=out, picture=False, accuracy=False, board="zcu104",
                                      engine=engine))
        image = EngineImage.load(out / "fpga")
        const = np.fromfile(out / "fpga" / "memory.bin", np.uint8)
        first = next(d for p in image.programs.values() for d in program_descriptors(const, p.addr, p.layers)
                     if d.op == Op.CONV)
        with Session(out, backend="reference") as s:
            outs = s.run(None, random_frame(s.plan, 4))
        plan = json.loads((out / "plan.json").read_text())
        modelled = next(layer["cycles"] for sg in plan["subgraphs"] for layer in sg["layers"])
        return image, first, outs, modelled, layer_cycles(LayerShape.of(first, image.config), image.config)

    image, first, outs, modelled, of_descriptor = built(tmp_path / "packed")
    packed = [v for v in image.tensors.values() if v.column_taps > 1]
    assert len(packed) == 1 and packed[0].column_taps == 3 and packed[0].source_w == 96
    assert (first.kw, first.pad_l, first.pad_r, first.in_c, first.in_w) == (1, 0, 0, 16, 96)
    import partitioner.engine.layout as layout_module
    monkeypatch.setattr(geometry, "column_taps", lambda *args: 1)
    monkeypatch.setattr(layout_module, "column_taps", lambda *args: 1)
    plain_image, plain_first, plain_outs, plain_modelled, plain_of_descriptor = built(tmp_path / "plain")
    assert not any(v.column_taps > 1 for v in plain_image.tensors.values()) and plain_first.kw == 3
    # the plan's cycles (the graph's shape) and the descriptor's differ by the same fused pool's tail either way
    assert modelled - of_descriptor == plain_modelled - plain_of_descriptor
    assert modelled * 2 < plain_modelled
    for a, b in zip(outs, plain_outs):
        assert np.array_equal(a, b)
