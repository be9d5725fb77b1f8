"""`fpga-run` as a new user meets it: every mistake is one line and exit 2, images in and drawn out, the sequential
baseline traced, and the top-level API (`fpga_runtime.Session`, `fpga_runtime.predict`)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from PIL import Image

import fpga_runtime
from fpga_runtime.checking.accuracy import compare
from fpga_runtime.checking.detections import DetectionAgreement
from fpga_runtime.checking.frames import random_frame
from fpga_runtime.checking.images import Fit
from fpga_runtime.cli import main as fpga_run
from fpga_runtime.plan import PlanError, TensorSpec
from fpga_runtime.preprocess import PRESETS, load_picture
from partitioner.build import PartitionConfig, run_partition
from partitioner.cli import main as partition

SIZE = 96


@pytest.fixture(scope="module")
def build(tmp_path_factory, zoo):
    out = tmp_path_factory.mktemp("cli") / "tiny"
    run_partition(PartitionConfig(model=zoo("yolov3-tiny", SIZE), out_dir=out, picture=False, accuracy=False,
                                  compute_units=2))
    return out


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("files")
    (root / "text.jpg").write_text("not an image")
    np.save(root / "wrong_shape.npy", np.zeros((1, 3, SIZE, SIZE), np.uint8))
    np.save(root / "wrong_dtype.npy", np.zeros((1, SIZE, SIZE, 3), np.float32))
    (root / "empty").mkdir()
    return root


def _bad_runs(b: Path, f: Path) -> list[tuple[list[str], str]]:
    return [
        (["predict", str(f / "empty")], "no plan here"),
        (["predict", str(b), "--frames", "0"], "--frames"),
        (["predict", str(b), "--compute-units", "0"], "--compute-units"),
        (["predict", str(b), "--in-flight", "0"], "--in-flight"),
        (["predict", str(b), "--cpu-workers", "0"], "--cpu-workers"),
        (["predict", str(b), "--board", "zcu999"], "--board"),
        (["run", str(f / "empty")], "no plan here"),
        (["run", str(b), "--image", str(f / "missing.jpg")], "no such file"),
        (["run", str(b), "--image", str(f / "text.jpg")], "not an image"),
        (["run", str(b), "--frames", "0"], "--frames"),
        (["run", str(b), "--compute-units", "0"], "--compute-units"),
        (["run", str(b), "--compute-units", "3"], "overlay has 2"),
        (["run", str(b), "--in-flight", "0"], "--in-flight"),
        (["run", str(b), "--input", "foo=x.npy"], "'foo' is not an input of the model"),
        (["run", str(b), "--input", f"images={f / 'missing.npy'}"], "cannot read a .npy"),
        (["run", str(b), "--input", f"images={f / 'wrong_shape.npy'}"], "the model takes [1, 96, 96, 3]"),
        (["run", str(b), "--input", f"images={f / 'wrong_dtype.npy'}"], "dtype float32, the model takes uint8"),
        (["run", str(b), "--backend", "nope"], "--backend"),
    ]


def test_every_user_mistake_is_one_line_and_exit_2(build, files, tmp_path):
    runner = CliRunner()
    for args, needle in _bad_runs(build, files):
        result = runner.invoke(fpga_run, args + (["-o", str(tmp_path / "out")] if args[0] == "run" else []))
        text = result.stdout + result.stderr
        assert result.exit_code == 2, (args, text)
        assert "Traceback" not in text and not isinstance(result.exception, (KeyError, ZeroDivisionError)), args
        errors = [line for line in result.stderr.splitlines() if line.lower().startswith("error")]
        assert len(errors) == 1 and needle in errors[0], (args, result.stderr)
    assert not (tmp_path / "out").exists()                 # a failed run writes nothing


def test_partition_bad_arguments(tmp_path, zoo):
    model = zoo("two-branch")
    runner = CliRunner()
    for args, needle in [(["--board", "nope"], "--board"), (["--compute-units", "0"], "--compute-units"),
                         (["--calibration-frames", "0"], "--calibration-frames"),
                         (["--calibration-table", str(tmp_path / "none.json")], "--calibration-table")]:
        result = runner.invoke(partition, [str(model), "-o", str(tmp_path / "b"), *args])
        assert result.exit_code == 2 and needle in result.stderr, (args, result.stderr)
    result = runner.invoke(partition, [str(model), "-o", str(tmp_path / "b"), "--board", "ZCU104", "--no-picture"])
    assert result.exit_code == 0, result.stderr
    assert json.loads((tmp_path / "b" / "plan.json").read_text())["board"] == "zcu104"
    assert "PYTHON ?= " + sys.executable in (tmp_path / "b" / "fpga" / "Makefile").read_text()


def test_images_are_letterboxed_and_detections_drawn_in_picture_pixels(build, tmp_path):
    rng = np.random.default_rng(5)
    picture = rng.integers(0, 256, (60, 150, 3), dtype=np.uint8)
    Image.fromarray(picture).save(tmp_path / "wide.png")
    frame, fit, _ = load_picture(tmp_path / "wide.png", TensorSpec("images", [1, SIZE, SIZE, 3], "uint8"),
                                 PRESETS["none"])
    assert fit.mode == "letterbox" and fit.sx == pytest.approx(SIZE / 150, rel=0.02) == fit.sy
    assert fit.pad_y > 0 and fit.pad_x == 0
    assert np.all(frame[0, 0] == 114)                         # padding rows are YOLO's grey
    corners = fit.to_image(np.array([[fit.pad_x, fit.pad_y, SIZE - fit.pad_x, SIZE - fit.pad_y]]))
    assert np.allclose(corners, [[0, 0, 150, 60]], atol=1.0)

    # a noise frame at the model's size, each column doubled: stretching it back gives that frame, which the
    # seeded detector finds objects in (smoothed noise would give none)
    noise = np.repeat(rng.integers(0, 256, (SIZE, SIZE, 3), dtype=np.uint8), 2, axis=1)
    Image.fromarray(noise).save(tmp_path / "double.png")
    result = CliRunner().invoke(fpga_run, ["run", str(build), "--image", str(tmp_path / "double.png"),
                                           "--resize", "stretch", "-o", str(tmp_path / "out")])
    assert result.exit_code == 0, result.stderr
    assert "192x96 stretched to 96x96" in result.stderr
    record = json.loads((tmp_path / "out" / "frame0_double_detections.json").read_text())
    drawn = Image.open(tmp_path / "out" / "frame0_double_detections.png")
    assert drawn.size == (2 * SIZE, SIZE) and record["detections"]
    for d in record["detections"]:
        x1, y1, x2, y2 = d["box"]
        assert 0 <= x1 <= x2 <= 2 * SIZE and 0 <= y1 <= y2 <= SIZE and 0.25 <= d["score"] <= 1.0
    assert not np.array_equal(np.asarray(drawn.convert("RGB")), noise)


def test_pictures_open_as_opencv_gives_them_to_trainers(tmp_path):
    """A phone photo stored sideways with an EXIF orientation opens upright, and a 16-bit picture scales to its high
    byte (Pillow's plain RGB conversion clipped it to white), as OpenCV's imread gives pictures to trainers."""
    from fpga_runtime.preprocess import open_picture
    pixels = np.zeros((30, 40, 3), np.uint8)
    pixels[:, :20] = 255                                  # left half white as stored
    img = Image.fromarray(pixels)
    exif = img.getexif()
    exif[0x0112] = 6                                      # "rotate 90 clockwise to display"
    img.save(tmp_path / "rot.jpg", exif=exif, quality=95)
    upright = np.asarray(open_picture(tmp_path / "rot.jpg"))
    assert upright.shape == (40, 30, 3)
    assert upright[:20].mean() > 200 and upright[-20:].mean() < 50     # the stored left half is now on top
    deep = np.full((8, 8), 0x8000, np.uint16)
    deep[0, 0] = 0xFFFF
    Image.fromarray(deep).save(tmp_path / "deep.png")
    got = np.asarray(open_picture(tmp_path / "deep.png"))
    assert got.shape == (8, 8, 3) and got[1, 1].tolist() == [128] * 3 and got[0, 0].tolist() == [255] * 3


def test_fit_maps_model_boxes_back_to_the_picture():
    fit = Fit("letterbox", 200, 100, 0.5, 0.5, 0.0, 25.0)
    assert np.allclose(fit.to_image(np.array([10.0, 30.0, 50.0, 70.0])), [20, 10, 100, 90])


def test_sequential_run_is_timed_and_traced(build, tmp_path):
    result = CliRunner().invoke(fpga_run, ["run", str(build), "--sequential", "--frames", "2", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.stderr
    assert "frames/s" in result.stdout and "one subgraph at a time" in result.stdout
    trace = json.loads((tmp_path / "trace.json").read_text())
    spans = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    plan = fpga_runtime.Session(build).plan
    assert len(spans) == 2 * len(plan.subgraphs)
    assert (tmp_path / "gantt.png").exists()
    assert "worst of 2 frames" in result.stdout


@pytest.mark.parametrize("mode", [[], ["--sequential"]])
def test_long_runs_say_each_finished_frame(build, tmp_path, monkeypatch, mode):
    """Past a second (here: at once) every finished frame gets a progress line on stderr, in order, with the
    time left; stdout keeps only the results."""
    import fpga_runtime.cli as cli
    monkeypatch.setattr(cli._Progress, "QUIET_S", 0.0)
    result = CliRunner().invoke(fpga_run, ["run", str(build), "--frames", "3", "--no-accuracy", "-o", str(tmp_path),
                                           *mode])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("frame ")]
    assert [line.split(" done")[0] for line in lines] == ["frame 1/3", "frame 2/3", "frame 3/3"]
    assert "s left" in lines[0] and "s left" not in lines[2]
    assert "frame 1/3" not in result.stdout


def test_runs_quicker_than_the_threshold_show_no_progress(build, tmp_path, monkeypatch):
    import fpga_runtime.cli as cli
    monkeypatch.setattr(cli._Progress, "QUIET_S", 1e9)
    result = CliRunner().invoke(fpga_run, ["run", str(build), "--frames", "2", "--no-accuracy", "-o", str(tmp_path)])
    assert result.exit_code == 0 and "frames/s" in result.output and "frame 1/2 done" not in result.output


def test_accuracy_is_found_from_another_directory_and_missing_model_is_said(build, tmp_path, zoo):
    out = tmp_path / "b"
    copy = tmp_path / "model.onnx"
    copy.write_bytes(zoo("two-branch").read_bytes())
    run_partition(PartitionConfig(model=copy, out_dir=out, picture=False, accuracy=False))
    cmd = [sys.executable, "-m", "fpga_runtime", "run", str(out), "-o", str(tmp_path / "r")]
    proc = subprocess.run(cmd, cwd="/", capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "SNR" in proc.stdout, proc.stderr
    copy.unlink()
    proc = subprocess.run(cmd, cwd="/", capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "accuracy check skipped" in proc.stderr and str(copy) in proc.stderr


def test_zero_detections_are_not_perfect():
    empty = DetectionAgreement(0, 0, 0)
    assert empty.precision is None and empty.recall is None and "n/a" in empty.summary()
    boxes = np.zeros((1, 4, 4), np.float32)
    none = np.zeros((0, 3), np.int64)
    report = compare({"boxes": boxes, "sel": none}, {"boxes": boxes, "sel": none})
    assert report.as_dict()["detections"]["precision"] is None


def test_top_level_api_and_stream_of_arrays(build):
    assert fpga_runtime.Session.__name__ == "Session" and callable(fpga_runtime.predict)
    p = fpga_runtime.predict(build)
    assert p.compute_units == 2 and p.fps > 0
    with fpga_runtime.Session(build, compute_units=2, slots=2) as s:
        frames = [random_frame(s.plan, 40 + i) for i in range(3)]
        arrays = [f["images"] for f in frames]
        by_array, by_dict = list(s.stream(arrays)), list(s.stream(frames))
        for a, b in zip(by_array, by_dict):
            assert all(np.array_equal(x, y) for x, y in zip(a, b))
        first = s.stream(frames)
        next(first)
        with pytest.raises(PlanError, match="one stream at a time"):
            next(s.stream(arrays))                  # two streams would share the engine's activation slots
        with pytest.raises(PlanError, match="streaming"):
            s.run(None, frames[0])
        assert len(list(first)) == 2


def test_models_list_shows_inputs_parameters_and_gmac():
    proc = subprocess.run([sys.executable, "-m", "models", "list"], capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).resolve().parent.parent)
    assert proc.returncode == 0, proc.stderr
    line = next(row for row in proc.stdout.splitlines() if row.startswith("yolov3-tiny "))
    assert "images 1x416x416x3 uint8" in line and "8,852,366" in line and "2.78" in line


def test_paddle_boxes_and_class_scores_are_read_as_detections():
    """PaddleDetection's export without NMS: boxes [1, N, 4] and class scores [1, C, N]. A box whose class score
    drops below every other loses its match; the class-wise NMS keeps one of two overlapping boxes; a box no class
    scores (box 4) is no detection at the confidence a user keeps."""
    boxes = np.array([[[0, 0, 10, 10], [1, 1, 11, 11], [50, 50, 60, 60], [80, 0, 90, 9], [0, 80, 9, 90]]],
                     np.float32)
    scores = np.zeros((1, 3, 5), np.float32)
    scores[0, 0, 0], scores[0, 0, 1], scores[0, 2, 2], scores[0, 1, 3] = 0.9, 0.8, 0.7, 0.6
    want = {"boxes": boxes, "scores": scores}
    same = compare(want, {"boxes": boxes, "scores": scores.copy()}).as_dict()["detections"]
    assert same["float_detections"] == 3 and same["precision"] == same["recall"] == 1.0
    worse = scores.copy()
    worse[0, 2, 2], worse[0, 1, 2] = 0.0, 0.7                # box 2 changes class
    moved = compare(want, {"boxes": boxes, "scores": worse}).as_dict()["detections"]
    assert moved["matched"] == 2 and moved["recall"] == 2 / 3


def test_paddle_nms_rows_are_read_as_detections():
    """PaddleDetection's export with NMS: rows of (label, score, x1, y1, x2, y2) and an int index output."""
    rows = np.array([[0, 0.9, 0, 0, 10, 10], [2, 0.8, 50, 50, 60, 60], [1, 0.7, 80, 0, 90, 9]], np.float32)
    index = np.arange(3, dtype=np.int32)[:, None]
    other = rows.copy()
    other[2, 0] = 2                                           # the third box comes back with another label
    got = compare({"det": rows, "index": index}, {"det": other, "index": index}).as_dict()["detections"]
    assert got["float_detections"] == 3 and got["matched"] == 2


def test_darknet2onnx_boxes_and_confidences_are_read_as_detections():
    """darknet2onnx: boxes [1, N, 1, 4] and per-class confidences [1, N, C]."""
    boxes = np.array([[[[0, 0, .1, .1]], [[.5, .5, .6, .6]], [[.8, 0, .9, .1]]]], np.float32)
    confs = np.array([[[0.9, 0.0], [0.0, 0.8], [0.7, 0.1]]], np.float32)
    other = confs.copy()
    other[0, 2] = [0.1, 0.7]                                  # the third box changes class
    got = compare({"boxes": boxes, "confs": confs}, {"boxes": boxes, "confs": other}).as_dict()["detections"]
    assert got["float_detections"] == 3 and got["matched"] == 2


def test_a_detection_list_of_another_length_is_compared_on_what_both_have():
    """After NMS int8 may keep 56 boxes where float keeps 60 (torchvision's Mask R-CNN): the output is compared on
    the leading rows, and the report says so instead of failing."""
    rng = np.random.default_rng(0)
    boxes = rng.uniform(0, 100, (60, 4)).astype(np.float32)
    report = compare({"boxes": boxes}, {"boxes": boxes[:56] + 0.5})
    (out,) = report.outputs
    assert out.note == "shape 56x4 in int8, 60x4 in float: leading elements compared"
    assert out.max_abs == pytest.approx(0.5) and 0.99 < out.cosine < 1.0
    assert "leading elements compared" in "\n".join(report.markdown())


def test_non_finite_values_are_left_out_and_counted():
    """An exploding network's box decoding overflows exp() to inf: the figures come from the finite values and
    say how many were left out, instead of NaN."""
    ref = np.array([1.0, 2.0, np.inf, 4.0], np.float32)
    got = np.array([1.0, 2.5, np.inf, np.nan], np.float32)
    (out,) = compare({"boxes": ref}, {"boxes": got}).outputs
    assert out.note == "1 non-finite in float, 2 in int8, left out"
    assert np.isfinite(out.snr_db) and np.isfinite(out.cosine) and out.max_abs == pytest.approx(0.5)


def test_each_run_without_o_gets_its_own_numbered_folder(build, tmp_path):
    import shutil
    copy = tmp_path / "b"
    shutil.copytree(build, copy)
    for _ in range(3):
        result = CliRunner().invoke(fpga_run, ["run", str(copy), "--frames", "1", "--no-accuracy"])
        assert result.exit_code == 0, result.output
    assert sorted(p.name for p in copy.iterdir() if p.name.startswith("run")) == ["run", "run2", "run3"]
    assert "outputs: " + str(copy / "run3") in result.output
    assert {p.name for p in (copy / "run2").iterdir()} == {p.name for p in (copy / "run").iterdir()}


def test_preprocessing_presets_place_and_normalise_a_picture_as_their_trainers_do():
    from fpga_runtime.preprocess import IMAGENET_MEAN, IMAGENET_STD, PRESETS, choose
    picture = Image.new("RGB", (40, 20), (255, 0, 51))
    x, fit = PRESETS["yolo"].apply(picture, [1, 3, 32, 32], "float32")
    assert x.shape == (1, 3, 32, 32) and x.dtype == np.float32
    assert (fit.pad_x, fit.pad_y) == (0.0, 8.0)                          # 40x20 -> 32x16, grey bars above and below
    assert np.allclose(x[0, :, 16, 16], [1.0, 0.0, 0.2]) and np.allclose(x[0, :, 0, 0], 114 / 255)
    y, _ = PRESETS["imagenet"].apply(picture, [1, 3, 8, 8], "float32")
    want = (np.array([1.0, 0.0, 0.2]) - IMAGENET_MEAN) / IMAGENET_STD
    assert np.allclose(y[0, :, 4, 4], want, atol=1e-5)
    bgr, _ = choose("unit", [1, 3, 8, 8], "float32", {}, bgr=True)[0].apply(picture, [1, 3, 8, 8], "float32")
    assert np.allclose(bgr[0, :, 4, 4], [0.2, 0.0, 1.0])
    assert choose(None, [1, 416, 416, 3], "uint8", {})[0].preset == "none"
    assert choose(None, [1, 3, 640, 640], "float32", {"stride": "32", "names": "{}"})[0].preset == "yolo"
    unit, why = choose(None, [1, 3, 224, 224], "float32", {})
    assert unit.preset == "unit" and "--preprocess imagenet" in why
    with pytest.raises(ValueError, match="takes no 3-channel picture"):
        choose("yolo", [1, 3, "h", "w"], "float32", {})


def test_a_float_export_calibrates_on_jpegs_and_runs_a_picture_with_no_conversion_by_hand(tmp_path):
    from graphs import Net
    n = Net(channels=3, size=32)
    model = n.model([n.conv(n.node("Relu", [n.conv("x", "a", cout=8)], "r"), "b", cin=8)])
    onnx.helper.set_model_props(model, {"stride": "32", "names": "{0: 'person'}"})     # as ultralytics writes it
    onnx.save(model, str(tmp_path / "m.onnx"))
    (tmp_path / "jpegs").mkdir()
    rng = np.random.default_rng(0)
    for i in range(3):
        Image.fromarray(rng.integers(0, 255, (40, 60, 3), np.uint8)).save(tmp_path / "jpegs" / f"{i}.jpg")
    result = CliRunner().invoke(partition, [str(tmp_path / "m.onnx"), "-o", str(tmp_path / "b"), "--calibrate",
                                            str(tmp_path / "jpegs"), "--no-picture", "--offload-all"])
    assert result.exit_code == 0, result.output
    assert "pre-processing: yolo: letterbox, RGB" in result.output and "ultralytics metadata" in result.output
    plan = json.loads((tmp_path / "b" / "plan.json").read_text())
    assert plan["preprocess"]["preset"] == "yolo" and plan["preprocess"]["layout"] == "nchw"
    assert "3 frames from" in (tmp_path / "b" / "report.md").read_text()
    run = CliRunner().invoke(fpga_run, ["run", str(tmp_path / "b"), "--image", str(tmp_path / "jpegs" / "0.jpg"),
                                        "--no-accuracy"])
    assert run.exit_code == 0, run.output
    assert "60x40 letterboxed to 32x32" in run.output
    with fpga_runtime.Session(tmp_path / "b") as s:
        outputs, fit = s.run_image(tmp_path / "jpegs" / "0.jpg")
        assert np.array_equal(outputs[0], np.load(tmp_path / "b" / "run" / "frame0_b.npy"))
        assert fit.pad_y == 5.0


def test_int8_is_measured_on_every_held_out_frame_of_accuracy_dir(tmp_path):
    """--accuracy-dir: pictures or arrays the model was not calibrated on, every one measured (the report says how
    many and where); a folder with no frames is refused naming the option."""
    from graphs import Net
    n = Net(channels=3, size=32)
    onnx.save(n.model([n.conv(n.node("Relu", [n.conv("x", "a", cout=8)], "r"), "b", cin=8)]), str(tmp_path / "m.onnx"))
    rng = np.random.default_rng(0)
    for folder, count in (("calib", 2), ("held", 5)):
        (tmp_path / folder).mkdir()
        for i in range(count):
            Image.fromarray(rng.integers(0, 255, (32, 32, 3), np.uint8)).save(tmp_path / folder / f"{i}.png")
    args = [str(tmp_path / "m.onnx"), "-o", str(tmp_path / "b"), "--calibrate", str(tmp_path / "calib"),
            "--preprocess", "unit", "--no-picture", "--offload-all"]
    result = CliRunner().invoke(partition, args + ["--accuracy-dir", str(tmp_path / "held")])
    assert result.exit_code == 0, result.output
    assert f"on 5 held-out frame(s) of {tmp_path / 'held'}" in result.output
    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(partition, args + ["--accuracy-dir", str(tmp_path / "empty")])
    assert result.exit_code == 2 and "--accuracy-dir" in result.output and "no .npy or image files" in result.output


def test_run_image_fits_a_picture_as_fpga_run_does_for_a_raw_frame_input(tmp_path, zoo):
    """The zoo's YOLOv3-tiny takes uint8 NHWC frames: the picture itself is the frame (letterboxed), whatever
    preset the build records; Session.run_image and `fpga-run run --image` take the same pixels."""
    run_partition(PartitionConfig(model=zoo("yolov3-tiny", 64), out_dir=tmp_path / "b", picture=False,
                                  accuracy=False, preprocess="yolo"))
    Image.fromarray(np.random.default_rng(1).integers(0, 255, (90, 160, 3), np.uint8)).save(tmp_path / "p.png")
    run = CliRunner().invoke(fpga_run, ["run", str(tmp_path / "b"), "--image", str(tmp_path / "p.png"),
                                        "--no-accuracy"])
    assert run.exit_code == 0, run.output
    with fpga_runtime.Session(tmp_path / "b") as s:
        outputs, fit = s.run_image(tmp_path / "p.png")
        assert outputs[1].max() > 0.01                      # pixels, not pixels / 255 cast to uint8
        for name, value in zip(s.output_names, outputs):
            assert np.array_equal(value, np.load(tmp_path / "b" / "run" / f"frame0_{name}.npy")), name
    assert fit.pad_y == 14.0


def test_preprocessing_options_that_contradict_each_other_stop_before_step_1(tmp_path, zoo):
    result = CliRunner().invoke(partition, [str(zoo("classifier")), "-o", str(tmp_path / "b"), "--preprocess",
                                            "none", "--mean", "0.5,0.5,0.5"])
    assert result.exit_code == 2 and "--mean, --std and --scale do not apply" in result.output
    assert "[1/" not in result.output and not (tmp_path / "b").exists()
    bad = CliRunner().invoke(partition, [str(zoo("classifier")), "-o", str(tmp_path / "b"), "--std", "1,2"])
    assert bad.exit_code == 2 and "three numbers" in bad.output
    wrong = CliRunner().invoke(partition, [str(zoo("classifier")), "-o", str(tmp_path / "b"), "--layout", "nhwc"])
    assert wrong.exit_code == 2 and "--layout nhwc: the model input [1, 3, 16, 16] has no 3 channels last" in \
        wrong.output and not (tmp_path / "b").exists()
    right = CliRunner().invoke(partition, [str(zoo("classifier")), "-o", str(tmp_path / "b"), "--layout", "nchw",
                                           "--no-picture", "--no-accuracy"])
    assert right.exit_code == 0, right.output
    assert json.loads((tmp_path / "b" / "plan.json").read_text())["preprocess"]["layout"] == "nchw"


def test_a_raw_yolo_head_is_decoded_drawn_with_class_names_and_said_in_one_line(tmp_path):
    from graphs import Net
    n = Net(channels=3, size=32)
    head = n.node("Sigmoid", [n.conv("x", "head", cout=6)], "scores")                 # 4 box values + 2 classes
    flat = n.node("Reshape", [head, n.const("shape", np.array([1, 6, 1024], np.int64))], "output0")
    model = n.model([flat])
    onnx.helper.set_model_props(model, {"stride": "32", "names": "{0: 'person', 1: 'bus'}"})
    onnx.save(model, str(tmp_path / "m.onnx"))
    Image.fromarray(np.random.default_rng(1).integers(0, 255, (48, 64, 3), np.uint8)).save(tmp_path / "bus.jpg")
    built = CliRunner().invoke(partition, [str(tmp_path / "m.onnx"), "-o", str(tmp_path / "b"), "--no-picture",
                                           "--offload-all", "--no-accuracy"])
    assert built.exit_code == 0, built.output
    assert json.loads((tmp_path / "b" / "plan.json").read_text())["class_names"] == ["person", "bus"]
    run = CliRunner().invoke(fpga_run, ["run", str(tmp_path / "b"), "--image", str(tmp_path / "bus.jpg"),
                                        "--conf", "0.6", "--max-det", "5", "--no-accuracy"])
    assert run.exit_code == 0, run.output
    line = next(x for x in run.output.splitlines() if x.startswith(str(tmp_path / "bus.jpg") + ":") and "->" in x)
    record = json.loads((tmp_path / "b" / "run" / "frame0_bus_detections.json").read_text())
    found = record["detections"]
    assert 0 < len(found) <= 5 and all(d["score"] >= 0.6 and d["name"] in ("person", "bus") for d in found)
    assert all(0 <= d["box"][0] <= d["box"][2] <= 64 and 0 <= d["box"][1] <= d["box"][3] <= 48 for d in found)
    for name in ("person", "bus"):
        count = sum(d["name"] == name for d in found)
        assert (f"{count} {name}" in line) == (count > 0)
    assert " ms -> " in line and (tmp_path / "b" / "run" / "frame0_bus_detections.png").exists()
    (tmp_path / "pictures").mkdir()
    for name in ("b.jpg", "a.png", "notes.txt"):
        (tmp_path / "pictures" / name).write_bytes((tmp_path / "bus.jpg").read_bytes())
    folder = CliRunner().invoke(fpga_run, ["run", str(tmp_path / "b"), "--source", str(tmp_path / "pictures"),
                                           "--no-accuracy"])
    assert folder.exit_code == 0, folder.output
    said = [x for x in folder.output.splitlines() if " -> " in x]
    assert [Path(x.split(":")[0]).name for x in said] == ["a.png", "b.jpg"]       # one line per picture, in order
    assert (tmp_path / "b" / "run2" / "frame1_b_detections.json").exists()
    empty = CliRunner().invoke(fpga_run, ["run", str(tmp_path / "b"), "--source", str(tmp_path / "nothing*.jpg")])
    assert empty.exit_code == 2 and "no pictures" in empty.output


def test_torchvision_style_outputs_are_drawn_above_conf_with_coco91_names(tmp_path):
    """boxes [K, 4], scores [K], labels [K] (a torchvision detector after its NMS): drawn where the score is at
    least --conf, labelled by torchvision's COCO ids."""
    from graphs import Net
    n = Net(channels=3, size=16)
    corner = n.node("Sigmoid", [n.conv("x", "corner", cout=2)], "corner01")
    corner = n.node("Mul", [corner, n.const("eight", np.array(8.0, np.float32))], "corner_px")
    nhwc = n.node("Transpose", [corner], "corner_nhwc", perm=[0, 2, 3, 1])
    xy = n.node("Reshape", [nhwc, n.const("k2", np.array([256, 2], np.int64))], "xy")
    far = n.node("Add", [xy, n.const("size", np.array(6.0, np.float32))], "far")
    boxes = n.node("Concat", [xy, far], "boxes", axis=1)
    score = n.node("Sigmoid", [n.conv("x", "score", cout=1)], "score01")
    scores = n.node("Reshape", [score, n.const("k", np.array([256], np.int64))], "scores")
    high = n.node("Greater", [scores, n.const("half", np.array(0.5, np.float32))], "high")
    labels = n.node("Add", [n.node("Cast", [high], "high64", to=7), n.const("one", np.array(1, np.int64))],
                    "labels")
    model = n.model([boxes, scores, labels])
    model.graph.output[2].type.tensor_type.elem_type = onnx.TensorProto.INT64
    onnx.save(model, str(tmp_path / "m.onnx"))
    Image.fromarray(np.random.default_rng(4).integers(0, 255, (16, 32, 3), np.uint8)).save(tmp_path / "p.jpg")
    built = CliRunner().invoke(partition, [str(tmp_path / "m.onnx"), "-o", str(tmp_path / "b"), "--no-picture",
                                           "--offload-all", "--no-accuracy", "--preprocess", "unit"])
    assert built.exit_code == 0, built.output
    run = CliRunner().invoke(fpga_run, ["run", str(tmp_path / "b"), "--image", str(tmp_path / "p.jpg"), "--conf",
                                        "0.5", "--names", "coco91", "--no-accuracy", "-o", str(tmp_path / "r")])
    assert run.exit_code == 0, run.output
    found = json.loads((tmp_path / "r" / "frame0_p_detections.json").read_text())["detections"]
    got = np.load(tmp_path / "r" / "frame0_scores.npy")
    assert len(found) == int((got >= 0.5).sum()) > 0
    assert {d["name"] for d in found} <= {"person", "bicycle"} and all(d["score"] >= 0.5 for d in found)
    assert all(0 <= d["box"][0] <= d["box"][2] <= 32 for d in found)          # in the 32 x 16 picture's pixels
    assert f"{len(found)} " in next(x for x in run.output.splitlines() if " -> " in x)


def test_a_probability_map_is_tinted_over_the_picture(tmp_path):
    """A text detector's map [1, 1, H, W]: the picture's pixels whose map value passes the threshold are tinted,
    and the line says what share of the picture that is."""
    from graphs import Net
    n = Net(channels=3, size=32)
    centred = n.node("Sub", [n.conv("x", "map", cout=1), n.const("prior", np.array(-0.42, np.float32))], "centred")
    logits = n.node("Mul", [centred, n.const("gain", np.array(6.0, np.float32))], "logits")
    onnx.save(n.model([n.node("Sigmoid", [logits], "maps")]), str(tmp_path / "m.onnx"))
    ramp = np.linspace(0, 255, 96)[None, :, None] + np.random.default_rng(5).normal(0, 20, (64, 96, 3))
    picture = np.clip(ramp, 0, 255).astype(np.uint8)                  # dark left, bright right
    Image.fromarray(picture).save(tmp_path / "page.png")
    built = CliRunner().invoke(partition, [str(tmp_path / "m.onnx"), "-o", str(tmp_path / "b"), "--no-picture",
                                           "--offload-all", "--no-accuracy", "--preprocess", "unit", "--stretch"])
    assert built.exit_code == 0, built.output
    run = CliRunner().invoke(fpga_run, ["run", str(tmp_path / "b"), "--image", str(tmp_path / "page.png"),
                                        "--no-accuracy", "-o", str(tmp_path / "r")])
    assert run.exit_code == 0, run.output
    prob = np.load(tmp_path / "r" / "frame0_maps.npy")[0, 0]
    tinted = np.asarray(Image.open(tmp_path / "r" / "frame0_page_maps.png").convert("RGB"))
    changed = np.any(tinted != picture, axis=2)
    assert 0 < changed.mean() < 1
    assert changed.mean() == pytest.approx((prob > 0.3).mean(), abs=1e-9)     # 2 x 3 picture pixels per map pixel
    line = next(x for x in run.output.splitlines() if " -> " in x)
    assert f"{changed.mean():.1%} of the picture above 0.3 in 'maps'" in line


def test_a_yolov5_head_with_names_from_a_file_or_coco(tmp_path):
    """[1, anchors, 5 + classes] (objectness column) decoded and labelled; partition --names records the names in
    the plan, fpga-run run --names overrides them; a bad --names fails before anything runs."""
    from graphs import Net
    n = Net(channels=3, size=32)
    head = n.node("Sigmoid", [n.conv("x", "head", cout=7)], "scores")               # 4 box + objectness + 2
    flat = n.node("Reshape", [head, n.const("shape", np.array([1, 7, 1024], np.int64))], "flat")
    rows = n.node("Transpose", [flat], "output0", perm=[0, 2, 1])
    onnx.save(n.model([rows]), str(tmp_path / "m.onnx"))
    (tmp_path / "pets.names").write_text("cat\ndog\n")
    Image.fromarray(np.random.default_rng(2).integers(0, 255, (32, 32, 3), np.uint8)).save(tmp_path / "p.jpg")
    bad = CliRunner().invoke(partition, [str(tmp_path / "m.onnx"), "-o", str(tmp_path / "x"), "--names",
                                         str(tmp_path / "none.txt")])
    assert bad.exit_code == 2 and "--names" in bad.output and not (tmp_path / "x").exists()
    built = CliRunner().invoke(partition, [str(tmp_path / "m.onnx"), "-o", str(tmp_path / "b"), "--no-picture",
                                           "--offload-all", "--no-accuracy", "--preprocess", "unit",
                                           "--names", str(tmp_path / "pets.names")])
    assert built.exit_code == 0, built.output
    assert json.loads((tmp_path / "b" / "plan.json").read_text())["class_names"] == ["cat", "dog"]
    for names, expected in ((None, {"cat", "dog"}), ("coco", {"person", "bicycle"})):
        out = tmp_path / f"run-{names}"
        run = CliRunner().invoke(fpga_run, ["run", str(tmp_path / "b"), "--image", str(tmp_path / "p.jpg"),
                                            "--conf", "0.1", "--no-accuracy", "-o", str(out)]
                                 + (["--names", names] if names else []))
        assert run.exit_code == 0, run.output
        found = json.loads((out / "frame0_p_detections.json").read_text())["detections"]
        assert found and {d["name"] for d in found} <= expected
        value = np.load(out / "frame0_output0.npy")[0].astype(np.float64)
        best = (value[:, 5:] * value[:, 4:5]).max()
        assert max(d["score"] for d in found) == pytest.approx(best, abs=1e-4)       # objectness x class
    bad_run = CliRunner().invoke(fpga_run, ["run", str(tmp_path / "b"), "--names", str(tmp_path / "none.txt")])
    assert bad_run.exit_code == 2 and "--names" in bad_run.output
