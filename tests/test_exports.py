"""Real exported detectors (the `exports` tier, `pytest -m exports`): the corpus that scripts/export_corpus.sh
writes to build/corpus (ultralytics YOLOv8n / YOLOv5nu / YOLOv3-tiny-u, torchvision SSD300-VGG16 and
SSDlite320, a PaddleOCR-style DBNet) and scripts/export_paddle_corpus.sh adds to it (PicoDet with LCNet and
ESNet backbones, through paddle2onnx) and scripts/export_darknet_corpus.sh (YOLOv3 and YOLOv3-tiny from Darknet
files, through darknet2any) and scripts/export_families.py (a keras2onnx-style MTCNN ONet with PRelu and auto_pad,
a GELU text detector, an end-to-end YOLO11n with attention and TopK, a float16 MobileNetV3), partitioned with its
calibration frames; and the breadth set of
scripts/export_breadth.py (torchvision models with grouped convs, pre-activation BN, average pools, R-CNN
control flow). Skipped where the corpus has not been exported (it needs torch or Paddle; hundreds of MB, not
in git)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fpga_runtime.plan import read_plan
from partitioner.build import PartitionConfig, run_partition

CORPUS = Path(__file__).resolve().parent.parent / "build" / "corpus"
RECORD = json.loads((CORPUS / "corpus.json").read_text()) if (CORPUS / "corpus.json").exists() else {}
# sequential FPGA segments (FPGA subgraphs on the longest dependency chain, Plan.fpga_chain): the bounds
MAX_SEGMENTS = {"ssd300_vgg16": 4, "yolov3-tinyu": 4, "yolov3_darknet": 4, "yolov3-tiny_darknet": 4,
                # scripts/export_families.py: every op of these the engine takes (PRelu, auto_pad, GELU, float16)
                "face_onet_keras": 1, "text_det_gelu": 1, "mobilenet_v3_fp16": 1}
# int8 cosine at least 0.99 on every output a cosine judges (not detections ordered by score)
HOLDS_INT8 = {"face_onet_keras", "text_det_gelu", "mobilenet_v3_fp16"}
# int8 detection F1 against float on the held-out frames, where it means something: trained models (confident
# boxes) and probability maps; measured 0.947 (YOLO11n, 40 validation pictures), 0.998 and 0.996 (text maps)
MIN_F1 = {"yolo11n_e2e_trained": 0.93, "text_det_gelu": 0.99, "dbnet_mobilenetv3": 0.99}

pytestmark = [pytest.mark.exports, pytest.mark.skipif(not RECORD, reason="run scripts/export_corpus.sh first")]


@pytest.mark.parametrize("name", sorted(RECORD) or ["none"])
def test_real_export_partitions_verifies_and_stays_on_the_fpga(name, tmp_path):
    info = RECORD[name]
    frames = CORPUS / "frames" / name
    held_out = {info["input"]: np.load(sorted((frames / "eval").glob("*.npy"))[0])}
    result = run_partition(PartitionConfig(model=CORPUS / info["file"], out_dir=tmp_path / "b", verify=True,
                                           picture=False, calibrate_dir=frames / "calibrate", inputs=held_out,
                                           accuracy_dir=frames / "eval"))
    assert result.verified, result.checks
    plan = read_plan(tmp_path / "b")
    fpga = [s for s in plan.subgraphs if s.device == "fpga"]
    macs = sum((s.estimate or {}).get("macs", 0) for s in plan.subgraphs)
    assert sum(s.estimate["macs"] for s in fpga) >= 0.99 * macs
    assert len(plan.fpga_chain()) <= MAX_SEGMENTS.get(name, 8), plan.fpga_chain()
    assert all(o.cosine > 0.7 for o in result.accuracy.outputs if not o.ranked), result.accuracy.outputs
    if name in HOLDS_INT8:
        assert all(o.cosine >= 0.99 for o in result.accuracy.outputs if not o.ranked), result.accuracy.outputs
    if name in MIN_F1:
        assert result.accuracy.detections.f1 >= MIN_F1[name], result.accuracy.detections.summary()


BREADTH = CORPUS / "breadth"
BREADTH_RECORD = (json.loads((BREADTH / "breadth.json").read_text()) if (BREADTH / "breadth.json").exists()
                  else {})


@pytest.mark.skipif(not BREADTH_RECORD, reason="run scripts/export_corpus.sh first (it calls export_breadth.py)")
@pytest.mark.parametrize("name", sorted(BREADTH_RECORD) or ["none"])
def test_breadth_export_verifies_in_few_subgraphs(name, tmp_path):
    """Structures the detector corpus lacks (scripts/export_breadth.py): grouped convs, pre-activation BN and
    average pools run on the engine, so the model stays in a few subgraphs; a two-stage detector's If and Loop
    outputs import; the float partition equals the original (not asserted where export_breadth.py says its
    seeded weights make the model chaotic), int8 is computed, the picture drawn."""
    info = BREADTH_RECORD[name]
    result = run_partition(PartitionConfig(model=BREADTH / info["file"], out_dir=tmp_path / "b", verify=True))
    if info.get("verify", True):
        assert result.verified, result.checks
    assert result.accuracy is not None and result.accuracy.outputs
    plan = read_plan(tmp_path / "b")
    assert len(plan.subgraphs) <= info["max_subgraphs"], [s.name for s in plan.subgraphs]
    assert (tmp_path / "b" / "partition.svg").exists()
