"""QDQ models from onnxruntime's quantize_static run on the engine's integer semantics with their own scales,
within 1 LSB of the QDQ model's semantics (DequantizeLinear, float op, QuantizeLinear), as onnxruntime computes
them with its graph optimisations off. At its default level onnxruntime fuses QDQ into integer kernels whose u8s8
path saturates on AVX2 CPUs without VNNI: that kernel depends on the machine, the semantics do not."""
from __future__ import annotations

import json
import logging

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from graphs import Net
from onnx import numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

from fpga_runtime.run.session import Session
from partitioner.build import PartitionConfig, run_partition


def _float_model(path):
    """BN already folded (as quantisation pre-processing leaves it): conv+relu, residual, pool, leaky, 1x1."""
    n = Net(channels=8, size=12)
    a = n.node("Relu", [n.conv("x", "c1")], "r1")
    b = n.node("Relu", [n.node("Add", [n.conv(a, "c2"), a], "add")], "r2")
    p = n.node("MaxPool", [b], "pool", kernel_shape=[2, 2], strides=[2, 2])
    y = n.node("LeakyRelu", [n.conv(p, "c3")], "leaky", alpha=0.1)
    return n.save([n.conv(y, "c4", k=1)], path)


class _Frames(CalibrationDataReader):
    def __init__(self, frames):
        self.it = iter(frames)

    def get_next(self):
        return next(self.it, None)


@pytest.fixture(scope="module")
def qdq(tmp_path_factory):
    root = tmp_path_factory.mktemp("qdq")
    frames = [{"x": np.random.default_rng(i).standard_normal((1, 8, 12, 12)).astype(np.float32)} for i in range(16)]
    logging.getLogger().setLevel(logging.ERROR)
    quantize_static(str(_float_model(root / "f.onnx")), str(root / "q.onnx"), _Frames(frames),
                    quant_format=QuantFormat.QDQ, activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                    per_channel=True, extra_options={"ActivationSymmetric": True, "WeightSymmetric": True})
    result = run_partition(PartitionConfig(model=root / "q.onnx", out_dir=root / "b", picture=False,
                                           offload_everything=True))
    return root, result


def test_qdq_pairs_become_engine_scales(qdq):
    root, result = qdq
    subgraphs = result.plan.subgraphs
    assert [s.device for s in subgraphs] == ["fpga", "cpu"]        # the output's own Q/DQ pair stays on the CPU
    assert {n.split("_")[-1] for n in subgraphs[1].nodes} == {"QuantizeLinear", "DequantizeLinear"}
    model = onnx.load(str(root / "q.onnx"))
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    engine = json.loads((root / "b" / "fpga" / "engine.json").read_text())
    assert engine["tensors"]["x"]["scale"] == pytest.approx(float(inits["x_scale"]))
    assert result.partition.graph.fixed_scales["r1"] == pytest.approx(float(inits["r1_scale"]))


def test_qdq_model_within_one_lsb_of_onnxruntime(qdq):
    root, _ = qdq
    scale = float(numpy_helper.to_array(next(t for t in onnx.load(str(root / "q.onnx")).graph.initializer
                                             if t.name == "c4_scale")))
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(str(root / "q.onnx"), options, providers=["CPUExecutionProvider"])
    diffs = []
    with Session(root / "b") as s:
        for i in range(10):
            x = {"x": np.random.default_rng(100 + i).standard_normal((1, 8, 12, 12)).astype(np.float32)}
            diffs.append(np.rint(s.run(None, x)[0] / scale) - np.rint(sess.run(None, x)[0] / scale))
    d = np.abs(np.concatenate([v.ravel() for v in diffs]))
    assert d.max() <= 1
    assert np.mean(d == 0) >= 0.9


def test_verify_of_a_qdq_model_checks_the_float_graph_the_partition_computes(qdq, tmp_path):
    """`--verify` on a QDQ model: the partition absorbs its activation Q/DQ pairs into the engine's scales, so its
    float graph is the original without them; verify checks against that (every subgraph within the float
    tolerance) and reports how far the pairs themselves move each output, which is the quantisation, not a
    partitioning error. Against the QDQ original itself the same subgraphs would differ by whole int8 steps."""
    from partitioner.evaluate.float_check import OWN_QUANTISATION, verify
    from partitioner.passes.qdq import strip_absorbed_qdq
    root, result = qdq
    checked = run_partition(PartitionConfig(model=root / "q.onnx", out_dir=tmp_path / "b", picture=False,
                                            offload_everything=True, accuracy=False, verify=True))
    assert checked.verified
    alone = [c for c in checked.checks if c.subgraph.startswith(("fpga", "cpu"))]
    assert alone and all(c.ok for c in alone)
    own = [c for c in checked.checks if c.subgraph == OWN_QUANTISATION]
    assert [c.name for c in own] == ["c4"]
    scale = float(numpy_helper.to_array(next(t for t in onnx.load(str(root / "q.onnx")).graph.initializer
                                             if t.name == "c4_scale")))
    assert own[0].max_abs >= scale                     # the pairs move the output by int8 steps of its own scale
    feeds = {"x": np.random.default_rng(7).standard_normal((1, 8, 12, 12)).astype(np.float32)}
    against_qdq = verify(checked.plan, root / "q.onnx", feeds)          # no pairs stripped: whole steps apart
    assert not all(c.ok for c in against_qdq if c.subgraph.startswith("fpga"))
    # the pairs removed are those the partition absorbed: the activations' (not the weights', not the output's)
    model = onnx.load(str(root / "q.onnx"))
    fixed = result.partition.graph.fixed_scales
    assert strip_absorbed_qdq(model, fixed) == len(fixed) >= 4
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("QuantizeLinear") == 1          # the model output's own pair stays
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    assert sess.run(None, {"x": np.zeros((1, 8, 12, 12), np.float32)})[0].shape == (1, 8, 6, 6)
