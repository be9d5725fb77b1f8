"""The reference backend against its golden cases, and the int8 result against the float model."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from golden_replay import CASE_FILES, WINOGRAD_FILES, Case
from graphs import Net

from fpga_runtime import Session
from fpga_runtime.abi import Act, Flag, Op
from fpga_runtime.checking.frames import original_outputs, random_frame
from fpga_runtime.reference import ReferenceEngine
from partitioner.build import PartitionConfig, run_partition


@pytest.fixture(params=CASE_FILES + WINOGRAD_FILES, ids=lambda p: p.stem)
def case(request):
    return Case(request.param)


def test_golden_case_bit_exact(case):
    act = case.replay(ReferenceEngine(case.config).run)
    assert np.array_equal(act, case.act_out)


def test_golden_case_close_to_float(case):
    """int8 with per-tensor max calibration rounds inputs, weights and outputs: each rounding costs a uniform
    error of 1/sqrt(12) LSB, about 48 dB below a full-range signal; two or three of them and a signal that uses
    part of its range leave 33-42 dB on these cases. 30 dB (3 % RMS) is the bound for up to three layers; beyond,
    the layers' noise powers add up, so the bound falls by 10 log10(layers / 3) dB (27 dB for a six-layer
    squeeze-and-excitation block). Worst element within 10 %."""
    got = case.out_view.read(case.act_out).astype(np.float64)
    want = case.float_out.astype(np.float64)
    snr = 10 * np.log10(np.sum(want ** 2) / np.sum((got - want) ** 2))
    layers = len(case.descriptors())
    bound = 30.0 - 10 * np.log10(max(1.0, layers / 3))
    assert snr >= bound, f"{case.name}: {snr:.1f} dB over {layers} layers (bound {bound:.1f})"
    assert np.max(np.abs(got - want)) <= 0.1 * np.max(np.abs(want))


FEATURES = {
    "upsample_read_mode": lambda ds: any(d.op == Op.CONV and d.flags & Flag.UPSAMPLE2 for d in ds),
    "upsample_concat": lambda ds: any(d.op == Op.COPY and d.flags & Flag.UPSAMPLE2 and d.out_c_stride > d.out_c
                                      for d in ds),
    "concat_duplicate": lambda ds: any(d.op == Op.COPY and not d.flags for d in ds),
    "concat_odd_channels": lambda ds: any(d.out_c_offset == 16 for d in ds),
    "residual": lambda ds: any(d.flags & Flag.RESIDUAL and d.act1 == Act.LUT for d in ds),
    "residual_relu": lambda ds: any(d.flags & Flag.RESIDUAL and d.act2 == Act.LUT for d in ds),
    # a ReLU's output has no negatives: its codes are asymmetric, 0.0 at -128, so the clamp's floor is -128
    "act_relu": lambda ds: ds[0].act1 == Act.CLAMP and ds[0].act_lo == -128,
    "act_relu6": lambda ds: ds[0].act1 == Act.CLAMP and ds[0].act_lo == -128 and ds[0].act_hi <= 127,
    "act_sigmoid": lambda ds: ds[0].act1 == Act.LUT,
    "act_mish": lambda ds: ds[0].act1 == Act.LUT,
    "depthwise3x3": lambda ds: ds[0].flags & Flag.DEPTHWISE,
    "conv_maxpool2": lambda ds: ds[0].flags & Flag.POOL and ds[0].pool_kh == 2,
    "standalone_pool_add": lambda ds: {Op.ADD, Op.MAXPOOL} <= {d.op for d in ds},
    "dense": lambda ds: ds[0].in_h == ds[0].in_w == 1 and ds[0].in_c == 48,
    "conv3x3_dilated": lambda ds: ds[0].dil_h == 2,
    "conv7x7_s2": lambda ds: ds[0].kh == 7 and ds[0].stride_h == 2,
    "l2_norm": lambda ds: any(d.op == Op.L2NORM and d.in_c == 32 for d in ds),
    "conv_zero_pad_pool": lambda ds: ds[0].flags & Flag.POOL and ds[0].flags & Flag.POOL_PAD_ZERO
    and (ds[0].pool_pad_b, ds[0].pool_pad_r) == (1, 1),
    "channel_shuffle": lambda ds: any(d.flags & Flag.DEPTHWISE and d.in_c_stride == d.in_c == 32 for d in ds)
    and sum(d.op == Op.CONV and d.kh == 1 and d.in_c == 32 and d.out_c == 16 for d in ds) >= 3,
    "conv_transpose": lambda ds: sorted((d.out_phase_y, d.out_phase_x) for d in ds if d.out_step == 2)
    == [(0, 0), (0, 1), (1, 0), (1, 1)] and all(d.out_c_stride > d.out_c for d in ds if d.out_step == 2),
    "grouped_conv": lambda ds: sum(d.op == Op.CONV and d.kh == 3 and d.in_c == 16 and d.out_c_stride == 32
                                   for d in ds) == 2,
    "pools_and_norms_as_depthwise": lambda ds: sum(d.flags & Flag.DEPTHWISE and (d.kh, d.stride_h) in ((1, 1), (2, 2),
                                                                                                 (3, 1))
                                                   for d in ds) == 3,
    "winograd3x3": lambda ds: ds[0].flags & Flag.WINOGRAD and ds[0].conv_h % 2 == 0,
    "winograd_odd_wide": lambda ds: ds[0].flags & Flag.WINOGRAD and ds[0].conv_w % 2 and ds[0].in_c == 48
    and ds[0].out_c == 48,
    "winograd_residual": lambda ds: sum(d.flags & Flag.WINOGRAD and d.flags & Flag.RESIDUAL and not d.flags & Flag.POOL
                                        and d.conv_w % 2 and d.conv_h % 2 for d in ds) == 2,
    "winograd_pool": lambda ds: [(d.conv_w, d.pool_kh, d.pool_sh) for d in ds if d.flags & Flag.WINOGRAD
                                 and d.flags & Flag.POOL] == [(22, 2, 2), (11, 3, 1)],
    "winograd_residual_pool": lambda ds: any(d.flags & Flag.WINOGRAD and d.flags & Flag.RESIDUAL
                                             and d.flags & Flag.POOL and d.conv_w % 2 for d in ds),
    "winograd_zero_point": lambda ds: sum(d.flags & Flag.WINOGRAD and d.in_zero != 0 for d in ds) == 3
    and {(d.pad_t, d.pad_l, d.pad_b, d.pad_r) for d in ds if d.flags & Flag.WINOGRAD}
    == {(1, 1, 1, 1), (0, 0, 0, 0), (0, 1, 1, 0)},
    "zero_point_padding": lambda ds: sum(d.op == Op.CONV and d.in_zero != 0 and d.pad_t > 0 for d in ds) >= 3
    and any(d.flags & Flag.DEPTHWISE and d.in_zero != 0 for d in ds),
}


@pytest.mark.parametrize("name", sorted(FEATURES))
def test_golden_cases_cover_their_feature(name):
    case = Case(next(p for p in CASE_FILES + WINOGRAD_FILES if p.stem == name))
    assert FEATURES[name](case.descriptors())


def test_golden_files_are_reproduced_by_the_compiler(tmp_path):
    """Compiling the cases again from their stored calibration ranges gives the same bytes: a change of the
    compiler or the ABI shows up here. Calibrating afresh would not do: the ranges come from float onnxruntime,
    whose last bits differ between CPUs (AVX2 vs AVX-512 kernels), and so would scales and multipliers."""
    from partitioner.golden.cases import make_case
    for name in ("conv3x3", "residual_relu", "concat_odd_channels", "depthwise3x3", "act_sigmoid",
                 "winograd_zero_point"):
        old = Case(next(p for p in CASE_FILES + WINOGRAD_FILES if p.stem == name))
        fresh = make_case(name, tmp_path, old.config, old.calibration)
        assert np.array_equal(fresh["const"], old.const) and np.array_equal(fresh["act_in"], old.act_in)
        assert np.array_equal(fresh["act_out"], old.act_out)


def test_trained_head_biases_never_overflow_and_stay_accurate(tmp_path):
    """A detection head as training leaves it: small 1x1 weights, large biases (objectness priors around -5..-9),
    on a small-range input. The int32 bias would not fit at the plain weight scale; the compiler widens those
    channels' weight scale instead of refusing the model, and says so."""
    n = Net(channels=64, size=8, seed=3)
    trunk = n.node("Relu", [n.conv("x", "trunk")], "trunk_relu")
    w = (n.rng.standard_normal((18, 64, 1, 1)) * 2e-6).astype(np.float32)
    b = np.concatenate([np.full(6, -9.0), n.rng.uniform(-6, 6, 12)]).astype(np.float32)
    n.inits += [onnx.numpy_helper.from_array(w, "head.w"), onnx.numpy_helper.from_array(b, "head.b")]
    n.node("Conv", [trunk, "head.w", "head.b"], "head", kernel_shape=[1, 1])
    path = n.save(["head"], tmp_path / "m.onnx")
    result = run_partition(PartitionConfig(model=path, out_dir=tmp_path / "b", picture=False, accuracy=False,
                                           offload_everything=True))
    assert [s.device for s in result.plan.subgraphs] == ["fpga"]
    assert any("'head'" in w and "coarser" in w for w in result.warnings), result.warnings
    feeds = random_frame(result.plan, 5)
    with Session(tmp_path / "b") as s:
        got = s.run(None, feeds)[0]
    want = original_outputs(path, feeds)["head"]
    assert np.max(np.abs(got - want)) <= 0.02 * np.max(np.abs(want))


