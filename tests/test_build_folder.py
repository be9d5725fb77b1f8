"""A build folder is complete or absent: staged and moved into place, never half-written, never a mix of two runs."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import partitioner.build as build_module
from fpga_runtime import Session, predict
from fpga_runtime.plan import PlanError, read_plan
from partitioner.build import PartitionConfig, run_partition
from partitioner.errors import ModelError

ROOT = Path(__file__).resolve().parent.parent


def _build(model: Path, out: Path, **kw):
    return run_partition(PartitionConfig(model=model, out_dir=out, picture=False, accuracy=False, **kw))


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def model(tmp_path_factory, zoo):
    return zoo("yolov3-tiny", 64)


def test_a_build_lands_whole_with_one_build_id_and_no_staging_left(model, tmp_path):
    out = tmp_path / "deep" / "er" / "b"
    result = _build(model, out)
    plan = read_plan(out)
    engine = json.loads((out / "fpga" / "engine.json").read_text())
    assert plan.build_id and engine["build_id"] == plan.build_id
    assert result.plan.root == out
    assert Path(plan.model["path"]).is_absolute() and Path(plan.model["path"]) == model.resolve()
    assert sorted(p.name for p in tmp_path.rglob("*") if ".partial-" in p.name or ".old-" in p.name) == []
    assert "staging" not in (out / "plan.json").read_text() and ".partial-" not in (out / "report.md").read_text()


def test_a_failed_compile_leaves_the_previous_build_intact(model, tmp_path, monkeypatch):
    out = tmp_path / "b"
    _build(model, out)
    before = _snapshot(out)

    def broken(*args, **kwargs):
        raise RuntimeError("compiler bug")

    monkeypatch.setattr(build_module, "compile_engine", broken)
    with pytest.raises(RuntimeError, match="compiler bug"):
        _build(model, out)
    assert _snapshot(out) == before
    assert [p.name for p in tmp_path.iterdir()] == ["b"]
    predict(out)                                   # still a valid, consistent build


def test_a_failed_build_leaves_no_empty_folders(tmp_path):
    missing = tmp_path / "no-such-model.onnx"
    with pytest.raises(ModelError):
        _build(missing, tmp_path / "a" / "b" / "c")
    assert list(tmp_path.iterdir()) == []


def test_refuses_to_replace_a_folder_that_is_not_a_build(model, tmp_path):
    (tmp_path / "mine.txt").write_text("keep me")
    with pytest.raises(ModelError, match="not a build folder"):
        _build(model, tmp_path)
    assert (tmp_path / "mine.txt").read_text() == "keep me"


def test_parts_of_two_builds_are_refused(model, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    _build(model, a)
    _build(model, b)
    shutil.copyfile(b / "plan.json", a / "plan.json")
    with pytest.raises(PlanError, match="different `partition` runs"):
        predict(a)
    with pytest.raises(PlanError, match="different `partition` runs"):
        Session(a)
    (b / "subgraphs" / read_plan(b).subgraphs[0].onnx.split("/")[-1]).unlink()
    with pytest.raises(PlanError, match="incomplete build"):
        Session(b)


def test_ctrl_c_exits_130_with_one_line_and_keeps_the_previous_build(model, tmp_path, zoo):
    out = tmp_path / "b"
    _build(model, out)
    before = _snapshot(out)
    big = zoo("yolov3-tiny")          # full size: seconds of work left after the first step to interrupt
    proc = subprocess.Popen([sys.executable, "-m", "partitioner", str(big), "-o", str(out), "--no-picture"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    seen = ""
    deadline = time.monotonic() + 120
    while "[1/" not in seen and time.monotonic() < deadline:        # interrupt once the build is under way
        line = proc.stdout.readline()
        if not line:
            break
        seen += line
    assert "[1/" in seen, seen
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and "interrupted" in err
    assert _snapshot(out) == before
    assert [p.name for p in tmp_path.iterdir()] == ["b"]


def test_step_counter_total_is_fixed(model, tmp_path):
    lines: list[str] = []
    run_partition(PartitionConfig(model=model, out_dir=tmp_path / "cpu", target=build_module.TargetName.CPU,
                                  picture=False), lines.append)
    totals = {line.split("]")[0].split("/")[1] for line in lines if line.startswith("[")}
    assert len(totals) == 1, lines
    assert any("compile" in line and "skipped" in line for line in lines)


def test_calibration_table_reproduces_the_engine_bytes(model, tmp_path):
    first = _build(model, tmp_path / "a")
    table = tmp_path / "a" / "fpga" / "calibration.json"
    again = _build(model, tmp_path / "b", calibration_table=table)
    assert (tmp_path / "a" / "fpga" / "memory.bin").read_bytes() == (
        tmp_path / "b" / "fpga" / "memory.bin"
    ).read_bytes()
    report = (tmp_path / "b" / "report.md").read_text()
    assert "int8 calibration: table" in report and again.plan.build_id != first.plan.build_id


def test_staged_folder_replaces_a_build_only_on_commit(tmp_path):
    from partitioner.output.staging import StagedFolder
    target = tmp_path / "deep" / "b"
    with StagedFolder(target) as stage:                 # no commit: nothing left, not even the parent it made
        (stage / "plan.json").write_text("{}")
    assert not (tmp_path / "deep").exists()
    staged = StagedFolder(target)
    with staged as stage:
        (stage / "plan.json").write_text('{"first": 1}')
        staged.commit()
    staged = StagedFolder(target)
    with staged as stage:
        (stage / "plan.json").write_text('{"second": 2}')
        assert json.loads((target / "plan.json").read_text()) == {"first": 1}     # the old build until commit
        staged.commit()
    assert json.loads((target / "plan.json").read_text()) == {"second": 2}
    assert [p.name for p in target.parent.iterdir()] == ["b"]


def test_a_killed_partitions_staging_folder_is_removed_by_the_next_run(tmp_path):
    """A `partition` killed with SIGKILL leaves its staging folder; the next run of that target removes it,
    but not the staging folder of a run still alive."""
    import subprocess
    import sys

    from partitioner.output.staging import StagedFolder
    target = tmp_path / "b"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f".b.partial-{dead.stdout.strip()}-deadbeef"
    (stale / "fpga").mkdir(parents=True)
    (stale / "fpga" / "memory.bin").write_bytes(bytes(1000))
    old = tmp_path / f".b.old-{dead.stdout.strip()}-deadbeef"
    old.mkdir()
    alive = tmp_path / f".b.partial-{os.getpid()}-cafecafe"
    alive.mkdir()
    staged = StagedFolder(target)
    with staged as stage:
        (stage / "plan.json").write_text("{}")
        staged.commit()
    assert not stale.exists() and not old.exists() and alive.exists()


def test_staged_folder_refuses_to_replace_a_folder_that_is_not_a_build(tmp_path):
    from partitioner.output.staging import StagedFolder
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "cat.jpg").write_bytes(b"\xff\xd8")
    with pytest.raises(ModelError, match="not a build folder"):
        StagedFolder(tmp_path / "photos")


def test_a_calibration_table_of_another_model_is_refused(model, tmp_path, zoo):
    _build(zoo("classifier"), tmp_path / "other")
    with pytest.raises(ModelError, match=r"covers \d+ of the \d+ engine tensors .* another model's"):
        _build(model, tmp_path / "b", calibration_table=tmp_path / "other" / "fpga" / "calibration.json")
    assert not (tmp_path / "b").exists()
