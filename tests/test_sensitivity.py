"""int8 sensitivity analysis and --keep-on-cpu: the tensor whose int8 rounding hurts most is ranked first, and
keeping the layers that hold it in int8 on the CPU recovers the accuracy."""
from __future__ import annotations

import json

import numpy as np
import onnx
from click.testing import CliRunner
from graphs import Net

from fpga_runtime.checking.frames import original_outputs
from fpga_runtime.plan import read_plan
from partitioner.build import PartitionConfig, run_partition
from partitioner.cli import main


def _outlier_model(tmp_path):
    """conv a's output has one channel ~200x the others (per-tensor int8 leaves the others a level or two, even
    with the zero point a ReLU's output gets);
    conv b reads only the small channels. Conv c, elsewhere, is harmless."""
    n = Net(channels=8, size=8, seed=1)
    w = (n.rng.standard_normal((8, 8, 3, 3)) * 0.05).astype(np.float32)
    b = np.full(8, 0.2, np.float32)
    w[0] *= 100.0
    b[0] = 80.0
    n.inits += [onnx.numpy_helper.from_array(w, "a.w"), onnx.numpy_helper.from_array(b, "a.b")]
    a = n.node("Relu", [n.node("Conv", ["x", "a.w", "a.b"], "a", kernel_shape=[3, 3], pads=[1, 1, 1, 1])], "a_relu")
    wb = (n.rng.standard_normal((8, 8, 1, 1)) * 0.5).astype(np.float32)
    wb[:, 0] = 0.0
    n.inits.append(onnx.numpy_helper.from_array(wb, "b.w"))
    y = n.node("Conv", [a, "b.w"], "b", kernel_shape=[1, 1])
    out = n.node("Relu", [n.conv(y, "c")], "c_relu")
    return n.save([out], tmp_path / "outlier.onnx")


def _cosine(a, b):
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def test_the_outlier_tensor_ranks_first_and_keeping_its_layers_on_the_cpu_recovers(tmp_path):
    model = _outlier_model(tmp_path)
    result = run_partition(PartitionConfig(model=model, out_dir=tmp_path / "b", picture=False, sensitivity=True,
                                           offload_everything=True, calibration_method="max"))
    ranked = result.sensitivity
    assert ranked[0].tensor == "a_relu" and set(ranked[0].layers) == {"a", "b"}
    assert ranked[0].cosine < 0.98 < ranked[-1].cosine
    assert all(x.cosine <= y.cosine for x, y in zip(ranked, ranked[1:]))
    record = json.loads((tmp_path / "b" / "accuracy.json").read_text())
    assert record["sensitivity"][0]["tensor"] == "a_relu"
    report = (tmp_path / "b" / "report.md").read_text()
    assert "`--keep-on-cpu a` `--keep-on-cpu b`" in report
    before = result.accuracy.outputs[0].cosine

    kept = run_partition(PartitionConfig(model=model, out_dir=tmp_path / "k", picture=False, keep_on_cpu=("a", "b"),
                                         offload_everything=True, calibration_method="max"))
    placed = {n: s.device for s in kept.plan.subgraphs for n in s.nodes}
    assert placed["a"] == placed["b"] == "cpu" and placed["c"] == "fpga"
    assert sum("--keep-on-cpu" in f["reason"] for f in kept.plan.fallbacks) == 2
    after = kept.accuracy.outputs[0].cosine
    assert after > 0.995 > before


def test_keep_on_cpu_of_an_unknown_node_is_one_clear_error(tmp_path):
    model = _outlier_model(tmp_path)
    result = CliRunner().invoke(main, [str(model), "-o", str(tmp_path / "b"), "--keep-on-cpu", "nope"])
    assert result.exit_code == 2
    assert "--keep-on-cpu nope: the model has no node of that name" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_probe_is_the_float_model_with_that_tensor_rounded(tmp_path):
    """The probe of the model input equals the original model run on the input rounded to its int8 scale."""
    from partitioner.evaluate.sensitivity import int8_sensitivity
    model = _outlier_model(tmp_path)
    result = run_partition(PartitionConfig(model=model, out_dir=tmp_path / "b", picture=False, accuracy=False,
                                           offload_everything=True))
    ranges = json.loads((tmp_path / "b" / "fpga" / "calibration.json").read_text())["ranges"]
    feeds = {"x": np.random.default_rng(0).standard_normal((1, 8, 8, 8)).astype(np.float32)}
    nodes = [n for s in result.partition.subgraphs if s.device.value == "fpga" for n in s.nodes]
    probed = {p.tensor: p for p in int8_sensitivity(result.plan, result.partition.graph, nodes, ranges, feeds)}
    scale = ranges["x"] / 127
    rounded = {"x": (np.clip(np.rint(feeds["x"] / scale), -128, 127) * scale).astype(np.float32)}
    want = _cosine(original_outputs(model, feeds)["c_relu"], original_outputs(model, rounded)["c_relu"])
    assert abs(probed["x"].cosine - want) < 1e-6
    assert probed["x"].layers == ["a"]
    assert "a" not in probed                  # ReLU's clamp requantises straight to the output scale


