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


def _lsb_differences(root) -> np.ndarray:
    """|build - QDQ model| in steps of the output's scale over ten seeded frames, the QDQ model as onnxruntime
    computes its semantics with graph optimisations off."""
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
    return np.abs(np.concatenate([v.ravel() for v in diffs]))


def test_qdq_model_within_one_lsb_of_onnxruntime(qdq):
    root, _ = qdq
    d = _lsb_differences(root)
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
    pairs = result.partition.graph.absorbed_qdq
    assert strip_absorbed_qdq(model, pairs) == len(pairs) >= 4
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("QuantizeLinear") == 1          # the model output's own pair stays
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    assert sess.run(None, {"x": np.zeros((1, 8, 12, 12), np.float32)})[0].shape == (1, 8, 6, 6)


@pytest.fixture(scope="module")
def qdq_default(tmp_path_factory):
    """onnxruntime's quantize_static at its defaults: asymmetric int8 activations (zero points), the Relus folded
    into one-sided Q/DQ ranges."""
    root = tmp_path_factory.mktemp("qdq_default")
    frames = [{"x": np.random.default_rng(i).standard_normal((1, 8, 12, 12)).astype(np.float32)} for i in range(16)]
    logging.getLogger().setLevel(logging.ERROR)
    quantize_static(str(_float_model(root / "f.onnx")), str(root / "q.onnx"), _Frames(frames),
                    quant_format=QuantFormat.QDQ)
    result = run_partition(PartitionConfig(model=root / "q.onnx", out_dir=root / "b", picture=False,
                                           offload_everything=True, verify=True))
    return root, result


def test_asymmetric_qdq_pairs_become_symmetric_scales_and_clamps(qdq_default):
    """Each asymmetric pair gives the symmetric scale covering its range, and a one-sided one (a Relu the quantiser
    folded) a clamp that fuses into the layer before it: every conv runs in one FPGA subgraph (the pairs once stayed
    on the CPU between them), --verify holds, and the output stays near the QDQ semantics."""
    root, result = qdq_default
    model = onnx.load(str(root / "q.onnx"))
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    assert any(np.any(v != 0) for k, v in inits.items() if k.endswith("_zero_point") and not k.startswith("c"))
    assert [s.device for s in result.plan.subgraphs] == ["fpga", "cpu"]
    assert {n.split("_")[-1] for n in result.plan.subgraphs[1].nodes} == {"QuantizeLinear", "DequantizeLinear"}
    assert any("asymmetric" in w and "clamp" in w for w in result.warnings)
    assert result.verified
    graph = result.partition.graph
    lo, hi = graph.absorbed_qdq["r1_DequantizeLinear_Output"][1:]        # behind c1's folded Relu
    assert lo == 0.0 and hi > 0.0
    assert graph.fixed_scales["r1_DequantizeLinear_Output"] == pytest.approx(hi / 127.0)
    d = _lsb_differences(root)
    assert np.mean(d <= 1) >= 0.7 and np.mean(d <= 2) >= 0.85     # int8 one bit coarser on one-sided ranges


def test_represented_range_of_a_qdq_pair():
    from partitioner.passes.qdq import represented_range
    assert represented_range(0.5, np.uint8(0)) == (0.0, 127.5)
    assert represented_range(0.5, np.int8(-128)) == (0.0, 127.5)
    assert represented_range(0.5, np.int8(10)) == (-69.0, 58.5)
    assert represented_range(0.5, np.uint8(128)) == (-64.0, 63.5)



def test_a_one_sided_pair_on_a_model_input_takes_no_clamp(tmp_path):
    """A picture in [0, 1] quantised as uint8 with zero point 0: its range is one-sided, but it is the model's
    input, which already lies there; a clamp would cost a layer of its own."""
    from partitioner.frontend.importer import import_model
    from partitioner.passes.pipeline import run_fusion
    n = Net(channels=8, size=12)
    s, z = n.const("x_scale", np.array(1 / 255, np.float32)), n.const("x_zero", np.array(0, np.uint8))
    x = n.node("DequantizeLinear", [n.node("QuantizeLinear", ["x", s, z], "xq"), s, z], "xd")
    g = run_fusion(import_model(n.save([n.node("Relu", [n.conv(x, "c1")], "r1")], tmp_path / "m.onnx")).graph)
    assert g.absorbed_qdq["xd"] == ("x", None, None)
    assert g.fixed_scales["x"] == pytest.approx(255 / 255 / 127)
    assert not [node for node in g.nodes.values() if node.op_type == "Clip" or node.conv is None]


def test_yolov3_tiny_quantised_at_onnxruntime_defaults_runs_in_one_fpga_subgraph(zoo, tmp_path):
    """A whole detector through quantize_static's defaults (uint8 picture in, asymmetric activations, its leaky
    ReLUs, pools, upsample and concat behind pairs): every conv in one FPGA subgraph (the pairs once cut it into 13
    with a CPU hop after each conv), and --verify holds, the scores behind their own kept output pair within one
    step of it."""
    source = zoo("yolov3-tiny", 96)
    model = onnx.load(str(source))
    inp = model.graph.input[0]
    shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]

    class Pictures(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{inp.name: np.random.default_rng(i).integers(0, 256, shape).astype(np.uint8)}
                            for i in range(2)])

        def get_next(self):
            return next(self.it, None)

    logging.getLogger().setLevel(logging.ERROR)
    quantize_static(str(source), str(tmp_path / "q.onnx"), Pictures(), quant_format=QuantFormat.QDQ)
    result = run_partition(PartitionConfig(model=tmp_path / "q.onnx", out_dir=tmp_path / "b", picture=False,
                                           accuracy=False, verify=True))
    fpga = [s for s in result.plan.subgraphs if s.device == "fpga"]
    assert len(fpga) == 1
    convs = sum(n.op_type == "Conv" for n in model.graph.node)
    assert sum(1 for n in fpga[0].nodes if not n.endswith(("QuantizeLinear", "DequantizeLinear"))) >= convs
    assert result.verified