def test_a_dense_wide_conv_never_passes_the_27_bit_requantisation_input(tmp_path, monkeypatch):
    """ABI v3 requantises the accumulator's low 27 bits. A 3x3 conv over 1,024 channels whose weights are all of one
    magnitude (9,216 products of |w_q| = 127: 2^27.2 at the plain scale) gets coarser weights on every channel, and
    an input aligned with channel 0's signs, the worst case, gives that channel's largest output, not a wrapped
    one."""
    import fpga_runtime.abi as abi
    n = Net(channels=1024, size=3, seed=4)
    w = (np.sign(n.rng.standard_normal((4, 1024, 3, 3))) * 0.01).astype(np.float32)
    n.inits += [onnx.numpy_helper.from_array(w, "wide.w"), onnx.numpy_helper.from_array(np.zeros(4, np.float32),
                                                                                        "wide.b")]
    n.node("Conv", ["x", "wide.w", "wide.b"], "wide", kernel_shape=[3, 3])
    path = n.save(["wide"], tmp_path / "m.onnx")
    result = run_partition(PartitionConfig(model=path, out_dir=tmp_path / "b", picture=False, accuracy=False,
                                           offload_everything=True))
    assert [s.device for s in result.plan.subgraphs] == ["fpga"]
    assert any("'wide'" in m and "coarser" in m for m in result.warnings), result.warnings
    seen = []
    wrap = abi.requant_input

    def watched(acc, *args):
        seen.append(np.abs(acc).max())                 # before the 27 bits are taken
        return wrap(acc, *args)
    monkeypatch.setattr(abi, "requant_input", watched)
    worst = {"x": (np.sign(w[0])[None] * 1e3).astype(np.float32)}     # every input at its int8 end
    with Session(tmp_path / "b") as s:
        got = s.run(None, worst)[0].reshape(-1)
        typical = s.run(None, random_frame(result.plan, 1))[0]
    assert 2 ** 25 < max(seen) < 2 ** 26, max(seen)          # close to the limit, within it
    assert got[0] == got.max() >= typical.max()          # the top of the output's range, as the float conv's


