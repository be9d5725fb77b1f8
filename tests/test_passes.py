"""Fusion passes: the graph before and after each pass against the expected graph, and the numbers unchanged."""
from __future__ import annotations

import numpy as np
import pytest
from graphs import Net, channel_shuffle, shufflenet_unit
from ir_helpers import ir_of, random_feeds, run_graph, run_model
from onnx import helper, numpy_helper

from partitioner.ir.graph import Activation, ActKind, ConvForm, OpKind, Pool, ResidualAdd
from partitioner.passes.batchnorm import fold_batchnorm
from partitioner.passes.conv_form import form_convolutions
from partitioner.passes.epilogue import (
    fuse_activation,
    fuse_maxpool,
    fuse_residual_add,
    fuse_upsample_input,
    mark_concat_writes,
)
from partitioner.passes.pipeline import run_fusion


def _same_numbers(model, graph, atol=1e-5):
    feeds = random_feeds(graph)
    for want, got in zip(run_model(model, feeds), run_graph(graph, feeds)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=atol)


def test_conv_bn_fold_expected_graph():
    n = Net()
    n.node("Relu", [n.bn(n.conv("x", "c"), "bn")], "r")
    model = n.model(["r"])
    g = ir_of(model)
    assert g.signature() == [("CONV", "Conv", ("x", "c_w", "c_b"), ("c",)),
                             ("BATCHNORM", "BatchNormalization", ("c", "bn_scale", "bn_bias", "bn_mean", "bn_var"),
                              ("bn",)),
                             ("RELU", "Relu", ("bn",), ("r",))]
    g = fold_batchnorm(form_convolutions(g))
    assert g.signature() == [("FUSED_CONV", "conv 3x3", ("x", "c_weight_bn", "c_bias_bn"), ("bn",)),
                             ("RELU", "Relu", ("bn",), ("r",))]
    assert g.nodes["c"].origin == ["c", "bn"]
    assert "c_w" not in g.tensors and "bn_mean" not in g.tensors
    _same_numbers(model, g)


def test_bn_not_folded_when_conv_output_is_shared():
    n = Net()
    c = n.conv("x", "c")
    n.bn(c, "bn")
    model = n.model(["bn", "c"])
    g = fold_batchnorm(form_convolutions(ir_of(model)))
    assert [node.kind for node in g.nodes.values()] == [OpKind.FUSED_CONV, OpKind.BATCHNORM]
    _same_numbers(model, g)


def _act_net(kind: str):
    n = Net()
    c = n.conv("x", "c")
    if kind == "relu":
        out = n.node("Relu", [c], "a")
    elif kind == "leaky":
        out = n.node("LeakyRelu", [c], "a", alpha=0.1)
    elif kind in ("relu6", "relu_clip", "clip"):
        lo, hi = {"relu6": (0.0, 6.0), "relu_clip": (0.0, None), "clip": (-1.0, 1.0)}[kind]
        names = []
        for i, v in enumerate((lo, hi)):
            if v is None:
                names.append("")
            else:
                n.inits.append(numpy_helper.from_array(np.array(v, np.float32), f"b{i}"))
                names.append(f"b{i}")
        out = n.node("Clip", [c] + names, "a")
    elif kind == "sigmoid":
        return n.model([n.conv(n.node("Sigmoid", [c], "a"), "tail")])
    elif kind == "sigmoid_head":
        out = n.node("Sigmoid", [c], "a")
    elif kind == "silu":
        out = n.node("Mul", [c, n.node("Sigmoid", [c], "s")], "a")
    elif kind == "mish":
        out = n.node("Mul", [c, n.node("Tanh", [n.node("Softplus", [c], "sp")], "t")], "a")
    elif kind == "mish_exp_log":         # Darknet converters: softplus as Log(Exp(x) + 1)
        one = n.const("one", np.array(1.0, np.float32))
        sp = n.node("Log", [n.node("Add", [n.node("Exp", [c], "e"), one], "e1")], "sp")
        out = n.node("Mul", [n.node("Tanh", [sp], "t"), c], "a")
    elif kind == "hardswish_op":
        out = n.node("HardSwish", [c], "a")
    elif kind == "hardswish_pair":
        out = n.node("Mul", [n.node("HardSigmoid", [c], "s", alpha=1 / 6, beta=0.5), c], "a")
    elif kind == "hardsigmoid_other":
        out = n.node("Mul", [n.node("HardSigmoid", [c], "s", alpha=0.2, beta=0.5), c], "a")
    return n.model([out])


@pytest.mark.parametrize("kind,expected", [
    ("relu", Activation(ActKind.RELU)), ("leaky", Activation(ActKind.LEAKY_RELU, alpha=pytest.approx(0.1))),
    ("relu6", Activation(ActKind.RELU6)), ("relu_clip", Activation(ActKind.RELU)),
    ("clip", Activation(ActKind.CLIP, lo=-1.0, hi=1.0)), ("sigmoid", Activation(ActKind.SIGMOID)),
    ("silu", Activation(ActKind.SILU)), ("hardswish_op", Activation(ActKind.HARD_SWISH)),
    ("hardswish_pair", Activation(ActKind.HARD_SWISH)), ("hardsigmoid_other", None), ("sigmoid_head", None),
    ("mish", Activation(ActKind.MISH)), ("mish_exp_log", Activation(ActKind.MISH))])
def test_activation_fusion(kind, expected):
    """A sigmoid that only reaches the model's output (a head's probabilities) stays unfused, in float."""
    model = _act_net(kind)
    g = fuse_activation(form_convolutions(ir_of(model)))
    conv = g.nodes["c"]
    if expected is None:
        assert conv.conv.epilogue == ()
        assert len(g.nodes) == (2 if kind == "sigmoid_head" else 3)
    else:
        assert len(g.nodes) == (2 if kind == "sigmoid" else 1)
        assert conv.conv.epilogue == (expected,)
        assert conv.outputs == ["a"]
    _same_numbers(model, g)


def test_residual_add_fused_into_later_conv_then_activation():
    n = Net()
    a = n.conv("x", "a")
    b = n.conv(n.node("Relu", [a], "ra"), "b")
    out = n.node("Relu", [n.node("Add", [b, "ra"], "add")], "out")
    model = n.model([out])
    g = run_fusion(ir_of(model))
    assert g.signature() == [("FUSED_CONV", "conv 3x3 relu", ("x", "a_w", "a_b"), ("ra",)),
                             ("FUSED_CONV", "conv 3x3 +res relu", ("ra", "b_w", "b_b", "ra"), ("out",))]
    assert g.nodes["b"].conv.epilogue == (ResidualAdd("ra"), Activation(ActKind.RELU))
    assert g.nodes["b"].origin == ["b", "add", "out"]
    _same_numbers(model, g)


def test_add_not_fused_when_conv_output_has_other_readers():
    n = Net()
    a = n.conv("x", "a")
    b = n.conv("x", "b")
    add = n.node("Add", [a, b], "add")
    model = n.model([add, b])
    g = fuse_residual_add(form_convolutions(ir_of(model)))
    assert g.nodes["a"].conv.epilogue == (ResidualAdd("b"),)
    assert "b" in g.nodes and "add" not in g.nodes
    _same_numbers(model, g)


def test_maxpool_fusion_and_shared_output_left_alone():
    n = Net()
    p1 = n.node("MaxPool", [n.conv("x", "a")], "p1", kernel_shape=[2, 2], strides=[2, 2])
    b = n.conv("x", "b")
    p2 = n.node("MaxPool", [b], "p2", kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1])
    model = n.model([p1, p2, b])
    g = fuse_maxpool(form_convolutions(ir_of(model)))
    assert g.nodes["a"].conv.epilogue == (Pool((2, 2), (2, 2), (0, 0, 0, 0)),)
    assert g.nodes["b"].conv.epilogue == () and "p2" in g.nodes
    _same_numbers(model, g)


