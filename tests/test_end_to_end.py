"""`partition` end to end on the zoo's detection models: pre/post on the CPU, parallel heads, --verify passes."""
from __future__ import annotations

import json
import subprocess
import sys

import onnx
import pytest
from click.testing import CliRunner

from partitioner.cli import main


def _partition(model, out, *extra):
    result = CliRunner().invoke(main, [str(model), "-o", str(out), "--verify", *extra])
    assert result.exit_code == 0, result.stdout + result.stderr
    return result.stdout, json.loads((out / "plan.json").read_text())


def _check_detection_plan(plan, out, head_count, parallel=True):
    subgraphs = plan["subgraphs"]
    assert subgraphs[0]["device"] == "cpu" and subgraphs[0]["role"] == "pre"
    assert {"to_float", "nhwc_to_nchw", "normalise"} <= set(subgraphs[0]["nodes"])
    assert subgraphs[-1]["device"] == "cpu" and subgraphs[-1]["role"] == "post"
    assert "selected_indices" in subgraphs[-1]["nodes"]
    fpga = [s for s in subgraphs if s["device"] == "fpga"]
    assert all(s["role"] == "compute" for s in fpga)
    groups: dict[int, list[str]] = {}
    for s in fpga:
        if s["parallel_group"] is not None:
            groups.setdefault(s["parallel_group"], []).append(s["name"])
    assert all(len(v) >= 2 for v in groups.values())
    assert groups or not parallel
    heads = {s["name"] for s in fpga for n in s["nodes"] if n.startswith(("detect", "loc", "conf"))}
    head_convs = {n for s in fpga for n in s["nodes"] if n.startswith(("detect", "loc", "conf"))}
    assert len(heads) >= head_count if parallel else len(head_convs) >= head_count     # the heads on the FPGA
    for s in subgraphs:
        onnx.checker.check_model(str(out / s["onnx"]))
        for key in ("name", "device", "role", "nodes", "inputs", "outputs", "depends_on", "parallel_group",
                    "onnx", "estimate"):
            assert key in s
    assert (out / "report.md").exists() and (out / "partition.svg").exists()
    svg = (out / "partition.svg").read_text()
    assert "fpga_0" in svg and "cpu_post_0" in svg


def test_yolov3_tiny_reduced(tmp_path, zoo):
    """The exploration weighs splitting the 13x13 output branch off against one FPGA subgraph, each with its best
    design, and the report's table and sentence name the choice: a split only where its whole-frame rate beats the
    best single-subgraph design's by more than SPLIT_GAIN (a split costs program starts), else no split."""
    import re

    from partitioner.explore.design_space import SPLIT_GAIN
    stdout, plan = _partition(zoo("yolov3-tiny", 128), tmp_path / "b")
    _check_detection_plan(plan, tmp_path / "b", head_count=2, parallel=False)
    assert "verify selected_indices" in stdout and "FAIL" not in stdout
    assert "subgraph" in stdout and "fpga_0" in stdout
    report = (tmp_path / "b" / "report.md").read_text()
    assert "## Fused FPGA layers" in report and "conv 3x3 leaky_relu maxpool2" in report
    rows = {m[1]: (m[0] == "**chosen**", float(m[2])) for m in re.findall(
        r"^\| (\*\*chosen\*\*|) \| ([^|]+?) \| \d+ \| \d+ \| [^|]+ \| [\d.]+ \| ([\d.]+) \|$", report, re.M)}
    assert "no split" in rows and len(rows) >= 2, report
    chosen = [name for name, (mark, _) in rows.items() if mark]
    assert len(chosen) == 1
    best_split = max(fps for name, (_, fps) in rows.items() if name != "no split")
    if chosen[0] == "no split":
        assert best_split <= rows["no split"][1] * (1 + SPLIT_GAIN) and "Chosen: no split" in report
    else:
        assert rows[chosen[0]][1] == best_split > rows["no split"][1] * (1 + SPLIT_GAIN)
        assert f"Chosen: split ({chosen[0]})" in report


