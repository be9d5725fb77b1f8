"""Reading detections out of raw heads (both YOLO layouts) and class names (`--names coco|FILE`)."""
import json

import numpy as np
import pytest

from fpga_runtime.checking.detections import RawHead, decode_yolo, detection_agreement, raw_yolo_head
from fpga_runtime.class_names import COCO, NamesError, coco91, names_by_id, read_names
from partitioner.frontend.metadata import class_names


def _v5_head(anchors=300, classes=3, seed=0):
    """[1, anchors, 5 + classes] with low scores everywhere but two boxes: one confident, one weak."""
    rng = np.random.default_rng(seed)
    rows = np.concatenate([rng.uniform(20, 200, (anchors, 4)), rng.uniform(0, 0.1, (anchors, 1 + classes))], 1)
    rows[7, :4] = [100, 50, 40, 20]
    rows[7, 4], rows[7, 5 + 2] = 0.9, 0.8             # objectness 0.9 x class 2's 0.8 = 0.72
    rows[9, :4] = [30, 30, 10, 10]
    rows[9, 4], rows[9, 5 + 1] = 0.3, 0.9             # 0.27: under a 0.5 threshold although class 1 reads 0.9
    return rows[None].astype(np.float32)


def test_a_yolov5_head_scores_objectness_times_class():
    value = _v5_head()
    head = raw_yolo_head({"output0": value})
    assert head == RawHead("output0", objectness=True)
    found = decode_yolo(head, value, conf=0.5)
    assert len(found) == 1
    c, score, box = found[0]
    assert c == 2 and score == pytest.approx(0.72, rel=1e-6)
    assert np.allclose(box, [80, 40, 120, 60])
    assert [f[0] for f in decode_yolo(head, value, conf=0.2)][:2] == [2, 1]


def test_a_v8_head_is_the_same_rows_transposed_without_objectness():
    v5 = _v5_head()[0]
    scores = v5[:, 5:] * v5[:, 4:5]
    v8 = np.concatenate([v5[:, :4], scores], 1).T[None]          # [1, 4 + classes, anchors]
    head = raw_yolo_head({"out": v8})
    assert head == RawHead("out", objectness=False)
    a = decode_yolo(head, v8, conf=0.2)
    b = decode_yolo(RawHead("o", True), v5[None], conf=0.2)
    assert [x[0] for x in a] == [x[0] for x in b]
    assert np.allclose([x[1] for x in a], [x[1] for x in b], rtol=1e-5)


def test_end_to_end_rows_and_other_outputs_are_no_raw_head():
    rows = np.zeros((1, 300, 6), np.float32)
    rows[0, :5] = [[10, 10, 50, 50, 0.9, 3], [5, 5, 9, 9, 0.8, 0], [0, 0, 4, 4, 0.7, 7], [1, 1, 2, 2, 0.6, 1],
                   [3, 3, 6, 6, 0.5, 2]]
    assert raw_yolo_head({"out": rows}) is None                 # (x1, y1, x2, y2, score, class id): NMS done
    assert raw_yolo_head({"a": _v5_head(), "b": np.zeros((1, 4), np.float32)}) is None
    assert raw_yolo_head({"logits": np.zeros((1, 1000), np.float32)}) is None
    assert raw_yolo_head({"map": np.zeros((1, 64, 64), np.float32)}) is None


def test_int8_and_float_agree_on_a_yolov5_head_by_boxes():
    ref = _v5_head()
    got = ref + np.random.default_rng(3).normal(0, 1e-3, ref.shape).astype(np.float32)
    agreement = detection_agreement({"output0": ref}, {"output0": got})
    assert agreement is not None and agreement.precision > 0.9 and agreement.recall > 0.9


def test_names_from_coco_a_text_file_json_and_yaml(tmp_path):
    assert read_names("coco") == list(COCO) and len(COCO) == 80 and COCO[5] == "bus"
    ids = read_names("coco91")
    assert ids == coco91() and len(ids) == 91 and ids.count("N/A") == 10
    assert (ids[1], ids[6], ids[12], ids[13], ids[90]) == ("person", "bus", "N/A", "stop sign", "toothbrush")
    (tmp_path / "obj.names").write_text("cat\n\ndog\n")
    assert read_names(str(tmp_path / "obj.names")) == ["cat", "dog"]
    (tmp_path / "n.json").write_text(json.dumps({"0": "a", "2": "c"}))
    assert read_names(str(tmp_path / "n.json")) == ["a", "1", "c"]
    yaml = pytest.importorskip("yaml")
    (tmp_path / "data.yaml").write_text(yaml.safe_dump({"path": "x", "names": {0: "person", 1: "car"}}))
    assert read_names(str(tmp_path / "data.yaml")) == ["person", "car"]


@pytest.mark.parametrize("content,suffix,message", [
    (None, ".txt", "no readable file of class names"),
    ("", ".txt", "holds no class names"),
    ("{not json", ".json", "not JSON"),
    ('{"1000000000": "x"}', ".json", "holds no class names"),
    ("\xff\xfe", ".txt", "no readable file"),
])
def test_bad_names_files_get_one_clear_error(tmp_path, content, suffix, message):
    path = tmp_path / f"names{suffix}"
    if content == "\xff\xfe":
        path.write_bytes(b"\xff\xfe\x00\xd8")
    elif content is not None:
        path.write_text(content)
    with pytest.raises(NamesError, match=message):
        read_names(str(path))


