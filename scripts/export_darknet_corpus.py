"""Export YOLOv3, YOLOv3-tiny and YOLOv4 as Darknet users do: a Darknet .cfg and .weights file, converted to ONNX by the
darknet2any converter (pytorch-YOLOv4's darknet2onnx: Upsample as view/expand/view, Darknet's size-2 stride-1
max pool as an edge Pad and a MaxPool, the YOLO layers decoded in the graph to boxes and confidences).

The .cfg files are the standard Darknet ones (YOLOv4's with its structure: CSPDarknet53 with Mish, SPP, PANet),
written out here; the .weights file is Darknet's format with seeded
weights given trained statistics (BatchNorm statistics measured on image-like frames, spread gammas and betas).

    python scripts/export_darknet_corpus.py OUT_DIR [--only NAME ...]     (bash scripts/export_darknet_corpus.sh)
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import torch
from corpus_frames import export_all, frames_nchw
from export_corpus import trained_like

SIZE = 416
ANCHORS = "10,13, 16,30, 33,23, 30,61, 62,45, 59,119, 116,90, 156,198, 373,326"
TINY_ANCHORS = "10,14, 23,27, 37,58, 81,82, 135,169, 344,319"


class Cfg:
    """Darknet cfg sections, with the index of each layer (routes refer to absolute indices)."""

    def __init__(self, classes: int = 80):
        self.classes = classes
        self.sections = [f"[net]\nbatch=1\nsubdivisions=1\nwidth={SIZE}\nheight={SIZE}\nchannels=3\n"]

    @property
    def last(self) -> int:
        return len(self.sections) - 2

    def add(self, kind: str, **keys) -> int:
        self.sections.append(f"[{kind}]\n" + "".join(f"{k}={v}\n" for k, v in keys.items()))
        return self.last

    def conv(self, filters: int, size: int, stride: int = 1, bn: bool = True, act: str = "leaky") -> int:
        keys = {"batch_normalize": 1} if bn else {}
        return self.add("convolutional", **keys, filters=filters, size=size, stride=stride, pad=1, activation=act)

    def yolo(self, mask: str, anchors: str, num: int) -> int:
        self.conv(3 * (self.classes + 5), 1, bn=False, act="linear")
        return self.add("yolo", mask=mask, anchors=anchors, classes=self.classes, num=num, jitter=0.3,
                        ignore_thresh=0.7, truth_thresh=1, random=1, scale_x_y=1.0)   # the converter needs it

    def text(self) -> str:
        return "\n".join(self.sections)


def yolov3_cfg() -> str:
    c = Cfg()
    c.conv(32, 3)
    taps = {}
    for filters, blocks in ((64, 1), (128, 2), (256, 8), (512, 8), (1024, 4)):
        c.conv(filters, 3, 2)
        for _ in range(blocks):
            c.conv(filters // 2, 1)
            c.conv(filters, 3)
            c.add("shortcut", **{"from": -3}, activation="linear")
        taps[filters] = c.last
    for width, mask, tap in ((512, "6,7,8", None), (256, "3,4,5", taps[512]), (128, "0,1,2", taps[256])):
        if tap is not None:
            c.add("route", layers=-4)
            c.conv(width, 1)
            c.add("upsample", stride=2)
            c.add("route", layers=f"-1, {tap}")
        for _ in range(3):
            c.conv(width, 1)
            c.conv(2 * width, 3)
        c.yolo(mask, ANCHORS, 9)
    return c.text()


def yolov3_tiny_cfg() -> str:
    c = Cfg()
    tap = None
    for i, filters in enumerate((16, 32, 64, 128, 256, 512)):
        c.conv(filters, 3)
        if filters == 256:
            tap = c.last
        c.add("maxpool", size=2, stride=1 if i == 5 else 2)
    c.conv(1024, 3)
    c.conv(256, 1)
    c.conv(512, 3)
    c.yolo("3,4,5", TINY_ANCHORS, 6)
    c.add("route", layers=-4)
    c.conv(128, 1)
    c.add("upsample", stride=2)
    c.add("route", layers=f"-1, {tap}")
    c.conv(256, 3)
    c.yolo("0,1,2", TINY_ANCHORS, 6)
    return c.text()


def _alternating(c: Cfg, width: int, count: int) -> int:
    """`count` leaky convs, 1x1 to `width` and 3x3 to twice that in turn (YOLOv4's neck blocks); the last index."""
    for i in range(count):
        last = c.conv(width, 1) if i % 2 == 0 else c.conv(2 * width, 3)
    return last


def yolov4_cfg() -> str:
    """CSPDarknet53 with Mish, SPP, PANet with leaky, three YOLO heads: the structure of Darknet's yolov4.cfg."""
    c = Cfg()
    c.conv(32, 3, act="mish")
    taps = {}
    for filters, blocks in ((64, 1), (128, 2), (256, 8), (512, 8), (1024, 4)):
        c.conv(filters, 3, 2, act="mish")
        half = filters if filters == 64 else filters // 2
        part = c.conv(half, 1, act="mish")
        c.add("route", layers=-2)
        c.conv(half, 1, act="mish")
        for _ in range(blocks):
            c.conv(filters // 2, 1, act="mish")
            c.conv(half, 3, act="mish")
            c.add("shortcut", **{"from": -3}, activation="linear")
        c.conv(half, 1, act="mish")
        c.add("route", layers=f"-1, {part}")
        taps[filters] = c.conv(filters, 1, act="mish")
    _alternating(c, 512, 3)                      # into the SPP block
    for size, back in ((5, -2), (9, -4)):
        c.add("maxpool", size=size, stride=1)
        c.add("route", layers=back)
    c.add("maxpool", size=13, stride=1)
    c.add("route", layers="-1, -3, -5, -6")
    outs = [_alternating(c, 512, 3)]            # the SPP block's output, then the top-down path's
    for width, tap in ((256, taps[512]), (128, taps[256])):
        c.conv(width, 1)
        c.add("upsample", stride=2)
        c.add("route", layers=tap)
        c.conv(width, 1)
        c.add("route", layers="-1, -3")
        outs.append(_alternating(c, width, 5))
    c.conv(256, 3)
    c.yolo("0,1,2", ANCHORS, 9)
    last = outs[2]
    for width, mask, join in ((256, "3,4,5", outs[1]), (512, "6,7,8", outs[0])):    # bottom-up, a head each
        c.add("route", layers=last)
        c.conv(width, 3, 2)
        c.add("route", layers=f"-1, {join}")
        last = _alternating(c, width, 5)
        c.conv(2 * width, 3)
        c.yolo(mask, ANCHORS, 9)
    return c.text()


def trained_heads(model) -> None:
    """The YOLO heads (the convs without BatchNorm) as training leaves them: small weights, box offsets near 0 and
    objectness and class logits at the prior of a rare object (-4.6: p = 0.01). Untrained, their logits reach
    tens, and the decoder's exp() turns box sizes into 1e7."""
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for block, layer in zip(model.blocks[1:], model.models):
            if block["type"] != "convolutional" or int(block.get("batch_normalize", 0)):
                continue
            conv = layer[0]
            conv.weight.mul_(0.05)
            per_anchor = conv.bias.view(3, -1)              # 3 anchors x (x, y, w, h, objectness, classes)
            per_anchor[:, :4] = torch.randn(per_anchor[:, :4].shape, generator=gen) * 0.2
            per_anchor[:, 4:] = -4.6 + torch.randn(per_anchor[:, 4:].shape, generator=gen) * 0.5


def write_weights(model, path: Path) -> None:
    """Darknet's .weights format: a header of five int32 (version 0.2.5, then a 64-bit count of images seen),
    then per convolutional layer in cfg order, float32: BatchNorm beta, gamma, mean, variance and the conv
    weights, or (no BatchNorm) the conv bias and weights."""
    with open(path, "wb") as f:
        np.array([0, 2, 5, 0, 0], np.int32).tofile(f)
        for block, layer in zip(model.blocks[1:], model.models):
            if block["type"] != "convolutional":
                continue
            conv = layer[0]
            if int(block.get("batch_normalize", 0)):
                bn = layer[1]
                tensors = [bn.bias, bn.weight, bn.running_mean, bn.running_var, conv.weight]
            else:
                tensors = [conv.bias, conv.weight]
            for t in tensors:
                t.detach().cpu().numpy().astype(np.float32).ravel().tofile(f)


def export(name: str, cfg_text: str, out: Path, opset: int, gammas: tuple[float, float] = (0.3, 1.6)) -> dict:
    from darknet2any.tool.darknet2onnx import transform_to_onnx
    from darknet2any.tool.darknet2pytorch import Darknet
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / f"{name}.cfg"
        cfg.write_text(cfg_text)
        model = Darknet(str(cfg))
        trained_like(model, [torch.from_numpy(f) for f in frames_nchw(6, SIZE, SIZE, 5)], gammas=gammas)
        trained_heads(model)
        weights = Path(tmp) / f"{name}.weights"
        write_weights(model, weights)
        transform_to_onnx(str(cfg), str(weights), 1, str(out / f"{name}.onnx"), False, opset)
    import darknet2any
    return {"file": f"{name}.onnx", "input": "input", "shape": [1, 3, SIZE, SIZE],
            "exporter": f"Darknet cfg + weights via darknet2any {darknet2any.__version__} darknet2onnx opset {opset}",
            "frames": "float NCHW in [0, 1]"}


MODELS = {
    "yolov3_darknet": lambda out: export("yolov3_darknet", yolov3_cfg(), out, 11),
    "yolov3-tiny_darknet": lambda out: export("yolov3-tiny_darknet", yolov3_tiny_cfg(), out, 15),
    # 110 convs deep with Mish: random gammas near 1 make it chaotic (boxes overflow exp()); trained ones are small
    "yolov4_darknet": lambda out: export("yolov4_darknet", yolov4_cfg(), out, 11, gammas=(0.2, 0.6)),
}


def main() -> None:
    export_all(MODELS, __doc__.splitlines()[0])


if __name__ == "__main__":
    main()