def test_adds_mixing_a_concat_and_a_plain_tensor_compile(tmp_path):
    """An add (and a conv's residual) whose operands are a concat, with padding between its slots, and a conv
    output: the conv writes in the concat's channel placement instead of the compile refusing the model."""
    n = Net(channels=4, size=8)
    cat = n.node("Concat", [n.conv("x", "a"), n.conv("x", "b")], "cat", axis=1)
    s = n.node("Add", [cat, n.conv("x", "c", cout=8)], "sum")
    r = n.node("Add", [n.conv(s, "d", cin=8, cout=8), cat], "res")
    path = n.save([n.conv(r, "e", cin=8)], tmp_path / "m.onnx")
    result = run_partition(PartitionConfig(model=path, out_dir=tmp_path / "b", picture=False, accuracy=False,
                                           offload_everything=True))
    assert {s.device for s in result.plan.subgraphs} == {"fpga"}
    feeds = random_frame(result.plan, 2)
    with Session(tmp_path / "b") as session:
        got = session.run(None, feeds)[0]
    want = original_outputs(path, feeds)["e"]
    assert 10 * np.log10(np.sum(want ** 2) / np.sum((got - want) ** 2)) >= 20.0


def test_zero_points_go_where_every_layer_can_take_them_and_the_writer_bounds_the_small_side(tmp_path):
    """A ReLU's output read by a padded conv is asymmetric (0.0 at -128) and that conv pads with -128; the tensor
    an Add reads stays symmetric (the add assumes zero = 0); a linear output's calibrated minimum is not trusted
    (doubled first), so a lopsided one stays symmetric unless the gain survives that."""
    import json

    from partitioner.engine.zero_points import asymmetric
    n = Net(channels=8, size=8, seed=4)
    a = n.node("Relu", [n.conv("x", "a")], "a_relu")
    b = n.node("Relu", [n.conv(a, "b")], "b_relu")
    s = n.node("Add", [b, n.conv(a, "c", k=1)], "sum")
    path = n.save([n.conv(s, "d")], tmp_path / "m.onnx")
    result = run_partition(PartitionConfig(model=path, out_dir=tmp_path / "b", picture=False, offload_everything=True))
    views = json.loads((tmp_path / "b" / "fpga" / "engine.json").read_text())["tensors"]
    assert views["a_relu"]["zero"] == -128 and views["b_relu"]["zero"] == 0 and views["sum"]["zero"] == 0
    assert any(d.op == Op.CONV and d.pad_t and d.in_zero == -128 for d in _descriptors(tmp_path / "b"))
    assert result.accuracy.outputs[0].cosine > 0.999

    relu = asymmetric(5.0, (0.0, 5.0), trusted=True)
    assert relu is not None and relu[1] == -128 and relu[0] == pytest.approx(5.0 / 255)
    assert asymmetric(5.0, (-0.3, 5.0), trusted=True)[1] > -128                  # a SiLU's few negatives
    assert asymmetric(11.0, (-6.6, 11.0), trusted=False) is None                 # linear: the minimum doubled
    assert asymmetric(11.0, (-6.6, 11.0), trusted=True) is not None
    assert asymmetric(5.0, (-4.0, 5.0), trusted=True) is None                    # nearly symmetric: no gain


