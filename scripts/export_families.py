"""Export trained-network families the corpus lacked, as their users' tools write them (issue: PRelu, auto_pad,
GELU, float16, end-to-end heads):

- `face_onet_keras`: an MTCNN ONet as keras2onnx writes it (NHWC input and a Transpose, VALID/SAME_UPPER auto_pad
  convs and pools, PRelu per channel after every conv and per feature after the dense layer, the NHWC flatten
  before it, MatMul + Add dense layers, three heads). Written with onnx.helper: keras is not installable here, so
  the graph is spelt node by node as keras2onnx 1.13 spells that architecture.
- `text_det_gelu`: a PP-OCRv5-mobile-style text detector in torch: depthwise-separable blocks with BatchNorm and
  erf-GELU, squeeze-and-excitation, a tanh-GELU neck, FPN and a DB head (sigmoid probability map); torch.onnx at
  opset 17 spells both GELUs out (Div/Erf/Add/Mul and Pow/Tanh).
- `yolo11n_e2e`: ultralytics YOLO11n (C2PSA attention blocks) with an end-to-end head in the graph: class maximum,
  TopK(300) and gathers into [1, 300, 6] rows (x1 y1 x2 y2 score class).
- `yolo11n_e2e_trained`: the same, trained here on the CPU (40 epochs, about 6 minutes) on pictures of drawn
  rectangles, ellipses and triangles, so that its head has confident boxes as a user's trained model has.
- `mobilenet_v3_fp16`: torchvision MobileNetV3-small, exported in float32 and converted to float16 with
  onnxconverter-common (keep_io_types off: float16 in and out), as Keras and torch users make float16 files.

Weights are seeded with trained-like statistics (export_corpus.trained_like). Run by scripts/export_corpus.sh.

    python scripts/export_families.py OUT_DIR [--only NAME ...]
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnx
import torch
from corpus_frames import export_all, frames_nchw  # noqa: E402 (scripts/ is on the path when run)
from export_corpus import SEED, db_head, export, text_map_like, top_down, trained_like  # noqa: E402
from onnx import TensorProto, helper, numpy_helper
from torch import nn

# ---- keras2onnx's ONet ------------------------------------------------------------------------------------------

def face_onet_keras(out: Path) -> dict:
    rng = np.random.default_rng(SEED)
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []

    def const(name: str, value, dtype=np.float32) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value, dtype), name))
        return name

    def node(op: str, inputs: list[str], name: str, **attrs) -> str:
        nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name

    def conv(x: str, name: str, cin: int, cout: int, k: int, auto_pad: str) -> str:
        w = const(f"{name}/kernel:0", rng.standard_normal((cout, cin, k, k)) * math.sqrt(2.0 / (cin * k * k)))
        b = const(f"{name}/bias:0", rng.normal(0, 0.05, cout))
        return node("Conv", [x, w, b], name, kernel_shape=[k, k], strides=[1, 1], auto_pad=auto_pad,
                    dilations=[1, 1], group=1)

    def prelu(x: str, name: str, shape: tuple[int, ...]) -> str:
        return node("PRelu", [x, const(f"{name}/alpha:0", rng.uniform(0.05, 0.35, shape))], name)

    def dense(x: str, name: str, cin: int, cout: int) -> str:
        w = const(f"{name}/kernel:0", rng.standard_normal((cin, cout)) * math.sqrt(1.0 / cin))
        y = node("MatMul", [x, w], f"{name}/MatMul")
        return node("Add", [y, const(f"{name}/bias:0", rng.normal(0, 0.05, cout))], name)

    y = node("Transpose", ["input_1"], "adjusted_input", perm=[0, 3, 1, 2])
    y = prelu(conv(y, "conv1", 3, 32, 3, "VALID"), "prelu1", (32, 1, 1))                      # 46
    y = node("MaxPool", [y], "pool1", kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")  # 23
    y = prelu(conv(y, "conv2", 32, 64, 3, "VALID"), "prelu2", (64, 1, 1))                     # 21
    y = node("MaxPool", [y], "pool2", kernel_shape=[3, 3], strides=[2, 2], auto_pad="VALID")       # 10
    y = prelu(conv(y, "conv3", 64, 64, 3, "VALID"), "prelu3", (64, 1, 1))                     # 8
    y = node("MaxPool", [y], "pool3", kernel_shape=[2, 2], strides=[2, 2], auto_pad="SAME_UPPER")  # 4
    y = prelu(conv(y, "conv4", 64, 128, 2, "VALID"), "prelu4", (128, 1, 1))                   # 3
    y = node("Transpose", [y], "permute", perm=[0, 2, 3, 1])            # keras flattens NHWC
    y = node("Reshape", [y, const("flatten/shape", [1, -1], np.int64)], "flatten")
    y = prelu(dense(y, "conv5", 1152, 256), "prelu5", (256,))
    prob = node("Softmax", [dense(y, "conv6-1", 256, 2)], "prob1", axis=-1)
    box = dense(y, "conv6-2", 256, 4)
    landmarks = dense(y, "conv6-3", 256, 10)
    graph = helper.make_graph(nodes, "onet", [helper.make_tensor_value_info("input_1", TensorProto.FLOAT,
                                                                            [1, 48, 48, 3])],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, c])
                               for n, c in ((prob, 2), (box, 4), (landmarks, 10))], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)], producer_name="keras2onnx",
                              producer_version="1.13.0")
    model.ir_version = 6
    onnx.checker.check_model(model)
    onnx.save(model, str(out / "face_onet_keras.onnx"))
    return {"file": "face_onet_keras.onnx", "input": "input_1", "shape": [1, 48, 48, 3], "layout": "nhwc",
            "exporter": "MTCNN ONet spelt as keras2onnx 1.13 writes it (onnx.helper), opset 11",
            "frames": "float NHWC in [0, 1]"}


# ---- a GELU text detector ------------------------------------------------------------------------------------

class _Block(nn.Module):
    """Depthwise 3x3 + BN + GELU, optional SE, pointwise 1x1 + BN + GELU (PP-LCNetV3's block, GELU activations)."""

    def __init__(self, cin: int, cout: int, stride: int, se: bool):
        super().__init__()
        self.dw = nn.Sequential(nn.Conv2d(cin, cin, 3, stride, 1, groups=cin, bias=False), nn.BatchNorm2d(cin),
                                nn.GELU())
        self.se = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(cin, cin // 4, 1), nn.ReLU(),
                                nn.Conv2d(cin // 4, cin, 1), nn.Hardsigmoid()) if se else None
        self.pw = nn.Sequential(nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout), nn.GELU())

    def forward(self, x):
        x = self.dw(x)
        if self.se is not None:
            x = x * self.se(x)
        return self.pw(x)


class _TextDetector(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.GELU())
        spec = [(16, 32, 1, False), (32, 48, 2, False), (48, 48, 1, False), (48, 96, 2, True), (96, 96, 1, True),
                (96, 192, 2, True), (192, 192, 1, True)]
        self.blocks = nn.ModuleList(_Block(*s) for s in spec)
        self.taps = [2, 4, 6]
        self.lateral = nn.ModuleList(nn.Sequential(nn.Conv2d(c, 64, 1, bias=False), nn.BatchNorm2d(64),
                                                   nn.GELU(approximate="tanh")) for c in (48, 96, 192))
        self.head = db_head(64, 16)

    def forward(self, x):
        x = self.stem(x)
        feats = []
        for i, block in enumerate(self.blocks):
            x = block(x)
            if i in self.taps:
                feats.append(x)
        return self.head(top_down([f(t) for f, t in zip(self.lateral, feats)])[0])


def text_det_gelu(size: int, out: Path) -> dict:
    torch.manual_seed(SEED)
    model = _TextDetector()
    frames = [torch.from_numpy(f) for f in frames_nchw(6, size, size, 4)]
    text_map_like(model, frames)
    export(model, frames[0], out / "text_det_gelu.onnx", 17, (["x"], ["maps"]))
    return {"file": "text_det_gelu.onnx", "input": "x", "shape": [1, 3, size, size],
            "exporter": "PP-OCRv5-mobile-style detector (erf and tanh GELU, SE, DB head) via torch.onnx opset 17",
            "frames": "float NCHW in [0, 1]"}


# ---- YOLO11n end to end --------------------------------------------------------------------------------------

class _EndToEnd(nn.Module):
    """The raw head [1, 4 + C, N] to the best `k` rows (x1 y1 x2 y2 score class) by TopK, in the graph."""

    def __init__(self, det: nn.Module, k: int = 300):
        super().__init__()
        self.det, self.k = det, k

    def forward(self, x):
        y = self.det(x)
        y = (y[0] if isinstance(y, (list, tuple)) else y).transpose(1, 2)
        conf, cls = y[..., 4:].max(-1)
        top, idx = conf.topk(self.k, dim=1)
        b = y[..., :4].gather(1, idx[..., None].expand(-1, -1, 4))
        xyxy = torch.cat([b[..., :2] - b[..., 2:] / 2, b[..., :2] + b[..., 2:] / 2], -1)
        return torch.cat([xyxy, top[..., None], cls.gather(1, idx).float()[..., None]], -1)


def yolo11n_e2e(size: int, out: Path) -> dict:
    from ultralytics.nn.tasks import DetectionModel
    torch.manual_seed(SEED)
    model = DetectionModel("yolo11n.yaml", nc=80, verbose=False)
    frames = [torch.from_numpy(f) for f in frames_nchw(6, size, size, 5)]
    # with gammas up to 1.6 this random network is chaotic (float cosine 0.83 at its output under 1/255 input
    # noise, less than int8's own step); a trained one is not, so the gammas stay at or below 1 (as dbnet's)
    trained_like(model, frames, gammas=(0.3, 1.0))
    model.eval()
    for m in model.modules():
        if m.__class__.__name__ == "Detect":
            m.export, m.format = True, "onnx"
    export(_EndToEnd(model), frames[0], out / "yolo11n_e2e.onnx", 17, (["images"], ["output0"]))
    return {"file": "yolo11n_e2e.onnx", "input": "images", "shape": [1, 3, size, size],
            "exporter": "ultralytics yolo11n.yaml (C2PSA attention) + TopK(300) end-to-end head, torch.onnx opset 17",
            "frames": "float NCHW in [0, 1]"}


# ---- a trained end-to-end detector ------------------------------------------------------------------------

SHAPES = ("rectangle", "ellipse", "triangle")


def shapes_picture(rng: np.random.Generator, size: int) -> tuple[np.ndarray, list[tuple]]:
    """A picture of 1-4 filled shapes on a shaded background, and its YOLO labels (class, cx, cy, w, h in [0, 1])."""
    from PIL import Image, ImageDraw, ImageFilter
    top, bottom = rng.integers(0, 256, 3), rng.integers(0, 256, 3)
    ramp = np.linspace(0, 1, size)[:, None, None]
    img = Image.fromarray(np.broadcast_to(top * (1 - ramp) + bottom * ramp, (size, size, 3)).astype(np.uint8))
    pen = ImageDraw.Draw(img)
    labels = []
    for _ in range(int(rng.integers(1, 5))):
        w, h = (int(v) for v in rng.integers(size // 8, size // 2, 2))
        x0, y0 = int(rng.integers(0, size - w)), int(rng.integers(0, size - h))
        cls = int(rng.integers(0, len(SHAPES)))
        colour = tuple(int(c) for c in rng.integers(0, 256, 3))
        if cls == 0:
            pen.rectangle([x0, y0, x0 + w, y0 + h], fill=colour)
        elif cls == 1:
            pen.ellipse([x0, y0, x0 + w, y0 + h], fill=colour)
        else:
            pen.polygon([(x0 + w / 2, y0), (x0, y0 + h), (x0 + w, y0 + h)], fill=colour)
        labels.append((cls, (x0 + w / 2) / size, (y0 + h / 2) / size, w / size, h / size))
    img = img.filter(ImageFilter.GaussianBlur(float(rng.uniform(0, 1.0))))
    noisy = np.asarray(img, np.float32) + rng.normal(0, 4, (size, size, 3))
    return np.clip(noisy, 0, 255).astype(np.uint8), labels


def yolo11n_e2e_trained(size: int, out: Path, epochs: int = 40) -> dict:
    """YOLO11n trained here, on the CPU, to find three kinds of shapes (a data set this script draws: no download),
    so that its end-to-end head has confident boxes, as a user's trained model has; then exported with TopK(300)."""
    from PIL import Image
    from ultralytics import YOLO
    data = out / "shapes_data"
    rng = np.random.default_rng(SEED)
    val = []
    for part, count in (("train", 400), ("val", 40)):
        (data / "images" / part).mkdir(parents=True, exist_ok=True)
        (data / "labels" / part).mkdir(parents=True, exist_ok=True)
        for i in range(count):
            picture, labels = shapes_picture(rng, size)
            if part == "val":
                val.append(picture.transpose(2, 0, 1)[None].astype(np.float32) / 255.0)
            Image.fromarray(picture).save(data / "images" / part / f"{i}.png")
            (data / "labels" / part / f"{i}.txt").write_text(
                "".join(f"{c} {x:.6f} {y:.6f} {w:.6f} {h:.6f}\n" for c, x, y, w, h in labels))
    (data / "shapes.yaml").write_text(f"path: {data.resolve()}\ntrain: images/train\nval: images/val\n"
                                      f"names: {dict(enumerate(SHAPES))}\n")
    torch.manual_seed(SEED)
    model = YOLO("yolo11n.yaml")
    model.train(data=str(data / "shapes.yaml"), epochs=epochs, imgsz=size, batch=16, device="cpu", workers=0,
                amp=False, plots=False, val=False, project=str(out / "shapes_runs"), name="train", exist_ok=True,
                verbose=False, seed=SEED, deterministic=True)
    det = model.model.float().eval()
    for m in det.modules():
        if m.__class__.__name__ == "Detect":
            m.export, m.format = True, "onnx"
    frames = [torch.from_numpy(shapes_picture(np.random.default_rng(7), size)[0].transpose(2, 0, 1)[None]
                               .astype(np.float32) / 255.0)]
    export(_EndToEnd(det), frames[0], out / "yolo11n_e2e_trained.onnx", 17, (["images"], ["output0"]))
    return {"file": "yolo11n_e2e_trained.onnx", "input": "images", "shape": [1, 3, size, size],
            "exporter": f"ultralytics yolo11n.yaml trained {epochs} epochs on drawn shapes (3 classes) on the CPU, "
                        "+ TopK(300) end-to-end head, torch.onnx opset 17",
            "frames": "float NCHW in [0, 1]; held out: its 40 validation pictures (drawn shapes it was not trained "
                      "on)", "held_out": val}


# ---- a float16 CNN -------------------------------------------------------------------------------------------

def mobilenet_v3_fp16(size: int, out: Path) -> dict:
    import torchvision
    from onnxconverter_common import float16
    torch.manual_seed(SEED)
    model = torchvision.models.mobilenet_v3_small(weights=None)
    frames = [torch.from_numpy(f) for f in frames_nchw(6, size, size, 6)]
    trained_like(model, frames, gammas=(0.3, 1.0))
    wide = out / "mobilenet_v3_fp32.onnx"
    export(model, frames[0], wide, 17, (["input"], ["logits"]))
    half = float16.convert_float_to_float16(onnx.load(str(wide)), keep_io_types=False)
    onnx.save(half, str(out / "mobilenet_v3_fp16.onnx"))
    wide.unlink()
    return {"file": "mobilenet_v3_fp16.onnx", "input": "input", "shape": [1, 3, size, size], "dtype": "float16",
            "exporter": "torchvision mobilenet_v3_small via torch.onnx opset 17, onnxconverter-common "
                        "convert_float_to_float16 (keep_io_types=False)",
            "frames": "float16 NCHW in [0, 1]"}


MODELS = {
    "face_onet_keras": face_onet_keras,
    "text_det_gelu": lambda out: text_det_gelu(320, out),
    "yolo11n_e2e": lambda out: yolo11n_e2e(320, out),
    "yolo11n_e2e_trained": lambda out: yolo11n_e2e_trained(160, out),
    "mobilenet_v3_fp16": lambda out: mobilenet_v3_fp16(224, out),
}


def main() -> None:
    export_all(MODELS, __doc__.splitlines()[0])


if __name__ == "__main__":
    main()