def test_metadata_names_are_read_as_literals_and_bounded():
    assert class_names({"names": "{0: 'person', 1: 'bus'}"}) == ["person", "bus"]
    assert class_names({"names": "{10**9: 'x'}"}) is None                     # an expression is no literal
    assert class_names({"names": "{1000000000: 'x'}"}) is None                # a huge id allocates nothing
    assert class_names({"names": "__import__('os')"}) is None
    assert names_by_id({-1: "x"}) is None


def _end_to_end_rows(seed=0, k=300, real=20):
    """[1, K, 6] (x1 y1 x2 y2 score class), sorted by score, `real` boxes with a score and zero padding after."""
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0, 300, (real, 2))
    rows = np.zeros((k, 6), np.float32)
    rows[:real, :2], rows[:real, 2:4] = xy, xy + rng.uniform(20, 80, (real, 2))
    rows[:real, 4] = np.sort(rng.uniform(0.3, 0.95, real))[::-1]
    rows[:real, 5] = rng.integers(0, 80, real)
    return rows[None]


def test_an_end_to_end_head_is_judged_by_matched_boxes_not_by_its_row_order():
    """int8 reorders near-tied scores and moves boxes a little: row by row the cosine drops, but the same objects
    are found, so F1 is 1; the output is marked ranked so --min-cosine leaves it to --min-f1."""
    from fpga_runtime.checking.accuracy import compare
    from fpga_runtime.checking.detections import end_to_end_output, ranked_outputs
    ref = _end_to_end_rows()
    got = ref.copy()
    order = np.r_[np.random.default_rng(1).permutation(20), np.arange(20, 300)]
    got[0] = got[0, order]
    got[0, :20, :4] += np.random.default_rng(2).uniform(-2, 2, (20, 4)).astype(np.float32)
    outputs = {"output0": ref, "proto": np.zeros((1, 32, 8, 8), np.float32)}
    assert end_to_end_output(outputs) == "output0" and ranked_outputs(outputs) == {"output0"}
    report = compare(outputs, {"output0": got, "proto": outputs["proto"]})
    rows = next(o for o in report.outputs if o.name == "output0")
    assert rows.ranked and rows.cosine < 0.99 and "F1" in rows.note
    d = report.detections
    assert (d.float_detections, d.int8_detections, d.matched) == (20, 20, 20) and d.f1 == 1.0
    got[0, 5:10, 5] = (got[0, 5:10, 5] + 1) % 80                   # five boxes change class
    d = compare(outputs, {"output0": got, "proto": outputs["proto"]}).detections
    assert d.matched == 15 and d.f1 == pytest.approx(0.75)


def test_detections_are_compared_at_the_score_a_user_keeps_where_float_has_any():
    """A trained head: a few confident boxes and a tail of near-zero scores that reorders under any rounding. The
    tail is not what an application keeps, so it does not count; a confident box lost to int8 does."""
    from fpga_runtime.checking.detections import CONFIDENCE, CONFIDENT, RANKED
    ref = _end_to_end_rows(real=60)
    ref[0, :4, 4] = [0.9, 0.7, 0.5, 0.3]
    ref[0, 4:60, 4] = np.linspace(0.05, 0.01, 56)
    got = ref.copy()
    tail = np.r_[np.arange(4), 4 + np.random.default_rng(5).permutation(56), np.arange(60, 300)]
    got[0] = got[0, tail]
    got[0, 4:60, :4] += 40                     # the tail's boxes move: top-100 matching would lose them
    d = detection_agreement({"output0": ref}, {"output0": got})
    assert d.unit == CONFIDENT and (d.float_detections, d.int8_detections, d.matched) == (4, 4, 4)
    assert d.summary().endswith(f"4 of 4 float / 4 int8 detections matched; detections scoring >= {CONFIDENCE})")
    got[0, 3, 4] = CONFIDENCE - 0.01           # int8 drops one confident box below the threshold
    d = detection_agreement({"output0": ref}, {"output0": got})
    assert (d.float_detections, d.int8_detections, d.matched) == (4, 3, 3) and d.recall == pytest.approx(0.75)
    ref[0, :4, 4] = got[0, :4, 4] = 0.1        # nothing confident in float (untrained): the best TOP_K compare
    d = detection_agreement({"output0": ref}, {"output0": got})
    assert d.unit == RANKED and d.float_detections == 60 and d.matched == 4


def test_pooled_frames_say_which_rule_each_frame_took():
    from fpga_runtime.checking.accuracy import AccuracyReport, summarise
    from fpga_runtime.checking.detections import CONFIDENT, RANKED, DetectionAgreement
    reports = [AccuracyReport([], DetectionAgreement(4, 4, 4, CONFIDENT)),
               AccuracyReport([], DetectionAgreement(10, 10, 6, RANKED)),
               AccuracyReport([], DetectionAgreement(2, 3, 2, CONFIDENT))]
    d = summarise(reports).detections
    assert (d.float_detections, d.int8_detections, d.matched) == (16, 17, 12)
    assert d.unit.startswith("2 frame(s): detections scoring") and "1 frame(s): the best 100" in d.unit