def _resize(n: Net, x: str, name: str, coord: str = "asymmetric", nearest: str = "floor") -> str:
    n.inits.append(numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), f"{name}.scales"))
    return n.node("Resize", [x, "", f"{name}.scales"], name, mode="nearest",
                  coordinate_transformation_mode=coord, nearest_mode=nearest)


def test_upsample_becomes_conv_read_mode_only_for_a_sole_conv_reader():
    n = Net()
    up = _resize(n, "x", "up")
    c = n.conv(up, "c")
    up2 = _resize(n, c, "up2")
    cat = n.node("Concat", [up2, n.conv(up2, "d")], "cat", axis=1)
    model = n.model([cat])
    g = fuse_upsample_input(form_convolutions(ir_of(model)))
    assert g.signature()[0] == ("FUSED_CONV", "up2 conv 3x3", ("x", "c_w", "c_b"), ("c",))
    assert g.nodes["c"].origin == ["up", "c"]
    assert "up2" in g.nodes
    _same_numbers(model, g)


def test_concat_offsets():
    n = Net()
    a = n.conv("x", "a")
    b = n.conv("x", "b", cout=6)
    cat = n.node("Concat", [a, b, a], "cat", axis=1)
    g = mark_concat_writes(form_convolutions(ir_of(n.model([cat]))))
    assert g.nodes["cat"].concat.offsets == (0, 4, 10)
    assert g.nodes["cat"].concat.channels == 14


@pytest.mark.parametrize("trans_b,alpha,beta", [(1, 1.0, 1.0), (0, 0.5, 2.0)])
def test_gemm_becomes_dense_fused_conv(trans_b, alpha, beta):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((8, 5) if trans_b else (5, 8)).astype(np.float32)
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["y"], name="fc", transB=trans_b, alpha=alpha, beta=beta),
             helper.make_node("Relu", ["y"], ["z"], name="r")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", 1, [3, 5])],
                          [helper.make_tensor_value_info("z", 1, None)],
                          [numpy_helper.from_array(w, "w"), numpy_helper.from_array(rng.standard_normal(8)
                                                                                   .astype(np.float32), "b")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    graph = run_fusion(ir_of(model))
    assert [n.describe() for n in graph.nodes.values()] == ["dense 1x1 relu"]
    _same_numbers(model, graph)


def test_pipeline_on_resblock_expected_graph(zoo):
    import onnx
    model = onnx.load(str(zoo("resblock")))
    g = run_fusion(ir_of(model))
    assert [(n.kind.name, n.describe()) for n in g.nodes.values()] == [
        ("MUL", "Mul"),
        ("FUSED_CONV", "conv 3x3 relu"),
        ("FUSED_CONV", "conv 3x3 relu"),
        ("FUSED_CONV", "conv 3x3 +res relu"),
        ("FUSED_CONV", "conv 3x3 s2 silu"),
        ("GLOBAL_AVG_POOL", "GlobalAveragePool"),
    ]
    assert sorted(g.origin_names()) == sorted(n.name for n in model.graph.node)
    feeds = random_feeds(g)
    for want, got in zip(run_model(model, feeds), run_graph(g, feeds)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


# ---- exporter forms -------------------------------------------------------------------------------------------

def _kinds(graph):
    return [(n.kind.name, n.describe()) for n in graph.nodes.values()]


def test_exporter_noops_disappear():
    n = Net()
    a = n.node("Identity", [n.conv("x", "a")], "id")
    d = n.node("Dropout", [a], "drop")
    c = n.node("Concat", [d], "one", axis=1)
    s = n.node("Slice", [c, n.const("s0", np.array([0, 0])), n.const("s1", np.array([2 ** 62, 2 ** 62])),
                         n.const("ax", np.array([2, 3]))], "all")
    s = n.node("Resize", [s, "", n.const("ones", np.array([1, 1, 1, 1], np.float32))], "by_one", mode="nearest")
    model = n.model([n.conv(s, "b")])
    g = run_fusion(ir_of(model))
    assert _kinds(g) == [("FUSED_CONV", "conv 3x3"), ("FUSED_CONV", "conv 3x3")]
    assert set(g.origin_names()) == {"a", "b"}
    _same_numbers(model, g)


def _relu6_plus_three(n, x, tag):
    plus = n.node("Add", [x, n.const(f"{tag}_3", np.array(3.0, np.float32))], f"{tag}_add")
    return n.node("Clip", [plus, n.const(f"{tag}_lo", np.array(0.0, np.float32)),
                           n.const(f"{tag}_hi", np.array(6.0, np.float32))], f"{tag}_clip")


@pytest.mark.parametrize("grouping", ["gate_then_mul", "mul_then_div"])
def test_hardswish_spelt_out_fuses_into_the_conv(grouping):
    n = Net()
    c = n.conv("x", "c")
    six = n.const("six", np.array(6.0, np.float32))
    if grouping == "gate_then_mul":
        y = n.node("Mul", [c, n.node("Div", [_relu6_plus_three(n, c, "g"), six], "gate")], "hs")
    else:
        y = n.node("Div", [n.node("Mul", [c, _relu6_plus_three(n, c, "g")], "prod"), six], "hs")
    model = n.model([n.conv(y, "d")])
    g = run_fusion(ir_of(model))
    assert _kinds(g) == [("FUSED_CONV", "conv 3x3 hard_swish"), ("FUSED_CONV", "conv 3x3")]
    _same_numbers(model, g)


def test_squeeze_excitation_gate_spelt_out_is_a_hard_sigmoid_epilogue():
    n = Net()
    x = n.conv("x", "c")
    gate = n.node("Mul", [_relu6_plus_three(n, n.conv(x, "fc"), "g"),
                          n.const("sixth", np.array(1 / 6, np.float32))], "gate")
    model = n.model([n.node("Mul", [x, gate], "scaled")])
    g = run_fusion(ir_of(model))
    assert ("FUSED_CONV", "conv 3x3 hard_sigmoid") in _kinds(g)
    _same_numbers(model, g)


def test_unfolded_batchnorm_as_mul_and_add_folds_into_the_conv():
    n = Net()
    scale = n.const("scale", n.rng.uniform(0.5, 2.0, (1, 4, 1, 1)).astype(np.float32))
    shift = n.const("shift", n.rng.standard_normal((4, 1, 1)).astype(np.float32))
    y = n.node("Add", [n.node("Mul", [n.conv("x", "c"), scale], "mul"), shift], "add")
    model = n.model([n.node("Relu", [y], "r")])
    g = run_fusion(ir_of(model))
    assert _kinds(g) == [("FUSED_CONV", "conv 3x3 relu")]
    assert g.nodes["c"].origin == ["c", "mul", "add", "r"]
    _same_numbers(model, g)


def test_pad_folds_into_conv_and_into_a_pool_it_cannot_win():
    n = Net()
    pads = n.const("pads", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64))
    y = n.conv_valid(n.node("Pad", [n.node("Relu", [n.conv("x", "a")], "r"), pads], "pad"), "b")
    r = n.node("Relu", [y], "r2")
    p = n.node("MaxPool", [n.node("Pad", [r, pads], "pad2")], "pool", kernel_shape=[3, 3])
    model = n.model([p])
    g = run_fusion(ir_of(model))
    assert _kinds(g) == [("FUSED_CONV", "conv 3x3 relu"), ("FUSED_CONV", "conv 3x3 relu maxpool3")]
    assert g.nodes["b"].conv.pads == (1, 1, 1, 1)
    _same_numbers(model, g)


def test_zero_pad_before_a_pool_of_signed_values_becomes_zero_padding_of_the_fused_pool():
    """Zeros can win the max over signed values: not -inf padding, but the pool's zero padding (POOL_PAD_ZERO);
    a zero Pad before a pool that has padding of its own stays."""
    n = Net()
    pads = n.const("pads", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64))
    first = n.node("MaxPool", [n.node("Pad", [n.conv("x", "a"), pads], "pad")], "pool", kernel_shape=[3, 3])
    second = n.node("MaxPool", [n.node("Pad", [n.conv(first, "b"), pads], "pad2")], "pool2", kernel_shape=[3, 3],
                    pads=[1, 1, 1, 1])
    model = n.model([second])
    g = run_fusion(ir_of(model))
    assert _kinds(g)[0] == ("FUSED_CONV", "conv 3x3 maxpool3 pad0")
    assert any(node.op_type == "Pad" for node in g.nodes.values())
    _same_numbers(model, g)


