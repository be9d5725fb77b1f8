"""Importer: opset conversion, constant folding, shape pinning, external data, topological order, names."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from graphs import Net
from ir_helpers import random_feeds, run_graph, run_model
from partitioner.errors import ModelError
from partitioner.importer import CANONICAL_OPSET, import_model
from partitioner.ir import OpKind
from partitioner.names import NameTable, safe_identifier


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
    with pytest.raises(ModelError, match=r"dimension 1 is fixed at 4 by the model, 3 given; .* x \[1, 4, 6, 6\] float32 \(NCHW"):
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
