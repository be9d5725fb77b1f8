"""Model zoo: parameter and MAC counts read back from the ONNX files, reproducibility, structure."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import numpy_helper, shape_inference

import models


def _counts(model: onnx.ModelProto) -> tuple[int, int]:
    """Trainable parameters (conv/gemm weights and biases, BN scale and shift) and conv MACs, from the file."""
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    light = onnx.ModelProto()
    light.CopyFrom(model)
    inferred = shape_inference.infer_shapes(light)
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in inferred.graph.value_info}
    params = macs = 0
    for n in model.graph.node:
        if n.op_type in ("Conv", "Gemm"):
            params += sum(inits[i].size for i in n.input[1:] if i)
        if n.op_type == "BatchNormalization":
            params += inits[n.input[1]].size + inits[n.input[2]].size
        if n.op_type == "Mul" and n.output[0].startswith("l2norm"):
            params += inits[n.input[1]].size
        if n.op_type == "Conv":
            w = inits[n.input[1]]
            macs += int(np.prod(shapes[n.output[0]])) * int(np.prod(w.shape[1:]))
    return params, macs


def test_yolov3_matches_darknet():
    model, _ = models.build("yolov3")
    params, macs = _counts(model)
    assert params == 61_949_149
    assert round(macs / 1e9, 1) == 32.9
    assert sum(n.op_type == "Conv" for n in model.graph.node) == 75
    assert sum(n.op_type == "Add" and n.name.startswith("add") for n in model.graph.node) == 23
    assert [o.name for o in model.graph.output] == ["boxes", "scores", "selected_indices"]


def test_yolov3_tiny_matches_darknet():
    model, _ = models.build("yolov3-tiny")
    params, macs = _counts(model)
    assert params == 8_852_366
    assert round(macs / 1e9, 2) == 2.78
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("MaxPool") == 6 and ops.count("Resize") == 1 and "NonMaxSuppression" in ops


def test_ssd300_vgg16_shape_and_cost():
    model, _ = models.build("ssd300-vgg16")
    _, macs = _counts(model)
    assert abs(macs / 1e9 - 34.9) < 0.1
    out = {o.name: [d.dim_value for d in o.type.tensor_type.shape.dim] for o in model.graph.output}
    assert out["boxes"] == [1, 8732, 4] and out["class_softmax"] == [1, 8732, 91]
    ops = [n.op_type for n in model.graph.node]
    assert {"ReduceL2", "Softmax", "NonMaxSuppression"} <= set(ops)
    assert any(a.name == "dilations" and list(a.ints) == [6, 6] for n in model.graph.node for a in n.attribute)


def test_ssd_mobilenet_is_depthwise_separable():
    model, _ = models.build("ssd-mobilenet-v1")
    groups = [a.i for n in model.graph.node if n.op_type == "Conv" for a in n.attribute if a.name == "group"]
    assert sum(g > 1 for g in groups) == 13
    assert sum(n.op_type == "Clip" for n in model.graph.node) >= 27


@pytest.mark.parametrize("name", ["yolov3-tiny", "ssd-mobilenet-v1", "two-branch"])
def test_builds_are_reproducible_byte_for_byte(tmp_path, name):
    a, b = tmp_path / "a.onnx", tmp_path / "b.onnx"
    models.build_to_file(name, a, 96 if name != "two-branch" else None)
    models.build_to_file(name, b, 96 if name != "two-branch" else None)
    assert a.read_bytes() == b.read_bytes()
    c = tmp_path / "c.onnx"
    models.build_to_file(name, c, 96 if name != "two-branch" else None, seed=1)
    assert c.read_bytes() != a.read_bytes()


def test_size_and_batch_are_parameters():
    model, _ = models.build("yolov3-tiny", size=128, batch=2)
    dims = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    assert dims == [2, 128, 128, 3]
    with pytest.raises(ValueError, match="multiple of 32"):
        models.build("yolov3", size=100)


def test_detection_models_detect_something_on_random_frames():
    """Calibrated heads: a random frame gives some detections, not none and not everything."""
    import onnxruntime as ort
    model, _ = models.build("yolov3-tiny", size=128)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    frame = np.random.default_rng(0).integers(0, 256, (1, 128, 128, 3), dtype=np.uint8)
    boxes, scores, selected = sess.run(None, {"images": frame})
    assert 0 < len(selected) < scores.size // 10