def _descriptors(build):
    from fpga_runtime.abi import unpack_program
    from fpga_runtime.engine_image import ENGINE_DIR, EngineImage
    image = EngineImage.load(build / ENGINE_DIR)
    const = image.load_constants(build / ENGINE_DIR)
    out = []
    for p in image.programs.values():
        out += unpack_program(const[p.addr:].tobytes())
    return out


def _rexnet_and_mixnet_blocks() -> onnx.ModelProto:
    """Two lane-wise layers whose operands two concats place: ReXNet's residual onto the first channels of a
    conv whose output is then concatenated, the residual being an earlier concat; MixNet's BatchNorm of a concat
    (a 1x1 depthwise layer) with a residual. 12-channel slots pad to 16, so the concats leave gaps."""
    n = Net(channels=8)
    cat = n.node("Concat", [n.conv("x", "a", cout=12), n.conv("x", "b", cout=12)], "cat", axis=1)
    y = n.conv(cat, "expand", k=1, cin=24, cout=30)
    head = n.node("Slice", [y, n.const("s0", np.array([0])), n.const("e0", np.array([24])),
                            n.const("ax0", np.array([1]))], "head")
    tail = n.node("Slice", [y, n.const("s1", np.array([24])), n.const("e1", np.array([30])),
                            n.const("ax1", np.array([1]))], "tail")
    out = n.node("Concat", [n.node("Add", [head, cat], "partial_residual"), tail], "out", axis=1)
    n.c = 30
    mixed = n.node("Concat", [n.conv(out, "m0", k=1, cout=15), n.conv(out, "m1", k=1, cout=15)], "mixed", axis=1)
    summed = n.node("Add", [n.bn(mixed, "bn"), n.conv(out, "r", k=1)], "bn_residual")
    last = n.conv(summed, "last", k=1)
    n.c = 8
    return n.model([last])


def test_lane_wise_layers_take_the_placement_a_concat_gave(tmp_path):
    """Each such layer runs on the engine (its other operand takes the concat's placement, gaps and all) and the
    int8 model follows the float one."""
    onnx.save(_rexnet_and_mixnet_blocks(), str(tmp_path / "m.onnx"))
    result = run_partition(PartitionConfig(model=tmp_path / "m.onnx", out_dir=tmp_path / "b", picture=False,
                                           offload_everything=True))
    assert {sg.device.value for sg in result.partition.subgraphs} == {"fpga"}
    assert all(o.cosine > 0.99 for o in result.accuracy.outputs), result.accuracy.outputs
    with Session(tmp_path / "b", backend="reference") as s:
        s.run(None, random_frame(s.plan, 1))



def test_an_add_of_two_differently_placed_concats_stays_on_the_cpu_and_says_why():
    """12 + 12 channels pad to slots of 16 + 16, 8 + 16 to 16 + 16: the two sums' channels sit apart, which no
    engine add can take; the partitioner keeps it on the CPU and carves again."""
    from ir_helpers import ir_of

    from fpga_runtime.boards import BOARDS
    from partitioner.passes.pipeline import run_fusion
    from partitioner.placement.cost import CostModel
    from partitioner.placement.partition import partition
    from partitioner.targets import fpga
    n = Net(channels=8)
    one = n.node("Concat", [n.conv("x", "a", cout=12), n.conv("x", "b", cout=12)], "one", axis=1)
    two = n.node("Concat", [n.conv("x", "c", cout=8), n.conv("x", "d", cout=16)], "two", axis=1)
    n.c = 24
    last = n.conv(n.node("Add", [one, two], "sum"), "e", k=1)
    n.c = 8
    g = run_fusion(ir_of(n.model([last])))
    part = partition(g, fpga, CostModel(BOARDS["zcu104"]), offload_everything=True, split_all_branches=False)
    placed = {node: sg.device.value for sg in part.subgraphs for node in sg.nodes}
    assert placed["sum"] == "cpu" and "channel layouts" in part.fallbacks["sum"]
    assert placed["one"] == placed["two"] == "fpga"
