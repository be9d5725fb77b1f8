"""Export a corpus of real detector ONNX files, as users bring them, to test the partitioner on.

Runs in an environment with torch, torchvision and ultralytics (CPU wheels from PyPI; `bash
scripts/export_corpus.sh` makes one in .exports-venv and runs this). Nothing is downloaded beyond the wheels:
every model is built from its architecture definition with seeded weights, then given the statistics of a
trained model (BatchNorm statistics measured on image-like frames, spread gammas and betas, the large negative
class-prior biases of trained detection heads, small weight ranges), so that int8 edge cases show up.

    python scripts/export_corpus.py OUT_DIR [--only NAME ...]

OUT_DIR gets `<name>.onnx` per model, `frames/<name>/calibrate/*.npy` (8 calibration frames in the model's own
input format), `frames/<name>/eval/*.npy` (2 held-out frames, or a trained model's validation pictures) and
`corpus.json` (file, input name, shape, how it was exported).
"""
from __future__ import annotations

import math
from pathlib import Path

import torch
from torch import nn

SEED = 0


from corpus_frames import export_all, frames_nchw  # noqa: E402 (scripts/ is on the path when run)

# ---- trained-like statistics ---------------------------------------------------------------------------------

def trained_like(model: nn.Module, example: list[torch.Tensor], head_bias: dict[str, float] | None = None,
                 gammas: tuple[float, float] = (0.3, 1.6)) -> None:
    """BatchNorm running statistics measured on image-like frames, gammas and betas spread as training leaves
    them, and the named head biases set to their class prior. Deep random networks with gammas near 1 amplify
    any input noise (chaotic); trained ones do not, so the deep ones get smaller gammas."""
    gen = torch.Generator().manual_seed(SEED)
    bns = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None                       # cumulative average over the frames
    model.train()
    with torch.no_grad():
        model(torch.cat(example))                # one batch: 1x1 maps need more than one value per channel
    model.eval()
    with torch.no_grad():
        for bn in bns:
            bn.weight.copy_(torch.empty_like(bn.weight).uniform_(*gammas, generator=gen))
            bn.bias.copy_(torch.randn(bn.bias.shape, generator=gen) * 0.4)
        for name, prior in (head_bias or {}).items():
            layer = dict(model.named_modules())[name]
            layer.bias.copy_(torch.full_like(layer.bias, prior) + torch.randn(layer.bias.shape, generator=gen) * 0.5)


def export(model: nn.Module, x: torch.Tensor, path: Path, opset: int, names: tuple[list[str], list[str]]) -> None:
    model.eval()
    torch.onnx.export(model, (x,), str(path), opset_version=opset, input_names=names[0], output_names=names[1],
                      do_constant_folding=True, dynamo=False)


# ---- the architectures ---------------------------------------------------------------------------------------

def ultralytics_model(cfg: str, size: int, out: Path, opset: int) -> dict:
    from ultralytics.nn.tasks import DetectionModel
    torch.manual_seed(SEED)
    model = DetectionModel(cfg, nc=80, verbose=False)
    frames = [torch.from_numpy(f) for f in frames_nchw(6, size, size, 1)]
    trained_like(model, frames)
    model.eval()
    for m in model.modules():                    # the export form ultralytics uses: one output tensor
        if m.__class__.__name__ == "Detect":
            m.export, m.format = True, "onnx"
    stem = Path(cfg).stem
    export(model, frames[0], out / f"{stem}.onnx", opset, (["images"], ["output0"]))
    return {
        "file": f"{stem}.onnx",
        "input": "images",
        "shape": [1, 3, size, size],
        "exporter": f"ultralytics {cfg} via torch.onnx (TorchScript) opset {opset}",
        "frames": "float NCHW in [0, 1]",
    }