def test_ssd_mobilenet_reduced(tmp_path, zoo):
    """At 128 px the SSD heads are too small to be worth a program start each (PARALLEL_MIN_S): no parallel
    groups by the cost model; with --offload-all every branch is split off."""
    _, plan = _partition(zoo("ssd-mobilenet-v1", 128), tmp_path / "b")
    _check_detection_plan(plan, tmp_path / "b", head_count=1, parallel=False)
    _, plan = _partition(zoo("ssd-mobilenet-v1", 128), tmp_path / "all", "--offload-all")
    _check_detection_plan(plan, tmp_path / "all", head_count=3)
    layers = [layer["describe"] for s in plan["subgraphs"] for layer in s["layers"]]
    assert sum(" g" in d for d in layers) == 13          # every depthwise conv runs on the engine


def test_save_steps_writes_every_fusion_step(tmp_path, zoo):
    _partition(zoo("resblock"), tmp_path / "b", "--save-steps", "--no-picture")
    from partitioner.passes.pipeline import FUSION
    steps = sorted(p.name for p in (tmp_path / "b" / "steps").glob("*.onnx"))
    assert steps == ["00_imported.onnx"] + [f"{i:02d}_{p.__name__}.onnx" for i, p in enumerate(FUSION, 1)]
    assert steps[-2].endswith("_mark_concat_writes.onnx") and any("fuse_activation" in s for s in steps)
    kept = {p.name for p in (tmp_path / "b" / "steps").glob("*.json")}
    assert kept == {"explore.json", "partition.json", "write.json", "compile.json", "accuracy.json", "verify.json"}
    nodes = [n for s in json.loads((tmp_path / "b" / "steps" / "partition.json").read_text())["subgraphs"]
             for n in s["nodes"]]
    assert len(nodes) == len(set(nodes)) and nodes


def test_console_entry_point_runs_as_a_process(tmp_path, zoo):
    proc = subprocess.run([sys.executable, "-m", "partitioner", str(zoo("two-branch")), "-o", str(tmp_path / "b"),
                           "--target", "cpu", "--verify", "--no-picture"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "verify" in proc.stdout and "cpu_compute_0" in proc.stdout


@pytest.mark.slow
@pytest.mark.parametrize("name,heads", [("yolov3", 3), ("yolov3-tiny", 2), ("ssd300-vgg16", 6),
                                        ("ssd-mobilenet-v1", 4)])
def test_full_size(tmp_path, zoo, name, heads):
    """At full size a head is a small share of its region's engine time, below cost.PARALLEL_MIN_SHARE: a
    parallel subgraph of its own would cost a program start and a segment for less overlap, so the heads may
    share subgraphs (and no parallel group be left); they are on the FPGA all the same."""
    _, plan = _partition(zoo(name), tmp_path / "b")
    _check_detection_plan(plan, tmp_path / "b", head_count=heads, parallel=False)


def test_per_layer_accuracy_and_min_cosine(tmp_path, zoo):
    model = zoo("resblock")
    result = CliRunner().invoke(main, [str(model), "-o", str(tmp_path / "b"), "--offload-all", "--no-picture",
                                       "--min-cosine", "0.5"])
    assert result.exit_code == 0, result.stderr
    record = json.loads((tmp_path / "b" / "accuracy.json").read_text())
    assert record["layers"] and all(-1 <= x["cosine"] <= 1 for x in record["layers"])
    assert "random" in record["calibration"]
    report = (tmp_path / "b" / "report.md").read_text()
    assert "Per FPGA layer" in report and "seeded random frames" in report
    result = CliRunner().invoke(main, [str(model), "-o", str(tmp_path / "c"), "--offload-all", "--no-picture",
                                       "--min-cosine", "0.9999999"])
    assert result.exit_code == 1
    error = [line for line in result.stderr.splitlines() if line.startswith("error")]
    first = next(x["tensor"] for x in record["layers"] if x["cosine"] < 0.9999999)
    assert len(error) == 1 and f"first FPGA layer below it is '{first}'" in error[0], result.stderr