def test_darknet_edge_pad_before_a_stride_1_pool_folds_where_border_copies_cannot_win():
    """darknet2onnx: Pad(edge, bottom/right 1) -> MaxPool 2x2 stride 1 is a max pool with padding; an edge pad of 2
    in front of a 2x2 pool makes windows of copies only, and stays."""
    n = Net()
    one = n.const("one", np.array([0, 0, 0, 0, 0, 0, 1, 1], np.int64))
    two = n.const("two", np.array([0, 0, 0, 0, 0, 0, 2, 2], np.int64))
    y = n.node("LeakyRelu", [n.conv("x", "a")], "act", alpha=0.1)
    p1 = n.node("MaxPool", [n.node("Pad", [y, one], "pad1", mode="edge")], "pool1", kernel_shape=[2, 2])
    p2 = n.node("MaxPool", [n.node("Pad", [n.conv(p1, "b"), two], "pad2", mode="edge")], "pool2",
                kernel_shape=[2, 2])
    model = n.model([p2])
    g = run_fusion(ir_of(model))
    pads = [node.op_type for node in g.nodes.values() if node.op_type == "Pad"]
    assert pads == ["Pad"] and "pad1" in g.nodes["a"].origin, _kinds(g)
    _same_numbers(model, g)


def test_spp_pools_become_chains_of_3x3_pools():
    n = Net()
    y = n.conv("x", "c")
    pools = [n.node("MaxPool", [y], f"p{k}", kernel_shape=[k, k], pads=[k // 2] * 4) for k in (5, 9, 13)]
    model = n.model([n.node("Concat", [y] + pools, "spp", axis=1)])
    g = run_fusion(ir_of(model))
    pools_3x3 = [node for node in g.nodes.values() if node.kind is OpKind.MAXPOOL]
    assert len(pools_3x3) == 2 + 4 + 6 and all(node.attr("kernel_shape") == [3, 3] for node in pools_3x3)
    assert sorted(o for node in pools_3x3 for o in node.origin) == ["p13", "p5", "p9"]
    _same_numbers(model, g)


def test_upsample_by_four_is_two_x2_steps_the_last_read_by_the_conv():
    n = Net()
    up = n.node("Resize", [n.conv("x", "a"), "", n.const("sc", np.array([1, 1, 4, 4], np.float32))], "up4",
                mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    model = n.model([n.conv(up, "b")])
    g = run_fusion(ir_of(model))
    assert _kinds(g) == [("FUSED_CONV", "conv 3x3"), ("RESIZE", "Resize"), ("FUSED_CONV", "up2 conv 3x3")]
    _same_numbers(model, g)


@pytest.mark.parametrize("spelling", ["split", "slices"])
def test_c2f_split_becomes_convs_of_the_halves(spelling):
    """YOLOv8's C2f: cv1 -> split in two halves -> bottleneck on the second (with its shortcut) -> concat of all."""
    n = Net(channels=8)
    y = n.conv("x", "cv1")
    y = n.node("Mul", [y, n.node("Sigmoid", [y], "cv1_sig")], "cv1_silu")
    if spelling == "split":
        n.nodes.append(helper.make_node("Split", [y, n.const("halves", np.array([4, 4]))], ["a", "b"], name="split",
                                        axis=1))
    else:
        for name, lo, hi in (("a", 0, 4), ("b", 4, 8)):
            n.node("Slice", [y, n.const(f"{name}_s", np.array([lo])), n.const(f"{name}_e", np.array([hi])),
                             n.const(f"{name}_ax", np.array([1]))], name)
    m = n.node("Add", [n.conv("b", "m", cin=4, cout=4), "b"], "shortcut")
    cat = n.node("Concat", ["a", "b", m], "cat", axis=1)
    model = n.model([n.conv(cat, "cv2", cin=12)])
    g = run_fusion(ir_of(model))
    kinds = [k for k, _ in _kinds(g)]
    assert kinds == ["FUSED_CONV", "FUSED_CONV", "FUSED_CONV", "CONCAT", "FUSED_CONV"], _kinds(g)
    origins = g.origin_names()
    assert sorted(origins) == sorted(o.name for o in model.graph.node)       # each original node once
    _same_numbers(model, g)


def test_grouped_convs_become_block_diagonal_up_to_eight_groups():
    n = Net(channels=16)
    w2 = n._w("g2.w", (16, 8, 3, 3), 0.2)
    a = n.node("Conv", ["x", w2], "g2", kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=2)
    w16 = n._w("g16.w", (32, 1, 3, 3), 0.2)              # depth multiplier 2: 16 groups, more than 8
    model = n.model([n.node("Conv", [a, w16], "g16", kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=16)])
    g = run_fusion(ir_of(model))
    assert [node.conv.group for node in g.nodes.values()] == [1, 16]
    _same_numbers(model, g)


def _resnext_block(n: Net, x: str, groups: int, name: str = "b") -> str:
    """ResNeXt's bottleneck middle: 1x1 conv -> ReLU -> grouped 3x3 conv -> ReLU -> 1x1 conv."""
    c = n.c
    y = n.node("Relu", [n.conv(x, f"{name}.conv1", k=1)], f"{name}.relu1")
    w = n._w(f"{name}.conv2.w", (c, c // groups, 3, 3), np.sqrt(2.0 / (9 * c // groups)))
    y = n.node("Conv", [y, w, n._w(f"{name}.conv2.b", (c,), 0.1)], f"{name}.conv2", kernel_shape=[3, 3],
               pads=[1, 1, 1, 1], group=groups)
    return n.conv(n.node("Relu", [y], f"{name}.relu2"), f"{name}.conv3", k=1)


def test_grouped_conv_runs_as_pieces_of_a_lane_block_each():
    """32 groups of 2 channels: 4 pieces of 8 groups (16 channels in and out), each a standard conv reading its
    slice; the 1x1 conv before splits into the slices, the pieces' concat is channel-offset writes. Every node
    is an engine layer, the MACs grow 8x (not 32x), the numbers do not change."""
    n = Net(channels=64)
    model = n.model([_resnext_block(n, "x", groups=32)])
    g = run_fusion(ir_of(model))
    convs = [node for node in g.nodes.values() if node.kind is OpKind.FUSED_CONV]
    assert {node.kind for node in g.nodes.values()} == {OpKind.FUSED_CONV, OpKind.CONCAT}
    pieces = [c for c in convs if c.conv.kernel == (3, 3)]
    assert len(pieces) == 4 and all(c.conv.group == 1 for c in pieces)
    assert all(g.tensors[c.inputs[0]].shape[1] == 16 and g.tensors[c.outputs[0]].shape[1] == 16 for c in pieces)
    assert all([type(s) for s in c.conv.epilogue] == [Activation] for c in pieces)        # the ReLU in each
    assert len([c for c in convs if c.name.startswith("b_conv1")]) == 4
    assert sorted(g.origin_names()) == sorted(o.name for o in model.graph.node)
    _same_numbers(model, g)


def test_a_prime_number_of_groups_splits_into_pairs_and_a_triple():
    """RegNetY's 13 groups of 8 channels: five pieces of two groups and one of three (16, ..., 16, 24 channels)."""
    n = Net(channels=104, size=4)
    model = n.model([_resnext_block(n, "x", groups=13)])
    g = run_fusion(ir_of(model))
    pieces = [c for c in g.nodes.values() if c.kind is OpKind.FUSED_CONV and c.conv.kernel == (3, 3)]
    assert [g.tensors[c.outputs[0]].shape[1] for c in pieces] == [16] * 5 + [24]
    assert {node.kind for node in g.nodes.values()} == {OpKind.FUSED_CONV, OpKind.CONCAT}
    _same_numbers(model, g)


def test_grouped_conv_stays_whole_where_its_input_cannot_be_sliced_for_free():
    """The model input feeds the grouped conv: its slices would be CPU copies, and 32 groups as one
    block-diagonal conv cost 32x the MACs, so it stays a grouped conv (the CPU runs it)."""
    n = Net(channels=64)
    w = n._w("g.w", (64, 2, 3, 3), 0.2)
    model = n.model([n.node("Conv", ["x", w], "g", kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=32)])
    g = run_fusion(ir_of(model))
    assert [(node.kind, node.conv.group) for node in g.nodes.values()] == [(OpKind.FUSED_CONV, 32)]


def test_batchnorm_after_a_concat_becomes_a_depthwise_layer_with_its_activation():
    """YOLOv5's BottleneckCSP (and DenseNet): BN -> LeakyReLU on a concat, no conv to fold the BN into."""
    n = Net(channels=4)
    cat = n.node("Concat", [n.conv("x", "a"), n.conv("x", "b")], "cat", axis=1)
    n.c = 8                                 # the BN's channels
    y = n.node("LeakyRelu", [n.bn(cat, "bn")], "act", alpha=0.1)
    n.c = 4
    model = n.model([n.conv(y, "cv4", k=1, cin=8)])
    g = run_fusion(ir_of(model))
    bn = g.nodes["bn"]
    assert bn.kind is OpKind.FUSED_CONV and bn.conv.group == 8 and bn.conv.kernel == (1, 1)
    assert [s.kind for s in bn.conv.epilogue] == [ActKind.LEAKY_RELU]
    assert {node.kind for node in g.nodes.values()} == {OpKind.FUSED_CONV, OpKind.CONCAT}
    _same_numbers(model, g)


@pytest.mark.parametrize("kernel,stride,pads,include_pad,ceil,on_engine", [
    (2, 2, [0, 0, 0, 0], 0, 0, True),       # DenseNet's transition
    (3, 1, [1, 1, 1, 1], 1, 0, True),       # Inception's pool branch (torch's default count_include_pad)
    (3, 1, [1, 1, 1, 1], 0, 0, False),      # the border windows divide by fewer: not a conv
    (3, 2, [0, 0, 0, 0], 0, 1, False),      # ceil mode: the last window runs past the input
])
def test_average_pool_becomes_a_depthwise_conv_where_every_window_divides_by_its_size(
        kernel, stride, pads, include_pad, ceil, on_engine):
    n = Net(channels=4, size=8)
    y = n.node("AveragePool", [n.conv("x", "c")], "avg", kernel_shape=[kernel, kernel], strides=[stride, stride],
               pads=pads, count_include_pad=include_pad, ceil_mode=ceil)
    model = n.model([y])
    g = run_fusion(ir_of(model))
    avg = g.nodes["avg"]
    assert (avg.kind is OpKind.FUSED_CONV) == on_engine
    if on_engine:
        assert avg.conv.group == 4 and avg.conv.kernel == (kernel, kernel) and avg.conv.pads == tuple(pads)
    _same_numbers(model, g)


def test_two_slices_of_the_same_channels_get_their_own_convs_and_names():
    n = Net(channels=4)
    y = n.node("Relu", [n.conv("x", "c")], "r")
    parts = [n.node("Slice", [y, n.const(f"s{i}", np.array([0])), n.const(f"e{i}", np.array([2])),
                              n.const(f"a{i}", np.array([1]))], f"half{i}") for i in range(2)]
    model = n.model([n.node("Add", parts, "sum")])
    g = run_fusion(ir_of(model))
    convs = [node for node in g.nodes.values() if node.kind is OpKind.FUSED_CONV]
    stages = [s for node in convs for s in node.conv.stages]
    assert len(convs) == 2 and len(stages) == len(set(stages))
    _same_numbers(model, g)


def test_transposed_conv_becomes_a_fused_conv_with_bn_and_activation():
    """kernel = stride = 2: a FusedConv of the transposed form, weight [out, in, 2, 2]; BatchNorm and ReLU fuse;
    the lowered ONNX (ConvTranspose again) computes what the original does."""
    n = Net(channels=4, size=5)
    up = n.node("Relu", [n.bn(n.conv_transpose("x", "up"), "bn")], "r")
    model = n.model([up])
    g = run_fusion(ir_of(model))
    (node,) = g.nodes.values()
    assert node.kind is OpKind.FUSED_CONV and node.conv.form is ConvForm.TRANSPOSED
    assert g.const(node.conv.weight).shape == (4, 4, 2, 2)
    assert [type(s) for s in node.conv.epilogue] == [Activation]
    assert g.tensors[node.outputs[0]].shape == (1, 4, 10, 10)
    _same_numbers(model, g)


def test_transposed_conv_takes_no_residual_or_pool():
    """Its four phases write interleaved: a residual add or a max pool after it stays a layer of its own."""
    n = Net(channels=4, size=4)
    up = n.conv_transpose("x", "up")
    other = n.conv(n.node("Resize", ["x", "", n.const("sc", np.array([1, 1, 2, 2], np.float32))], "rs",
                          mode="nearest"), "c")
    s = n.node("Add", [up, other], "sum")
    p = n.node("MaxPool", [n.conv_transpose("x", "up2")], "p", kernel_shape=[2, 2], strides=[2, 2])
    model = n.model([s, p])
    g = run_fusion(ir_of(model))
    assert not g.nodes["up"].conv.epilogue and not g.nodes["up2"].conv.epilogue
    assert any(isinstance(s, ResidualAdd) for s in g.nodes["c"].conv.epilogue)     # the add went to the conv
    assert g.nodes["p"].kind is OpKind.MAXPOOL
    _same_numbers(model, g)


def test_other_transposed_convs_stay_unformed():
    n = Net(channels=4, size=4)
    model = n.model([n.conv_transpose("x", "up", k=4, pad=1)])
    g = run_fusion(ir_of(model))
    assert g.nodes["up"].kind is OpKind.CONV_TRANSPOSE
    _same_numbers(model, g)


def _l2_net(spelling: str, eps: float = 1e-12):
    n = Net(channels=6, size=5)
    x = n.node("Relu", [n.conv("x", "c")], "r")
    if spelling == "reducel2_clip_expand":
        norm = n.node("ReduceL2", [x], "norm", axes=[1], keepdims=1)
        norm = n.node("Clip", [norm, n.const("eps_value", np.array(eps, np.float32))], "eps")
        norm = n.node("Expand", [norm, n.const("shape", np.array([1, 6, 5, 5], np.int64))], "expand")
    elif spelling == "reducel2_add":
        norm = n.node("Add", [n.node("ReduceL2", [x], "norm", axes=[1], keepdims=1),
                              n.const("eps_value", np.array(eps, np.float32))], "eps")
    elif spelling == "sumsquare_sqrt":
        norm = n.node("Sqrt", [n.node("ReduceSumSquare", [x], "ss", axes=[1], keepdims=1)], "norm")
        norm = n.node("Add", [norm, n.const("eps_value", np.array(eps, np.float32))], "eps")
    else:                                   # pow_sum_sqrt_max
        sq = n.node("Pow", [x, n.const("two", np.array(2.0, np.float32))], "sq")
        norm = n.node("Sqrt", [n.node("ReduceSum", [sq, n.const("axes", np.array([1], np.int64))], "ss",
                                      keepdims=1)], "norm")
        norm = n.node("Max", [norm, n.const("eps_value", np.array(eps, np.float32))], "eps")
    y = n.node("Div", [x, norm], "l2")
    y = n.node("Mul", [y, n.const("gamma", np.linspace(5, 20, 6, dtype=np.float32).reshape(1, 6, 1, 1))], "scaled")
    return n.model([n.conv(y, "head")])


@pytest.mark.parametrize("spelling", ["reducel2_clip_expand", "reducel2_add", "sumsquare_sqrt", "pow_sum_sqrt_max"])
def test_l2_norm_spellings_become_one_lp_normalization_and_gamma_folds_into_the_head(spelling):
    model = _l2_net(spelling)
    g = run_fusion(ir_of(model))
    kinds = [node.kind for node in g.nodes.values()]
    assert kinds == [OpKind.FUSED_CONV, OpKind.LP_NORMALIZATION, OpKind.FUSED_CONV], g.signature()
    assert "scaled" in g.nodes["head"].origin          # the gamma Mul is in the head's weights
    _same_numbers(model, g)


def test_l2_norm_with_a_large_or_no_epsilon_is_left_alone():
    g = run_fusion(ir_of(_l2_net("reducel2_add", eps=0.5)))
    assert OpKind.LP_NORMALIZATION not in [node.kind for node in g.nodes.values()]
    n = Net(channels=6, size=5)
    x = n.node("Relu", [n.conv("x", "c")], "r")
    y = n.node("Div", [x, n.node("ReduceL2", [x], "norm", axes=[1], keepdims=1)], "l2")   # 0 / 0 = NaN stays
    g = run_fusion(ir_of(n.model([y])))
    assert OpKind.LP_NORMALIZATION not in [node.kind for node in g.nodes.values()]


def _permutations(graph):
    from partitioner.passes.channel_shuffle import permutation_of

    return [
        n.name for n in graph.nodes.values() if n.kind is OpKind.FUSED_CONV and permutation_of(n, graph) is not None
    ]


def test_channel_shuffle_moves_through_depthwise_and_concat_into_the_convs_reading_it():
    """A shuffle read by a depthwise conv (then a 1x1) and by a concat (then a 1x1) costs nothing."""
    n = Net(channels=8)
    x = n.node("Relu", [n.conv("x", "stem")], "stem_relu")
    y = shufflenet_unit(n, x, "u1")
    wd = n._w("dw.w", (8, 1, 3, 3), 0.4)
    d = n.node("Relu", [n.node("Conv", [y, wd], "dw", kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=8)], "dw_relu")
    cat = n.node("Concat", [n.node("MaxPool", [y], "pool", kernel_shape=[3, 3], pads=[1, 1, 1, 1]), x], "cat",
                 axis=1)
    model = n.model([n.conv(d, "head", k=1), n.conv(cat, "fuse", k=1, cin=16)])
    g = run_fusion(ir_of(model))
    assert not [k for k, _ in _kinds(g) if k == "OTHER"], _kinds(g)          # no Reshape/Transpose left
    assert _permutations(g) == []
    assert sorted(g.origin_names()) == sorted(n.name for n in model.graph.node)     # each original node once
    _same_numbers(model, g)


def test_channel_shuffle_before_a_split_runs_as_convs_of_the_halves():
    """ESNet: the next unit splits the shuffled tensor; the permutation stays as a 1x1 conv, cut per half."""
    n = Net(channels=8)
    y = shufflenet_unit(n, n.node("Relu", [n.conv("x", "stem")], "stem_relu"), "u1")
    y = shufflenet_unit(n, y, "u2")
    model = n.model([n.conv(y, "head", k=1)])
    g = run_fusion(ir_of(model))
    assert not [k for k, _ in _kinds(g) if k == "OTHER"], _kinds(g)
    assert [k for k, _ in _kinds(g)].count("FUSED_CONV") >= 8
    _same_numbers(model, g)


def test_a_channel_gather_on_the_input_folds_into_the_first_conv():
    """BGR -> RGB as Gather(axis=1, [2, 1, 0]) in front of the stem."""
    n = Net(channels=3)
    rgb = n.node("Gather", ["x", n.const("order", np.array([2, 1, 0], np.int64))], "bgr_to_rgb", axis=1)
    model = n.model([n.conv(rgb, "stem")])
    g = run_fusion(ir_of(model))
    assert _kinds(g) == [("FUSED_CONV", "conv 3x3")]
    _same_numbers(model, g)


def test_reshapes_that_move_pixels_and_shuffles_that_cancel():
    """A transpose of H and W is not a channel permutation and stays; two shuffles by 2 of 4 channels cancel."""
    n = Net(channels=4)
    x = n.conv("x", "c")
    hw = n.node("Transpose", [x], "hw", perm=[0, 1, 3, 2])
    twice = channel_shuffle(n, channel_shuffle(n, n.conv("x", "d"), "s1", 4), "s2", 4)
    model = n.model([n.conv(hw, "e"), n.conv(twice, "f")])
    g = run_fusion(ir_of(model))
    assert [k for k, _ in _kinds(g)].count("OTHER") == 1 and _permutations(g) == []
    assert sorted(g.origin_names()) == sorted(n.name for n in model.graph.node)     # each original node once
    _same_numbers(model, g)


@pytest.mark.parametrize("factor", [2, 4])
def test_darknet_converters_upsample_by_reshape_expand_reshape_becomes_the_read_mode(factor):
    """pytorch-YOLOv4's darknet2onnx writes nearest upsampling as view [N,C,H,1,W,1] -> expand -> view."""
    n = Net(channels=8, size=6)
    x = n.node("LeakyRelu", [n.conv("x", "c")], "act", alpha=0.1)
    y = n.node("Reshape", [x, n.const("s6", np.array([1, 8, 6, 1, 6, 1], np.int64))], "r1")
    y = n.node("Expand", [y, n.const("e6", np.array([1, 8, 6, factor, 6, factor], np.int64))], "ex")
    y = n.node("Reshape", [y, n.const("s4", np.array([1, 8, 6 * factor, 6 * factor], np.int64))], "r2")
    broadcast = n.node("Expand", [n.node("GlobalAveragePool", [x], "gap"), n.const("full", np.array([1, 8, 6, 6],
                                                                                              np.int64))], "bc")
    model = n.model([n.conv(y, "d"), broadcast])
    g = run_fusion(ir_of(model))
    described = [node.describe() for node in g.nodes.values()]
    assert "up2 conv 3x3" in described and "Reshape" not in described, described
    assert "Expand" in described                       # a broadcast of a pooled map is not an upsample
    _same_numbers(model, g)


@pytest.mark.parametrize("kind", ["mish", "mish_exp_log"])
def test_mish_fuses_and_the_float_partition_computes_it(kind):
    """YOLOv4's activation in both spellings becomes one LUT activation; the lowered graph (Softplus -> Tanh ->
    Mul) computes the same numbers."""
    model = _act_net(kind)
    g = run_fusion(ir_of(model))
    assert [s.kind for s in g.nodes["c"].conv.epilogue] == [ActKind.MISH]
    _same_numbers(model, g)


@pytest.mark.parametrize("axes,keep,pooled", [([2, 3], 1, True), ([-1, -2], 1, True), ([2, 3], 0, False),
                                              ([1], 1, False)])
def test_spatial_mean_becomes_global_average_pool(axes, keep, pooled):
    """timm's squeeze-and-excitation: x.mean((2, 3), keepdim=True) exports as ReduceMean."""
    n = Net(channels=4)
    m = n.node("ReduceMean", [n.conv("x", "c")], "mean", axes=axes, keepdims=keep)
    model = n.model([m])
    g = run_fusion(ir_of(model))
    assert (g.nodes["mean"].kind is OpKind.GLOBAL_AVG_POOL) == pooled
    _same_numbers(model, g)


def test_an_activation_no_conv_can_take_gets_an_identity_depthwise_conv():
    """HRNet's fuse layer (ReLU after the sum of two branches read elsewhere too) and ReXNet's ReLU6 after a
    squeeze-and-excitation gate: each activation becomes the epilogue of a 1x1 depthwise conv of weight 1."""
    n = Net(channels=4)
    a, b = n.conv("x", "a"), n.conv("x", "b")
    fused = n.node("Relu", [n.node("Add", [a, b], "sum")], "fuse_act")
    gate = n.node("Sigmoid", [n.node("GlobalAveragePool", [fused], "gap")], "gate")
    six = n.node("Clip", [n.node("Mul", [fused, gate], "gated"), n.const("lo", np.float32(0)),
                          n.const("hi", np.float32(6))], "act6")
    model = n.model([n.node("Add", [n.conv(six, "c", k=1), n.conv(a, "d", k=1)], "out"),
                     n.conv(b, "e", k=1)])
    g = run_fusion(ir_of(model))
    identities = [node for node in g.nodes.values() if node.kind is OpKind.FUSED_CONV and node.conv.group == 4
                  and np.all(g.const(node.conv.weight) == 1)]
    assert sorted(s.kind.value for node in identities for s in node.conv.epilogue) == \
        sorted([ActKind.RELU.value, ActKind.RELU6.value])
    assert not any(node.kind in (OpKind.RELU, OpKind.CLIP) for node in g.nodes.values())
    _same_numbers(model, g)


def test_an_affine_after_an_activation_becomes_one_depthwise_layer():
    """HGNetV2's learnable affine block (ReLU, then x * scale + bias with scalar constants) becomes one 1x1
    depthwise conv; the same affine on the model's input (its normalisation) stays for the CPU."""
    n = Net(channels=4)
    normalised = n.node("Sub", ["x", n.const("mean", np.full((1, 4, 1, 1), 0.5, np.float32))], "normalise")
    act = n.node("Relu", [n.conv(normalised, "c")], "act")
    scaled = n.node("Mul", [act, n.const("k", np.float32(1.7))], "scale")
    model = n.model([n.conv(n.node("Add", [scaled, n.const("b0", np.float32(-0.3))], "shift"), "d", k=1)])
    g = run_fusion(ir_of(model))
    affine = [node for node in g.nodes.values() if node.kind is OpKind.FUSED_CONV and node.conv.group == 4]
    assert len(affine) == 1 and np.allclose(g.const(affine[0].conv.weight), 1.7)
    assert np.allclose(g.const(affine[0].conv.bias), -0.3)
    assert g.nodes["normalise"].op_type == "Sub"
    _same_numbers(model, g)


def test_slices_of_a_concat_on_its_boundaries_are_its_inputs():
    """DPN's dual path: each block's concat of residual and dense parts is sliced back into them."""
    n = Net(channels=4)
    cat = n.node("Concat", [n.conv("x", "a"), n.conv("x", "b"), n.conv("x", "c")], "cat", axis=1)
    first = n.node("Slice", [cat, n.const("s0", np.array([0])), n.const("e0", np.array([4])),
                             n.const("ax0", np.array([1]))], "residual_part")
    rest = n.node("Slice", [cat, n.const("s1", np.array([4])), n.const("e1", np.array([2 ** 62])),
                            n.const("ax1", np.array([1]))], "dense_part")
    odd = n.node("Slice", [cat, n.const("s2", np.array([2])), n.const("e2", np.array([6])),
                           n.const("ax2", np.array([1]))], "across")
    outs = [n.conv(first, "d"), n.conv(rest, "e", cin=8), odd]
    model = n.model(outs)
    g = run_fusion(ir_of(model))
    slices = [node.name for node in g.nodes.values() if node.op_type == "Slice"]
    assert slices == ["across"]                     # off the boundaries (and a model output): left alone
    assert {"residual_part", "dense_part"} <= set(g.origin_names())
    _same_numbers(model, g)


def test_a_concat_read_only_by_slices_on_its_boundaries_goes_with_them():
    """Its last reader gone, the concat goes too (no layer without readers); every ONNX node keeps a home."""
    n = Net(channels=4)
    cat = n.node("Concat", [n.conv("x", "a"), n.conv("x", "b")], "cat", axis=1)
    parts = [n.node("Slice", [cat, n.const(f"s{i}", np.array([4 * i])), n.const(f"e{i}", np.array([4 * i + 4])),
                              n.const(f"ax{i}", np.array([1]))], f"part{i}") for i in range(2)]
    model = n.model([n.node("Add", parts, "sum")])
    g = run_fusion(ir_of(model))
    assert not any(node.op_type in ("Slice", "Concat") for node in g.nodes.values())
    assert sorted(g.origin_names()) == sorted(node.name for node in model.graph.node)
    _same_numbers(model, g)


# --- each pass module on its own: the pass alone (after what forms its input), the graph it gives, the numbers ---

def test_cleanup_alone_removes_each_exporter_noop():
    from partitioner.passes.cleanup import remove_exporter_noops
    n = Net()
    a = n.node("Identity", [n.conv("x", "a")], "id")
    c = n.node("Concat", [n.node("Dropout", [a], "drop")], "one", axis=1)
    s = n.node("Slice", [c, n.const("s0", np.array([0, 0])), n.const("s1", np.array([2 ** 62, 2 ** 62])),
                         n.const("ax", np.array([2, 3]))], "all")
    model = n.model([n.conv(s, "b")])
    before = ir_of(model)
    assert [k for k, _ in _kinds(before)] == ["CONV", "OTHER", "OTHER", "CONCAT", "OTHER", "CONV"]
    g = remove_exporter_noops(before)
    assert [k for k, _ in _kinds(g)] == ["CONV", "CONV"]
    assert g.nodes["b"].inputs[0] == g.nodes["a"].outputs[0]
    _same_numbers(model, g)


def test_hard_activations_alone_name_the_spelt_out_hardswish():
    from partitioner.passes.hard_activations import canonical_hard_activations
    n = Net()
    c = n.conv("x", "c")
    six = n.const("six", np.array(6.0, np.float32))
    model = n.model([n.node("Mul", [c, n.node("Div", [_relu6_plus_three(n, c, "g"), six], "gate")], "hs")])
    g = canonical_hard_activations(ir_of(model))
    assert [k for k, _ in _kinds(g)] == ["CONV", "HARD_SWISH"]
    assert sorted(g.nodes[list(g.nodes)[-1]].origin) == ["g_add", "g_clip", "gate", "hs"]
    _same_numbers(model, g)


def test_l2norm_alone_makes_one_lp_normalization_and_folds_gamma_into_the_conv_reading_it():
    from partitioner.passes.l2norm import fold_scale_into_readers, fuse_l2_normalization
    model = _l2_net("reducel2_clip_expand")
    g = fuse_l2_normalization(ir_of(model))
    assert [k for k, _ in _kinds(g)] == ["CONV", "RELU", "LP_NORMALIZATION", "MUL", "CONV"]
    _same_numbers(model, g)
    g = fold_scale_into_readers(form_convolutions(g))
    assert [k for k, _ in _kinds(g)] == ["FUSED_CONV", "RELU", "LP_NORMALIZATION", "FUSED_CONV"]
    assert "scaled" in g.nodes["head"].origin
    _same_numbers(model, g)


def test_folding_alone_takes_a_pad_and_a_channel_affine_into_the_conv():
    from partitioner.passes.folding import fold_channel_affine, fold_pad
    n = Net()
    pads = n.const("pads", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64))
    y = n.conv_valid(n.node("Pad", ["x", pads], "pad"), "c")
    scale = n.const("scale", n.rng.uniform(0.5, 2.0, (1, 4, 1, 1)).astype(np.float32))
    model = n.model([n.node("Mul", [y, scale], "mul")])
    g = form_convolutions(ir_of(model))
    assert [k for k, _ in _kinds(g)] == ["OTHER", "FUSED_CONV", "MUL"]
    g = fold_pad(g)
    assert [k for k, _ in _kinds(g)] == ["FUSED_CONV", "MUL"] and g.nodes["c"].conv.pads == (1, 1, 1, 1)
    g = fold_channel_affine(g)
    assert [k for k, _ in _kinds(g)] == ["FUSED_CONV"] and g.nodes["c"].origin == ["pad", "c", "mul"]
    _same_numbers(model, g)


def test_decompose_alone_chains_3x3_pools_and_x2_upsamples():
    from partitioner.passes.decompose import decompose_max_pools, decompose_upsample
    n = Net()
    y = n.conv("x", "c")
    pool = n.node("MaxPool", [y], "p9", kernel_shape=[9, 9], pads=[4] * 4)
    up = n.node("Resize", [pool, "", n.const("sc", np.array([1, 1, 4, 4], np.float32))], "up4", mode="nearest",
                coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    model = n.model([up])
    g = decompose_upsample(decompose_max_pools(form_convolutions(ir_of(model))))
    kinds = [k for k, _ in _kinds(g)]
    assert kinds == ["FUSED_CONV"] + ["MAXPOOL"] * 4 + ["RESIZE"] * 2
    assert all(node.attr("kernel_shape") == [3, 3] for node in g.nodes.values() if node.kind is OpKind.MAXPOOL)
    _same_numbers(model, g)


def test_data_movement_alone_makes_a_channel_shuffle_one_permutation_conv():
    from partitioner.passes.data_movement import recognise_data_movement
    n = Net(channels=4)
    model = n.model([channel_shuffle(n, n.conv("x", "c"), "shuffle", 4)])
    g = recognise_data_movement(form_convolutions(ir_of(model)))
    assert len(_permutations(g)) == 1 and len(g.nodes) == 2
    assert sorted(o for node in g.nodes.values() for o in node.origin) == sorted(n.name for n in model.graph.node)
    _same_numbers(model, g)


def test_channel_shuffle_alone_moves_a_permutation_into_the_conv_reading_it():
    from partitioner.passes.channel_shuffle import fold_channel_permutations
    from partitioner.passes.data_movement import recognise_data_movement
    n = Net(channels=4)
    model = n.model([n.conv(channel_shuffle(n, n.conv("x", "c"), "shuffle", 4), "d")])
    g = recognise_data_movement(form_convolutions(ir_of(model)))
    assert len(_permutations(g)) == 1
    g = fold_channel_permutations(g)
    assert _permutations(g) == [] and [k for k, _ in _kinds(g)] == ["FUSED_CONV", "FUSED_CONV"]
    _same_numbers(model, g)


def test_a_permutation_piece_nothing_reads_after_the_rewrites_is_dropped(tmp_path):
    """Found by hypothesis: a channel gather cut per Split half, the half a later Slice no longer reads left a
    node nothing read (a subgraph with no outputs, which onnxruntime refuses to run)."""
    from partitioner.build import PartitionConfig, run_partition
    from partitioner.passes.cleanup import drop_unread_nodes
    n = Net(channels=4)
    y = n.node("Relu", [n.conv("x", "reduce", k=1)], "reduce_relu")
    y = n.node("Conv", [y, n.weight("grouped.w", (4, 2, 3, 3), 0.3)], "grouped", kernel_shape=[3, 3],
               pads=[1, 1, 1, 1], group=2)
    y = n.node("Gather", [y, n.const("order", np.array([0, 2, 1, 3], np.int64))], "gather", axis=1)
    n.nodes.append(helper.make_node("Split", [y, n.const("sizes", np.array([2, 2], np.int64))], ["a", "b"],
                                    name="split", axis=1))
    cat = n.node("Concat", [n.conv("a", "half", cin=2, cout=2), "b"], "cat", axis=1)
    part = n.node("Slice", [cat, n.const("s", np.array([0], np.int64)), n.const("e", np.array([2], np.int64)),
                            n.const("ax", np.array([1], np.int64))], "first_half")
    model = n.model([n.conv(part, "out", cin=2)])
    g = run_fusion(ir_of(model))
    assert all(g.consumers(o) or o in g.outputs for node in g.nodes.values() for o in node.outputs)
    assert sorted(set(g.origin_names())) == sorted(node.name for node in model.graph.node)
    assert drop_unread_nodes(g) is g
    _same_numbers(model, g)
    path = n.save(["out"], tmp_path / "m.onnx")
    result = run_partition(PartitionConfig(model=path, out_dir=tmp_path / "b", verify=True, picture=False,
                                           offload_everything=True))
    assert result.verified and all(s.outputs for s in result.plan.subgraphs)


def test_op_facts_read_clip_bounds_upsample_factors_and_scalars():
    from partitioner.ir.op_facts import clip_bounds, scalar_const, upsample_factor
    n = Net()
    c = n.conv("x", "c")
    clip = n.node("Clip", [c, n.const("lo", np.array(0.0, np.float32)), n.const("hi", np.array(6.0, np.float32))],
                  "relu6")
    open_clip = n.node("Clip", [clip, n.const("lo2", np.array(-1.0, np.float32))], "floor_only")
    up = n.node("Resize", [open_clip, "", n.const("sc", np.array([1, 1, 2, 2], np.float32))], "up", mode="nearest",
                coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    g = ir_of(n.model([up]))
    assert clip_bounds(g.nodes["relu6"], g) == (0.0, 6.0)
    assert clip_bounds(g.nodes["floor_only"], g) == (-1.0, None)
    assert upsample_factor(g.nodes["up"], g) == 2
    assert scalar_const(g, g.nodes["relu6"].inputs[2]) == 6.0 and scalar_const(g, g.nodes["relu6"].inputs[0]) is None


@pytest.mark.parametrize("name", ["yolov3-tiny", "ssd-mobilenet-v1", "resblock", "two-branch", "classifier"])
def test_the_index_kept_up_to_date_by_edits_equals_a_rebuild(zoo, monkeypatch, name):
    """Edits patch the producer/consumer index instead of rebuilding it; after every edit of the whole fusion
    pipeline the patched index is exactly what a rebuild from every node gives (readers in node order)."""
    from partitioner.frontend.importer import import_model
    from partitioner.ir.graph import Graph
    patch = Graph._patch
    checked = []

    def patch_and_compare(self, gone, added):
        patch(self, gone, added)
        if self._index is None:
            return
        prod, cons = self._index
        self._index = None
        fresh_prod, fresh_cons = self._maps()
        assert prod == fresh_prod
        assert {t: r for t, r in cons.items() if r} == {t: r for t, r in fresh_cons.items() if r}
        checked.append(len(gone))

    monkeypatch.setattr(Graph, "_patch", patch_and_compare)
    graph = import_model(zoo(name) if name in ("resblock", "two-branch", "classifier") else zoo(name, 96)).graph
    run_fusion(graph)
    assert checked


@pytest.mark.parametrize("spelling", ["torch", "transformers", "gate_half", "mul_root", "tanh_pow", "tanh_mul"])
def test_gelu_spellings_fuse_into_the_conv_as_one_table_activation(spelling):
    """Each exporter spelling of GELU becomes one Gelu before the affine passes can take its Div and Mul by 0.5
    apart, and the conv takes it as a table activation; the graph still computes the model."""
    from graphs import gelu_erf, gelu_tanh

    from partitioner.ir.op_facts import gelu_is_tanh
    from partitioner.passes.smooth_activations import canonical_gelu
    n = Net(channels=8)
    c = n.conv("x", "c")
    if spelling.startswith("tanh"):
        y = gelu_tanh(n, c, "g", cube=spelling.split("_")[1])
    else:
        y = gelu_erf(n, c, "g", grouping="gate_half" if spelling == "mul_root" else spelling,
                     scale_by_mul=spelling == "mul_root")
    model = n.model([n.conv(y, "tail")])
    canonical = canonical_gelu(ir_of(model))
    assert [node.op_type for node in canonical.nodes.values()] == ["Conv", "Gelu", "Conv"]
    gelu = next(v for v in canonical.nodes.values() if v.op_type == "Gelu")
    assert gelu_is_tanh(gelu) == spelling.startswith("tanh")
    _same_numbers(model, canonical)
    g = run_fusion(ir_of(model))
    convs = [node for node in g.nodes.values() if node.kind is OpKind.FUSED_CONV]
    assert len(g.nodes) == 2 and convs[0].conv.epilogue == (
        Activation(ActKind.GELU_TANH if spelling.startswith("tanh") else ActKind.GELU),)
    _same_numbers(model, g)


def test_a_gelu_whose_inner_tensor_is_read_elsewhere_is_left_alone():
    from graphs import gelu_erf

    from partitioner.passes.smooth_activations import canonical_gelu
    n = Net(channels=8)
    y = gelu_erf(n, n.conv("x", "c"), "g")
    model = n.model([y, "g.erf"])
    g = canonical_gelu(ir_of(model))
    assert "Gelu" not in [node.op_type for node in g.nodes.values()]
    _same_numbers(model, g)


@pytest.mark.parametrize("kind,op,attrs", [(ActKind.TANH, "Tanh", {}), (ActKind.SOFTPLUS, "Softplus", {}),
                                           (ActKind.ELU, "Elu", {"alpha": 0.7}),
                                           (ActKind.SELU, "Selu", {"alpha": 1.5, "gamma": 1.1})])
def test_smooth_onnx_activations_fuse_as_table_activations(kind, op, attrs):
    n = Net(channels=8)
    model = n.model([n.conv(n.node(op, [n.conv("x", "c")], "a", **attrs), "tail")])
    g = run_fusion(ir_of(model))
    first = next(iter(g.nodes.values()))
    assert len(g.nodes) == 2 and first.conv.epilogue[0].kind is kind
    if kind is ActKind.SELU:
        assert first.conv.epilogue[0].alpha == pytest.approx(1.5) and first.conv.epilogue[0].beta == pytest.approx(1.1)
    _same_numbers(model, g)


def test_prelu_with_a_shared_slope_is_a_leaky_relu_of_the_conv():
    from graphs import prelu
    n = Net(channels=8)
    model = n.model([n.conv(prelu(n, n.conv("x", "c"), "p", [[[0.25]]]), "tail")])
    g = run_fusion(ir_of(model))
    first = next(iter(g.nodes.values()))
    assert len(g.nodes) == 2 and first.conv.epilogue == (Activation(ActKind.LEAKY_RELU, alpha=0.25),)
    assert "p" in first.origin
    _same_numbers(model, g)


def test_prelu_per_channel_after_a_conv_is_its_requantisers_negative_side():
    n = Net(channels=8)
    slopes = np.array([-0.5, 0.0, 0.1, 0.25, 0.5, 1.0, 1.5, 0.02], np.float32).reshape(8, 1, 1)
    model = n.model([n.conv(n.node("PRelu", [n.conv("x", "c"), n.const("a", slopes)], "p"), "tail")])
    g = run_fusion(ir_of(model))
    first = next(iter(g.nodes.values()))
    assert len(g.nodes) == 2 and first.conv.epilogue == (
        Activation(ActKind.PRELU, slopes=tuple(float(a) for a in slopes.ravel())),)
    assert first.origin == ["c", "p"]
    _same_numbers(model, g)


def test_prelu_per_channel_no_conv_can_take_becomes_two_channelwise_layers_and_a_residual_add():
    """After an add of two branches: x + (1 - a) relu(-x), any slope (negative and above 1 included), every node
    an engine layer."""
    from graphs import prelu
    n = Net(channels=8)
    slopes = np.array([-0.5, 0.0, 0.1, 0.25, 0.5, 1.0, 1.5, 0.02], np.float32).reshape(8, 1, 1)
    s = n.node("Add", [n.conv("x", "a"), n.conv("x", "b")], "sum")
    model = n.model([n.conv(prelu(n, s, "p", slopes), "tail")])
    g = run_fusion(ir_of(model))
    nodes = list(g.nodes.values())
    assert [node.kind for node in nodes] == [OpKind.FUSED_CONV] * 5          # a, b + a (the add), negate, scale, tail
    negate, scale = nodes[2], nodes[3]
    assert negate.conv.group == 8 and negate.conv.epilogue == (Activation(ActKind.RELU),)
    np.testing.assert_array_equal(g.const(negate.conv.weight).ravel(), -np.ones(8))
    np.testing.assert_allclose(g.const(scale.conv.weight).ravel(), 1 - slopes.ravel())
    assert scale.conv.epilogue == (ResidualAdd(nodes[1].outputs[0]),) and "p" in scale.origin
    _same_numbers(model, g)


def test_prelu_with_a_slope_per_pixel_stays_as_it_is():
    """A [C] slope on an NCHW tensor broadcasts over W, not the channels: no engine form."""
    from graphs import prelu
    n = Net(channels=8, size=8)
    model = n.model([prelu(n, n.conv("x", "c"), "p", np.linspace(0, 1, 8))])
    g = run_fusion(ir_of(model))
    assert [node.op_type for node in g.nodes.values()] == ["FusedConv", "PRelu"]
    _same_numbers(model, g)


@pytest.mark.parametrize("keras", [True, False])
def test_a_dense_layer_over_a_flattened_map_becomes_one_conv_with_the_map_as_kernel(keras):
    """keras' Transpose to NHWC + Reshape, or torch's Flatten of NCHW, before a dense layer: the flatten leaves the
    graph and the dense layer reads the map as a 3x3 conv with no padding; the numbers stay."""
    n = Net(channels=8, size=3)
    y = n.conv("x", "c")
    if keras:
        y = n.node("Reshape", [n.node("Transpose", [y], "permute", perm=[0, 2, 3, 1]),
                               n.const("flat.shape", np.array([1, -1], np.int64))], "flat")
    else:
        y = n.node("Flatten", [y], "flat", axis=1)
    w = n.weight("fc.w", (72, 16), 0.1)
    out = n.node("Add", [n.node("MatMul", [y, w], "fc.mm"), n.const("fc.b", np.full(16, 0.1, np.float32))], "fc")
    model = n.model([n.node("Relu", [out], "fc.relu")])
    g = run_fusion(ir_of(model))
    assert [(node.kind, node.conv.form, node.conv.kernel) for node in g.nodes.values()] == [
        (OpKind.FUSED_CONV, ConvForm.CONV, (3, 3)), (OpKind.FUSED_CONV, ConvForm.CONV, (3, 3))]
    head = list(g.nodes.values())[1]
    assert head.conv.pads == (0, 0, 0, 0) and head.conv.epilogue == (Activation(ActKind.RELU),)
    assert g.tensors[head.outputs[0]].shape == (1, 16) and {"flat", "fc.mm", "fc"} <= set(head.origin)
    _same_numbers(model, g)


def test_a_flatten_read_by_something_else_too_is_left_alone():
    n = Net(channels=8, size=3)
    y = n.node("Flatten", [n.conv("x", "c")], "flat", axis=1)
    fc = n.node("MatMul", [y, n.weight("fc.w", (72, 16), 0.1)], "fc")
    model = n.model([fc, n.node("Softmax", [y], "soft")])
    g = run_fusion(ir_of(model))
    assert "Flatten" in [node.op_type for node in g.nodes.values()]
    _same_numbers(model, g)


def test_two_clamps_in_one_fused_conv_keep_their_own_bounds():
    """Conv -> Clip(-1, 2) -> residual Add -> Clip(0, 3) (a QDQ model's one-sided pairs become such clamps): one
    fused conv with two clamps, whose ONNX form must carry both bounds (they once shared one constant name, and the
    second overwrote the first)."""
    n = Net(channels=8, size=12)
    lo1, hi1 = n.const("lo1", np.array(-1.0, np.float32)), n.const("hi1", np.array(2.0, np.float32))
    lo2, hi2 = n.const("lo2", np.array(0.0, np.float32)), n.const("hi2", np.array(3.0, np.float32))
    a = n.node("Clip", [n.conv("x", "c1"), lo1, hi1], "clip1")
    b = n.node("Clip", [n.node("Add", [a, "x"], "add"), lo2, hi2], "clip2")
    model = n.model([b])
    g = run_fusion(ir_of(model))
    fused = [node for node in g.nodes.values() if node.conv is not None]
    assert len(fused) == 1
    clamps = [s for s in fused[0].conv.epilogue if isinstance(s, Activation)]
    assert [(s.lo, s.hi) for s in clamps] == [(-1.0, 2.0), (0.0, 3.0)]
    _same_numbers(model, g)