class _Normalised(nn.Module):
    """torchvision detectors normalise inside; the export takes a [0, 1] float image of a fixed size."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, x):
        det = self.model(list(x))[0]
        return det["boxes"], det["scores"], det["labels"]


def torchvision_ssd(name: str, size: int, out: Path, opset: int) -> dict:
    import torchvision
    torch.manual_seed(SEED)
    build = getattr(torchvision.models.detection, name)
    model = build(weights=None, weights_backbone=None, num_classes=91)
    model.transform.min_size, model.transform.max_size = (size,), size
    frames = [torch.from_numpy(f) for f in frames_nchw(6, size, size, 2)]
    trained_like(model.backbone, [model.transform(list(f))[0].tensors for f in frames])
    prior = -math.log((1 - 0.01) / 0.01)
    with torch.no_grad():
        for mod in model.head.classification_head.modules():
            if isinstance(mod, nn.Conv2d) and mod.out_channels % 91 == 0:
                mod.bias.copy_(torch.full_like(mod.bias, prior))
    model.eval()
    wrapped = _Normalised(model)
    export(wrapped, frames[0], out / f"{name}.onnx", opset, (["images"], ["boxes", "scores", "labels"]))
    return {
        "file": f"{name}.onnx",
        "input": "images",
        "shape": [1, 3, size, size],
        "exporter": f"torchvision {name} via torch.onnx (TorchScript) opset {opset}",
        "frames": "float NCHW in [0, 1]",
    }


def db_head(cin: int, mid: int) -> nn.Sequential:
    """DBNet's head: 3x3 conv, BN, ReLU, two 2x2 stride-2 transposed convs, a sigmoid probability map."""
    return nn.Sequential(nn.Conv2d(cin, mid, 3, padding=1, bias=False), nn.BatchNorm2d(mid), nn.ReLU(),
                         nn.ConvTranspose2d(mid, mid, 2, 2), nn.BatchNorm2d(mid), nn.ReLU(),
                         nn.ConvTranspose2d(mid, 1, 2, 2), nn.Sigmoid())


def top_down(lat: list[torch.Tensor]) -> list[torch.Tensor]:
    """An FPN's top-down path: each level plus the next coarser one upsampled x2 (nearest)."""
    lat = list(lat)
    for i in range(len(lat) - 1, 0, -1):
        lat[i - 1] = lat[i - 1] + nn.functional.interpolate(lat[i], scale_factor=2, mode="nearest")
    return lat


class _DBNet(nn.Module):
    """A DBNet text detector as PaddleOCR builds it: MobileNetV3 backbone (SE, HardSwish), FPN, a head with two
    2x2 stride-2 transposed convs and a sigmoid probability map."""

    def __init__(self):
        super().__init__()
        import torchvision
        self.backbone = torchvision.models.mobilenet_v3_large(weights=None).features
        taps, channels = [3, 6, 12, 16], [24, 40, 112, 960]
        self.taps = taps
        self.lateral = nn.ModuleList(nn.Conv2d(c, 96, 1, bias=False) for c in channels)
        self.smooth = nn.ModuleList(nn.Conv2d(96, 24, 3, padding=1, bias=False) for _ in channels)
        self.head = db_head(96, 24)

    def forward(self, x):
        feats = []
        for i, layer in enumerate(self.backbone):
            x = layer(x)
            if i in self.taps:
                feats.append(x)
        lat = top_down([conv(f) for conv, f in zip(self.lateral, feats)])
        outs = [nn.functional.interpolate(s(p), scale_factor=2 ** i, mode="nearest")
                for i, (s, p) in enumerate(zip(self.smooth, lat))]
        return self.head(torch.cat(outs, 1))


def text_map_like(model: nn.Module, frames: list[torch.Tensor]) -> None:
    """trained_like for a text detector with a db_head. Gammas up to 1.6 made DBNet chaotic (float cosine 0.94
    under 1 % input noise), which no int8 scheme can follow; with (0.3, 1.0) it keeps 1.000. A trained map is mostly
    background with confident text: a background prior on the last bias and logits spread wide (8x the init's)."""
    trained_like(model, frames, head_bias={"head.6": -2.0}, gammas=(0.3, 1.0))
    with torch.no_grad():
        model.head[6].weight.mul_(8.0)


def dbnet(size: int, out: Path, opset: int) -> dict:
    torch.manual_seed(SEED)
    model = _DBNet()
    frames = [torch.from_numpy(f) for f in frames_nchw(6, size, size, 3)]
    text_map_like(model, frames)
    export(model, frames[0], out / "dbnet_mobilenetv3.onnx", opset, (["x"], ["maps"]))
    return {
        "file": "dbnet_mobilenetv3.onnx",
        "input": "x",
        "shape": [1, 3, size, size],
        "exporter": f"DBNet (MobileNetV3, FPN) via torch.onnx (TorchScript) opset {opset}",
        "frames": "float NCHW in [0, 1]",
    }


MODELS = {
    "yolov8n": lambda out: ultralytics_model("yolov8n.yaml", 320, out, 17),
    "yolov5nu": lambda out: ultralytics_model("yolov5nu.yaml", 320, out, 12),
    "yolov3-tinyu": lambda out: ultralytics_model("yolov3-tinyu.yaml", 320, out, 13),
    "ssd300_vgg16": lambda out: torchvision_ssd("ssd300_vgg16", 300, out, 17),
    "ssdlite320_mobilenet_v3_large": lambda out: torchvision_ssd("ssdlite320_mobilenet_v3_large", 320, out, 17),
    "dbnet_mobilenetv3": lambda out: dbnet(320, out, 11),
}


def main() -> None:
    export_all(MODELS, __doc__.splitlines()[0])


if __name__ == "__main__":
    main()
