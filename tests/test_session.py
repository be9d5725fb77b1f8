"""Session and the int8 pipeline end to end on the reference backend; predict; the fpga-run command."""
from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from fpga_runtime import Session, predict
from fpga_runtime.backends import BackendError
from fpga_runtime.checking.frames import random_frame
from fpga_runtime.cli import main as fpga_run
from fpga_runtime.plan import PlanError, read_plan
from partitioner.build import PartitionConfig, run_partition


@pytest.fixture(scope="module")
def builds(tmp_path_factory, zoo):
    root = tmp_path_factory.mktemp("int8")
    out = {}
    for name, size in (("yolov3-tiny", 128), ("ssd-mobilenet-v1", 128)):
        out[name] = root / name
        result = run_partition(PartitionConfig(model=zoo(name, size), out_dir=out[name], picture=False))
        out[name + ":accuracy"] = result.accuracy
    return out


# Whole-model thresholds. Every conv rounds its input, weights and output (about 36 dB each on a layer, see
# test_reference_backend); errors add up over 13 (YOLOv3-tiny) or 33 (SSD-MobileNet) layers, and the
# calibration here is 4 random frames. 20 dB (10 % RMS error) on the raw head outputs and 0.99 cosine are what
# a usable int8 detector keeps; detections must mostly agree (IoU >= 0.5, same class).
@pytest.mark.parametrize("name", ["yolov3-tiny", "ssd-mobilenet-v1"])
def test_int8_accuracy_of_detection_models(builds, name):
    acc = builds[name + ":accuracy"]
    for o in acc.outputs:
        assert o.snr_db >= 20.0 and o.cosine >= 0.99, o
    d = acc.detections
    assert d is not None and d.float_detections > 0
    assert d.precision is not None and d.precision >= 0.7 and d.recall >= 0.7, d
    saved = json.loads((builds[name] / "accuracy.json").read_text())
    assert saved["detections"]["matched"] == d.matched


def test_fpga_to_fpga_tensors_stay_in_engine_memory(builds):
    with Session(builds["yolov3-tiny"]) as s:
        fpga = [sg for sg in s.plan.subgraphs if sg.device == "fpga"]
        produced_on_fpga = {t.name for sg in fpga for t in sg.outputs}
        for sg in fpga:
            assert not set(s._host_writes[sg.name]) & produced_on_fpga
        feeds = random_frame(s.plan, 3)
        first = s.run(None, feeds)
        again = s.run(None, feeds)
        assert all(np.array_equal(a, b) for a, b in zip(first, again))
        assert len(s.stats) == 2 * len(fpga)


def test_streaming_api_matches_run(builds):
    with Session(builds["ssd-mobilenet-v1"], compute_units=2, slots=2) as s:
        frames = [random_frame(s.plan, 20 + i) for i in range(4)]
        streamed = list(s.stream(frames))
        for f, got in zip(frames, streamed):
            assert all(np.array_equal(a, b) for a, b in zip(s.run(None, f), got))


def test_session_errors(builds, tmp_path):
    with pytest.raises(BackendError, match="unknown backend 'nope'"):
        Session(builds["yolov3-tiny"], backend="nope")
    with pytest.raises(PlanError, match="run `partition` first"):
        Session(tmp_path)
    with Session(builds["yolov3-tiny"]) as s, pytest.raises(PlanError, match=r"missing: \['images'\]"):
        s.run(None, {})


def test_predict_bounds_and_boards(builds):
    build = builds["ssd-mobilenet-v1"]
    previous = None
    for units in (1, 2):
        p = predict(build, compute_units=units)
        assert p.lower_bound_s <= p.makespan_s + 1e-12 <= p.sequential_s + 1e-12
        assert p.critical_path_s <= p.makespan_s + 1e-12
        assert all(0.0 <= u <= 1.0 + 1e-9 for u in p.utilisation.values())
        if previous is not None:
            assert p.makespan_s <= previous + 1e-12
        previous = p.makespan_s
    slow = predict(build, compute_units=1, board="kv260")         # 250 MHz against the ZCU104's 300
    assert slow.board == "kv260" and slow.makespan_s > predict(build, compute_units=1).makespan_s
    with pytest.raises(PlanError, match="does not fit pynq-z2: needs DSP"):     # the ZCU104's engine on a Z2
        predict(build, compute_units=1, board="pynq-z2")
    many = predict(build, compute_units=2, frames=6, in_flight=3)
    assert many.fps > 1 / p.makespan_s


