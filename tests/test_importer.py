"""Importer: opset conversion, constant folding, shape pinning, external data, topological order, names."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from graphs import Net
from ir_helpers import random_feeds, run_graph, run_model
from onnx import TensorProto, helper, numpy_helper

from partitioner.errors import ModelError
from partitioner.frontend.importer import CANONICAL_OPSET, import_model
from partitioner.ir.graph import OpKind
from partitioner.ir.names import NameTable, safe_identifier


def test_older_opset_is_converted(tmp_path):
    n = Net()
    out = n.node("Relu", [n.conv("x", "c")], "r")
    path = n.save([out], tmp_path / "m.onnx", opset=11)
    result = import_model(path)
    assert result.graph.opset == CANONICAL_OPSET
    assert any("converted opset 11" in w for w in result.warnings)
    feeds = random_feeds(result.graph)
    np.testing.assert_allclose(run_graph(result.graph, feeds)[0],
                               run_model(onnx.load(str(path)), feeds)[0], rtol=1e-6)


def test_weights_listed_as_inputs_are_constants(tmp_path):
    """An opset 8 export of IR version 3 lists every initializer as a graph input too (the rule then): the weights
    stay the model's constants, the one real input is the graph's input, and it computes what the file does with
    its own values (the version converter once doubled such inputs, which the checker refused)."""
    rng = np.random.default_rng(0)
    weights = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n)
               for n, s in (("w", (8, 4, 3, 3)), ("b", (8,)), ("g", (8,)), ("beta", (8,)), ("mu", (8,)))]
    weights.append(numpy_helper.from_array(rng.uniform(0.5, 2, 8).astype(np.float32), "var"))
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "g", "beta", "mu", "var"], ["n"]),
             helper.make_node("LeakyRelu", ["n"], ["y"], alpha=0.1)]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 10, 10])]
    inputs += [helper.make_tensor_value_info(t.name, TensorProto.FLOAT, list(t.dims)) for t in weights]
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                                                 [1, 8, 10, 10])], weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 8)])
    model.ir_version = 3
    onnx.checker.check_model(model)
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    result = import_model(path)
    assert [result.graph.tensors[i].onnx_name for i in result.graph.inputs] == ["x"]
    assert any("6 graph input(s) are also initializers" in w for w in result.warnings)
    feeds = random_feeds(result.graph)
    np.testing.assert_allclose(run_graph(result.graph, feeds)[0], run_model(model, feeds)[0], rtol=1e-5, atol=1e-5)


def test_imagescaler_of_old_exports_is_spelt_as_mul_and_add(tmp_path):
    """ImageScaler (dropped from ONNX after opset 9; Tiny YOLOv2-8 of the model zoo opens with it) imports as Mul
    and Add and computes what onnxruntime, which still runs it, computes on the original."""
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w")
    nodes = [helper.make_node("ImageScaler", ["x"], ["s"], name="scaler", scale=1 / 255, bias=[-0.5, 0.25, 0.1]),
             helper.make_node("Conv", ["s", "w"], ["y"], pads=[1, 1, 1, 1])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8]),
                                           helper.make_tensor_value_info("w", TensorProto.FLOAT, [8, 3, 3, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8, 8])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 8)])
    model.ir_version = 3
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    result = import_model(path)
    assert any("1 ImageScaler node(s)" in w and "scaler" in w for w in result.warnings)
    assert "ImageScaler" not in {n.op_type for n in result.graph.nodes.values()}
    feeds = {"x": rng.uniform(0, 255, (1, 3, 8, 8)).astype(np.float32)}
    np.testing.assert_allclose(run_graph(result.graph, feeds)[0], run_model(model, feeds)[0], rtol=1e-5, atol=1e-5)


def _if_model(cond_constant: bool, clash: bool = False) -> onnx.ModelProto:
    rng = np.random.default_rng(2)
    w = numpy_helper.from_array(rng.standard_normal((4, 4, 3, 3)).astype(np.float32), "w")
    then_g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["a" if clash else "t"], pads=[1, 1, 1, 1])],
                               "then", [], [helper.make_tensor_value_info("a" if clash else "t", TensorProto.FLOAT,
                                                                           None)])
    else_g = helper.make_graph([helper.make_node("Relu", ["x"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, None)])
    nodes = [helper.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g)]
    inits = [w]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 6])]
    if cond_constant:
        inits.append(numpy_helper.from_array(np.array(True), "cond"))
    else:
        inputs.append(helper.make_tensor_value_info("cond", TensorProto.BOOL, []))
    if clash:                                # an outer tensor of the branch's local name, after the If
        nodes.append(helper.make_node("Relu", ["y"], ["a"]))
    outputs = [helper.make_tensor_value_info("a" if clash else "y", TensorProto.FLOAT, [1, 4, 6, 6])]
    model = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, inits),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_an_if_of_a_constant_condition_is_its_taken_branch(tmp_path):
    """Scripted exports test flags and shapes that folding makes constant: such an If becomes the branch it always
    takes (a conv inside it a layer); an If of a runtime condition, or whose branch names would clash, stays."""
    x = np.random.default_rng(3).standard_normal((1, 4, 6, 6)).astype(np.float32)
    model = _if_model(True)
    path = tmp_path / "c.onnx"
    onnx.save(model, str(path))
    result = import_model(path)
    ops = {n.op_type for n in result.graph.nodes.values()}
    assert "If" not in ops and "Conv" in ops
    np.testing.assert_allclose(run_graph(result.graph, {"x": x})[0], run_model(model, {"x": x})[0], rtol=1e-5,
                               atol=1e-5)
    for kept in (_if_model(False), _if_model(True, clash=True)):
        onnx.save(kept, str(path))
        assert "If" in {n.op_type for n in import_model(path).graph.nodes.values()}


def test_shape_chains_are_folded(zoo):
    result = import_model(zoo("yolov3-tiny", 96))
    kinds = {n.op_type for n in result.graph.nodes.values()}
    assert not {"Shape", "Gather", "Unsqueeze"} & kinds
    assert sum(f.startswith("shape") for f in result.folded) == 6
    reshape = next(n for n in result.graph.nodes.values() if n.op_type == "Reshape")
    assert result.graph.const(reshape.inputs[1]) is not None


def test_shapes_are_inferred_for_every_tensor(zoo):
    g = import_model(zoo("ssd-mobilenet-v1", 96)).graph
    for node in g.nodes.values():
        for t in node.outputs:
            assert g.tensors[t].shape is not None, t


def test_unsorted_nodes_are_put_in_order(tmp_path):
    n = Net()
    out = n.node("Relu", [n.conv("x", "c")], "r")
    model = n.model([out])
    model.graph.node.reverse()
    onnx.save(model, str(tmp_path / "m.onnx"))
    g = import_model(tmp_path / "m.onnx").graph
    assert list(g.nodes) == ["c", "r"]


def test_external_data_inside_the_folder_loads(tmp_path):
    n = Net(channels=16)
    out = n.conv("x", "c")
    model = n.model([out])
    onnx.save(model, str(tmp_path / "m.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
              location="m.data", size_threshold=0)
    g = import_model(tmp_path / "m.onnx").graph
    w = g.const(g.nodes["c"].inputs[1])
    np.testing.assert_array_equal(w.reshape(-1)[:5], numpy_helper.to_array(n.inits[0]).reshape(-1)[:5])


def test_pinned_shape_must_agree_with_fixed_dims(tmp_path):
    n = Net()
    path = n.save([n.conv("x", "c")], tmp_path / "m.onnx")
    with pytest.raises(
        ModelError, match=r"dimension 1 is fixed at 4 by the model, 3 given; .* x \[1, 4, 6, 6\] float32 \(NCHW"
    ):
        import_model(path, {"x": (1, 3, 6, 6)})
    with pytest.raises(ModelError, match="rank 3 given"):
        import_model(path, {"x": (1, 4, 6)})


def test_ir_keeps_original_names_and_sanitises(tmp_path):
    n = Net()
    n.inits.append(numpy_helper.from_array(np.ones((4, 4, 1, 1), np.float32), "w/1"))
    n.nodes.append(helper.make_node("Conv", ["x", "w/1"], ["y:0"], name="/model.0/conv"))
    g = import_model(n.save(["y:0"], tmp_path / "m.onnx")).graph
    node = next(iter(g.nodes.values()))
    assert node.name == "model_0_conv" and node.origin == ["/model.0/conv"]
    assert g.tensors[node.outputs[0]].onnx_name == "y:0" and node.outputs[0] == "y_0"
    assert node.kind is OpKind.CONV


def test_name_table_is_unique_and_stable():
    t = NameTable()
    assert t.safe("a/b") == "a_b"
    assert t.safe("a_b") == "a_b_1"
    assert t.safe("a/b") == "a_b"
    assert t.fresh("a_b") == "a_b_2"
    assert t.fresh("x") == "x"
    assert t.safe("x") == "x_1"        # an original that a pass name already took still gets its own
    for hostile in ['a"b', "x*/y", "s;t", "$d", "", "9lives", "é"]:
        assert safe_identifier(hostile).isidentifier() and safe_identifier(hostile).isascii()


def _shape_chain_model() -> onnx.ModelProto:
    """An exporter's upsample (Shape -> Gather -> Cast -> Mul -> Cast -> Unsqueeze -> Concat -> Resize sizes) and,
    behind it, a crop whose end comes from the Resize's output shape (Shape -> Gather -> Div -> Cast -> Unsqueeze
    -> Slice): the second chain folds only once the first has and inference has run again."""
    n = Net(channels=4, size=8)
    c1 = n.conv("x", "c1")

    def dim(t, axis, tag):
        shape = n.node("Shape", [t], f"{tag}_shape")
        return n.node("Gather", [shape, n.const(f"{tag}_i", np.array(axis, np.int64))], f"{tag}_g", axis=0)

    as_float = n.node("Cast", [dim(c1, 2, "h")], "h_f", to=TensorProto.FLOAT)
    h = n.node("Cast", [n.node("Mul", [as_float, n.const("two_f", np.array(2.0, np.float32))], "h2")], "h2i",
               to=TensorProto.INT64)
    w = n.node("Mul", [dim(c1, 3, "w"), n.const("two", np.array(2, np.int64))], "w2")
    sizes = n.node("Concat", [n.const("nc", np.array([1, 4], np.int64)),
                              n.node("Unsqueeze", [h, n.const("ax_h", np.array([0], np.int64))], "hu"),
                              n.node("Unsqueeze", [w, n.const("ax_w", np.array([0], np.int64))], "wu")], "sizes",
                   axis=0)
    up = n.node("Resize", [c1, "", "", sizes], "up", mode="nearest", coordinate_transformation_mode="asymmetric",
                nearest_mode="floor")
    c2 = n.conv(up, "c2")
    half = n.node("Div", [dim(c2, 2, "h3"), n.const("two_i", np.array(2, np.int64))], "half")
    ends = n.node("Unsqueeze", [n.node("Cast", [half], "half_c", to=TensorProto.INT64),
                                n.const("ax_e", np.array([0], np.int64))], "ends")
    crop = n.node("Slice", [c2, n.const("starts", np.array([0], np.int64)), ends,
                            n.const("axes", np.array([2], np.int64))], "crop")
    return n.model([n.conv(crop, "c3")])


def test_shape_chains_fold_to_a_fixed_point(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(_shape_chain_model(), str(path))
    result = import_model(path)
    ops = {n.op_type for n in result.graph.nodes.values()}
    assert not ops & {"Shape", "Gather", "Div", "Cast", "Unsqueeze", "Concat", "Mul"}, ops
    assert {"h3_shape", "half", "ends", "sizes"} <= set(result.folded)
    assert all(t.is_static for t in result.graph.tensors.values() if t.data is None and t.shape is not None)
    feeds = {"x": np.random.default_rng(0).standard_normal((1, 4, 8, 8)).astype(np.float32)}
    np.testing.assert_allclose(run_graph(result.graph, feeds)[0], run_model(onnx.load(str(path)), feeds)[0],
                               rtol=1e-5, atol=1e-6)


def test_weights_behind_a_cast_fold_into_the_conv(tmp_path):
    """fp16 exports cast their (big) weights to float32 at run time: the Cast folds, the conv gets constants."""
    n = Net(channels=32, size=8)
    w16 = numpy_helper.from_array((n.rng.standard_normal((32, 32, 3, 3)) * 0.1).astype(np.float16), "w16")
    n.inits.append(w16)
    w = n.node("Cast", ["w16"], "w_cast", to=TensorProto.FLOAT)
    n.node("Conv", ["x", w], "c", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    path = n.save(["c"], tmp_path / "m.onnx")
    result = import_model(path)
    conv = result.graph.nodes["c"]
    assert "w_cast" in result.folded and result.graph.const(conv.inputs[1]).dtype == np.float32


def test_dynamic_reason_names_the_input_only_when_an_input_is_dynamic(tmp_path):
    from partitioner.passes.pipeline import run_fusion
    from partitioner.targets import fpga
    n = Net(channels=4, size=8)
    path = n.save([n.node("Relu", [n.conv(n.conv("x", "c0"), "c1")], "r")], tmp_path / "m.onnx")
    graph = run_fusion(import_model(path).graph)
    node = next(v for v in graph.nodes.values() if "c1" in v.origin)
    graph.tensors[node.inputs[0]].shape = (1, 4, "h", 8)          # as a data-dependent op would leave it
    verdict = fpga.check(node, graph, {})
    assert not verdict.ok and "--input-shape" not in verdict.reason and "depends on data" in verdict.reason
    graph.tensors[graph.inputs[0]].shape = (1, 4, "H", "W")
    verdict = fpga.check(node, graph, {})
    assert not verdict.ok and "--input-shape" in verdict.reason and "'x'" in verdict.reason


def test_nodes_only_a_folded_shape_read_are_dropped_and_accounted_for(tmp_path):
    """torchvision's detectors: a Gather of the class logits is read only by a Shape, which folds to a constant;
    the Gather then computes what nobody reads and must not become a subgraph with no outputs."""
    n = Net()
    c = n.conv("x", "c")
    picked = n.node("Gather", [c, n.const("idx", np.array([0, 1], np.int64))], "pick", axis=1)
    size = n.node("Shape", [picked], "size")
    flat = n.node("Reshape", [n.node("Relu", [c], "r"), n.node("Concat", [n.const("minus1", np.array([-1], np.int64)),
                                                                          size], "dims", axis=0)], "flat")
    path = n.save([flat], tmp_path / "m.onnx")
    result = import_model(path)
    assert "pick" not in {node.name for node in result.graph.nodes.values()}
    assert {"pick", "size", "dims"} <= set(result.folded)
    assert sorted([o for node in result.graph.nodes.values() for o in node.origin] + result.folded) \
        == sorted(node.name for node in onnx.load(str(path)).graph.node)


def test_an_output_whose_shape_inference_cannot_tell_keeps_its_declared_shape(tmp_path):
    """An If whose branches differ in rank (Mask/Keypoint R-CNN's outputs come out of If and Loop): ONNX inference
    leaves the output without a shape, which its checker then rejects; the model's own declaration stands."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 6])
    branch = lambda op, out: helper.make_graph([helper.make_node(op, ["x"], [out])], out, [],  # noqa: E731
                                               [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)])
    g = helper.make_graph(
        [helper.make_node("ReduceMax", ["x"], ["m"], keepdims=0), helper.make_node("Greater", ["m", "z"], ["c"]),
         helper.make_node("If", ["c"], ["y"], name="if", then_branch=branch("Flatten", "t"),
                          else_branch=branch("Relu", "e"))],
        "g", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 144])],
        [numpy_helper.from_array(np.array(0.0, np.float32), "z")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "if.onnx"
    onnx.save(model, str(path))
    result = import_model(path)
    assert result.graph.tensors["y"].shape == (1, 144)


def test_constant_folding_alone_folds_shape_arithmetic_and_keeps_what_runs():
    from partitioner.frontend.constant_folding import fold_constants
    n = Net(channels=4, size=6)
    c = n.conv("x", "c")
    shape = n.node("Shape", [c], "shape")
    batch = n.node("Gather", [shape, n.const("zero", np.array(0, np.int64))], "batch", axis=0)
    flat = n.node("Concat", [n.node("Unsqueeze", [batch, n.const("ax", np.array([0], np.int64))], "b1"),
                             n.const("rest", np.array([-1], np.int64))], "flat_shape", axis=0)
    model = onnx.shape_inference.infer_shapes(n.model([n.node("Reshape", [c, flat], "flat")]))
    folded_model, folded = fold_constants(model, 17, {})
    assert folded == ["shape", "batch", "b1", "flat_shape"]
    assert [node.name for node in folded_model.graph.node] == ["c", "flat"]
    consts = {t.name: numpy_helper.to_array(t) for t in folded_model.graph.initializer}
    assert consts["flat_shape"].tolist() == [1, -1]


def _verified_build(tmp_path, model, **kw):
    from partitioner.build import PartitionConfig, run_partition
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    result = run_partition(PartitionConfig(model=path, out_dir=tmp_path / "b", verify=True, picture=False,
                                           offload_everything=True, **kw))
    assert result.verified, result.checks
    return result


def test_opset_18_reduce_split_pad_resize_and_mish_import_in_opset_17(tmp_path):
    """ultralytics and torch >= 2.5 export opset 18+; onnx's converter cannot go down from there."""
    n = Net(channels=4, size=8)
    c = n.conv("x", "c")
    gate = n.node("Sigmoid", [n.node("ReduceMean", [c, n.const("axes", np.array([2, 3], np.int64))], "mean",
                                     keepdims=1)], "gate")
    y = n.node("Mul", [c, gate], "se")
    n.nodes.append(helper.make_node("Split", [y], ["a", "b"], name="split", axis=1, num_outputs=2))
    cat = n.node("Concat", [n.conv("a", "ca", cin=2, cout=2), n.conv("b", "cb", cin=2, cout=2)], "cat", axis=1)
    pad = n.node("Pad", [cat, n.const("pads", np.array([1, 1, 1, 1], np.int64)), "",
                         n.const("pad_axes", np.array([2, 3], np.int64))], "pad")
    m = n.node("Mish", [n.conv_valid(pad, "cv")], "mish")
    up = n.node("Resize", [m, "", n.const("sc", np.array([1, 1, 2, 2], np.float32))], "up", mode="nearest",
                coordinate_transformation_mode="asymmetric", nearest_mode="floor", antialias=0,
                keep_aspect_ratio_policy="stretch")
    model = n.model([n.conv(up, "out")], opset=18)
    result = _verified_build(tmp_path, model)
    assert "converted opset 18 to 17" in result.warnings
    graph = result.partition.graph
    assert any("mish" in node.describe() for node in graph.nodes.values() if node.kind is OpKind.FUSED_CONV)
    where = {n: s.device for s in result.plan.subgraphs for n in s.nodes}
    assert where["mean"] == where["mish"] == where["pad"] == where["up"] == "fpga"   # GAP, fused, folded, read mode


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_opset_20_gelu_is_spelt_out_and_computes_the_same(tmp_path, approximate):
    n = Net(channels=4, size=6)
    g = n.node("Gelu", [n.conv("x", "c")], "gelu", approximate=approximate)
    model = n.model([n.conv(g, "out")], opset=20)
    model.ir_version = 9
    result = _verified_build(tmp_path, model)
    assert result.plan.model["opset"] == 17
    ops = {o for s in result.plan.subgraphs for o in s.nodes}
    assert "gelu" in ops


def test_an_op_newer_than_opset_17_without_a_spelling_is_refused_in_one_line(tmp_path):
    n = Net(channels=4, size=6)
    gn = n.node("GroupNormalization", [n.conv("x", "c"), n.const("s", np.ones(4, np.float32)),
                                       n.const("b", np.zeros(4, np.float32))], "groupnorm", num_groups=2)
    model = n.model([gn], opset=21)
    model.ir_version = 10
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    with pytest.raises(ModelError) as err:
        import_model(path)
    text = err.value.message()
    assert "groupnorm" in text and "GroupNormalization" in text and "opset 21" in text
    assert "opset_version=17" in text


def test_split_num_outputs_of_an_uneven_dimension_matches_onnxruntime(tmp_path):
    n = Net(channels=5, size=6)
    n.nodes.append(helper.make_node("Split", [n.conv("x", "c")], ["a", "b"], name="split", axis=1,
                                    num_outputs=2))
    model = n.model([n.node("Relu", ["a"], "ra"), n.node("Relu", ["b"], "rb")], opset=18)
    result = _verified_build(tmp_path, model)
    shapes = {t.name: t.shape for s in result.plan.subgraphs for t in s.outputs}
    assert shapes["ra"][1] == 3 and shapes["rb"][1] == 2


@pytest.mark.parametrize("op", ["ConstantOfShape", "Expand", "Tile"])
def test_a_constant_of_gigabytes_is_refused_before_it_is_made(tmp_path, op):
    """A 200-byte file whose folding would allocate 8 GiB gets one error naming the node, at once."""
    import resource
    import time
    inits = [numpy_helper.from_array(np.array([1024, 1024, 1024], np.int64), "dims"),
             numpy_helper.from_array(np.ones((1, 1, 1), np.float32), "one")]
    if op == "ConstantOfShape":
        node = helper.make_node(op, ["dims"], ["big"], name="bloat")
    else:
        node = helper.make_node(op, ["one", "dims"], ["big"], name="bloat")
    add = helper.make_node("Add", ["x", "big"], ["y"], name="use")
    g = helper.make_graph([node, add], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "m.onnx"))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    with pytest.raises(ModelError, match=rf"node 'bloat' op {op}: makes a tensor of 1,073,741,824 elements"):
        import_model(tmp_path / "m.onnx")
    assert time.perf_counter() - t0 < 10
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 1 << 20        # KiB: under 1 GiB more