def test_auto_fallback_moves_the_fewest_sensitive_layers_to_meet_the_target(tmp_path):
    """--min-cosine with --auto-fallback: the all-int8 build misses 0.995, the outlier tensor's two layers in float
    meet it, and the build left in the folder is that one, with c still on the FPGA."""
    from partitioner.mixed_precision import meet_accuracy
    model = _outlier_model(tmp_path)
    cfg = PartitionConfig(model=model, out_dir=tmp_path / "b", picture=False, offload_everything=True,
                          calibration_method="max")
    lines = []
    fallback = meet_accuracy(cfg, 0.995, None, lines.append)
    assert fallback.first.accuracy.outputs[0].cosine < 0.995 <= fallback.result.accuracy.outputs[0].cosine
    assert sorted(fallback.kept) == ["a", "b"] and fallback.tensors == ["a_relu"]
    assert fallback.tries == [(1, True)]
    placed = {n: s.device for s in read_plan(tmp_path / "b").subgraphs for n in s.nodes}
    assert placed["a"] == placed["b"] == "cpu" and placed["c"] == "fpga"
    assert any("auto-fallback: 1 tensor(s), 2 layer(s) in float -> targets met" in line for line in lines)


def test_auto_fallback_on_the_command_line_says_what_it_moved_and_what_it_costs(tmp_path):
    model = _outlier_model(tmp_path)
    out = CliRunner().invoke(main, [str(model), "-o", str(tmp_path / "b"), "--offload-all", "--no-picture",
                                    "--calibration-method", "max", "--min-cosine", "0.995", "--auto-fallback"])
    assert out.exit_code == 0, out.output
    assert "auto-fallback: 2 layer(s) kept in float on the CPU (a, b) for tensor(s) a_relu" in out.stdout
    assert "conv MACs on the FPGA 100.0% ->" in out.stdout
    bad = CliRunner().invoke(main, [str(model), "-o", str(tmp_path / "c"), "--auto-fallback"])
    assert bad.exit_code == 2 and "--auto-fallback needs a target" in bad.output


def test_a_fallback_budget_skips_the_layers_that_would_pass_it(tmp_path):
    """--fallback-budget: tensors stay in the ranking, worst first, while the layers moved so far fit the share of
    conv MACs allowed; an expensive one is skipped, cheaper ones after it still come. On the outlier model, a budget
    below conv a's MACs leaves the fallback nothing that meets the target, and it says so; the option alone is a
    usage error."""
    from partitioner.evaluate.sensitivity import TensorSensitivity
    from partitioner.mixed_precision import meet_accuracy, within_budget
    ranking = [TensorSensitivity("t0", ["big"], "fpga_0", 0.9), TensorSensitivity("t1", ["small", "big"], "fpga_0",
                                                                                   0.95),
               TensorSensitivity("t2", ["small"], "fpga_0", 0.97), TensorSensitivity("t3", ["tiny"], "fpga_0", 0.99)]
    macs = {"big": 80, "small": 15, "tiny": 5}
    assert [s.tensor for s in within_budget(ranking, macs, 20)] == ["t2", "t3"]
    assert [s.tensor for s in within_budget(ranking, macs, 100)] == ["t0", "t1", "t2", "t3"]
    model = _outlier_model(tmp_path)
    cfg = PartitionConfig(model=model, out_dir=tmp_path / "b", picture=False, offload_everything=True,
                          calibration_method="max")
    lines = []
    fallback = meet_accuracy(cfg, 0.995, None, lines.append, budget=0.01)
    assert "a" not in fallback.kept and fallback.result.accuracy.outputs[0].cosine < 0.995
    assert any("fit the budget of 1% of the FPGA's conv MACs" in line for line in lines)
    bad = CliRunner().invoke(main, [str(model), "-o", str(tmp_path / "c"), "--fallback-budget", "0.05"])
    assert bad.exit_code == 2 and "--fallback-budget limits --auto-fallback" in bad.output


def test_sensitivity_ranks_a_float16_models_tensors(tmp_path):
    """Its outputs are float16: they are compared as floats (the ranking used to find no output to compare)."""
    from graphs import float16_model
    n = Net(channels=8, size=6)
    model = float16_model(n.model([n.node("Relu", [n.conv(n.conv("x", "a"), "b")], "r")]))
    path = tmp_path / "m16.onnx"
    onnx.save(model, str(path))
    result = run_partition(PartitionConfig(model=path, out_dir=tmp_path / "b", picture=False, sensitivity=True,
                                           offload_everything=True))
    assert result.sensitivity and all(0.9 < s.cosine <= 1.0 for s in result.sensitivity)


def test_a_ranked_detection_output_is_probed_through_the_raw_head_it_selects_from(tmp_path):
    """An end-to-end head's [1, K, 6] rows reorder under any rounding, so a cosine over them ranks noise: the
    probes are judged on what the selecting subgraph reads (the raw head the engine computes) instead."""
    from fpga_runtime.onnx_chain import Chain
    from partitioner.evaluate.sensitivity import compared_tensors
    n = Net(channels=3, size=8, seed=2)
    head = n.conv(n.node("Relu", [n.conv("x", "a", cout=8)], "r"), "head", cin=8, cout=5, k=1)
    rows = n.node("Concat", [head, n.const("cls", np.zeros((1, 1, 8, 8), np.float32))], "cat", axis=1)
    rows = n.node("Reshape", [rows, n.const("shape", np.array([1, 6, 64], np.int64))], "flat")
    path = n.save([n.node("Transpose", [rows], "rows", perm=[0, 2, 1])], tmp_path / "e2e.onnx")
    result = run_partition(PartitionConfig(model=path, out_dir=tmp_path / "b", picture=False, offload_everything=True,
                                           sensitivity=True))
    plan = read_plan(tmp_path / "b")
    values = Chain(plan).run({"x": np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype(np.float32)})
    assert values["rows"].shape == (1, 64, 6)
    assert compared_tensors(plan, values) == ["head"]
    assert result.sensitivity and all(s.cosine > 0.9 for s in result.sensitivity)