def test_fpga_run_command(builds, tmp_path):
    runner = CliRunner()
    result = runner.invoke(fpga_run, ["run", str(builds["yolov3-tiny"]), "--frames", "2", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "trace.json").exists() and (tmp_path / "gantt.png").exists()
    trace = json.loads((tmp_path / "trace.json").read_text())
    assert any(e.get("ph") == "X" and e["name"].startswith("fpga") for e in trace["traceEvents"])
    assert len(list(tmp_path.glob("frame1_*.npy"))) == 3
    assert "precision" in (tmp_path / "accuracy.md").read_text()
    result = runner.invoke(fpga_run, ["predict", str(builds["yolov3-tiny"]), "--frames", "3"])
    units = read_plan(builds["yolov3-tiny"]).engine_config["compute_units"]
    rows = [line.split("|") for line in result.output.splitlines() if line.startswith("| zcu104 |")]
    assert result.exit_code == 0 and len(rows) == 1, result.output
    assert int(rows[0][2]) == units and float(rows[0][3]) > 0 and int(rows[0][4]) == 3
    result = runner.invoke(fpga_run, ["predict", str(builds["yolov3-tiny"]), "--board", "ZCU104",
                                      "--compute-units", "1", "--compute-units", "2"])
    assert result.exit_code == 0 and result.output.count("| zcu104 |") == 2, result.output


def test_default_frames_in_flight_keep_every_unit_busy(builds, tmp_path):
    """The exploration models k compute units on k frames at once; by default `run` and `predict` admit one
    frame per unit plus one for the CPU stages (at least 2)."""
    from fpga_runtime.prediction.virtual_time import build_compute_units
    from fpga_runtime.run.policy import default_in_flight
    build = builds["yolov3-tiny"]
    units = build_compute_units(read_plan(build))
    result = CliRunner().invoke(fpga_run, ["run", str(build), "--no-accuracy", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert f"{units} compute unit(s), 2 CPU worker(s), {max(2, units + 1)} in flight" in result.output
    assert default_in_flight(1) == 2 and default_in_flight(3) == 4
    assert predict(build, frames=8).makespan_s <= predict(build, frames=8, in_flight=1).makespan_s


def test_session_describes_its_inputs_and_outputs_and_refuses_what_it_cannot_do(tmp_path, zoo):
    """Like onnxruntime's InferenceSession: get_inputs()/get_outputs(); an unknown output, a model file instead
    of a build, and use after close() each get one clear error."""
    import onnx

    from partitioner.cli import main as partition_cli
    model = zoo("classifier")
    assert CliRunner().invoke(partition_cli, [str(model), "-o", str(tmp_path / "b"), "--no-accuracy",
                                              "--no-picture"]).exit_code == 0
    with pytest.raises(PlanError, match="is an ONNX model, not a build folder"):
        Session(model)
    session = Session(tmp_path / "b")
    (arg,) = session.get_inputs()
    declared = onnx.load(str(model)).graph.input[0]
    assert arg.name == declared.name and arg.type == "tensor(float)"
    assert arg.shape == [d.dim_value for d in declared.type.tensor_type.shape.dim]
    assert [o.name for o in session.get_outputs()] == session.output_names
    feeds = random_frame(session.plan, 0)
    with pytest.raises(PlanError, match="no model output named 'nope'; the outputs are"):
        session.run(["nope"], feeds)
    assert session.run(None, feeds)[0].shape == tuple(session.get_outputs()[0].shape)
    session.close()
    session.close()
    with pytest.raises(PlanError, match="this Session is closed"):
        session.run(None, feeds)


def test_a_plan_that_is_not_a_plan_is_one_error(tmp_path):
    (tmp_path / "plan.json").write_bytes(b"\xff\xfe not text")
    with pytest.raises(PlanError, match="not a plan"):
        read_plan(tmp_path)
    (tmp_path / "plan.json").write_text('{"version": 1, "subgraphs": [{"name": 3}]}')
    with pytest.raises(PlanError, match="malformed plan"):
        read_plan(tmp_path)


def test_every_engine_op_has_a_name_in_the_profile():
    """A profile's layers are named by op (SSD300's L2Norm layer was once listed as "7")."""
    from fpga_runtime.abi import Descriptor, Flag, Op
    from fpga_runtime.prediction.profile import op_name
    names = {op_name(Descriptor(op=int(op))) for op in Op}
    assert len(names) == len(Op) and not any(n.isdigit() for n in names)
    assert op_name(Descriptor(op=int(Op.CONV), flags=int(Flag.DEPTHWISE))) == "depthwise_conv"
