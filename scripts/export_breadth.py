"""Export torchvision models whose structure the detector corpus lacks, to keep the partitioner honest on them:
grouped convs (ResNeXt, RegNetY's prime group count), pre-activation BatchNorm and average pools (DenseNet,
Inception), two-stage detectors whose outputs come out of If and Loop nodes (Faster and Mask R-CNN), and timm
networks: squeeze-and-excitation as ReduceMean, activations after adds and gates (HRNet, ReXNet), learnable affines
(HGNetV2), slices of concats (DPN), mixed-kernel depthwise convs between a split and a concat (MixNet).

    python scripts/export_breadth.py OUT_DIR

Runs in the exports environment (`scripts/export_corpus.sh` calls it). Seeded random weights: these models
test structure (every node placed, the float partition equal to the original, the FPGA work in few subgraphs),
not int8 accuracy. OUT_DIR/breadth/ gets `<name>.onnx` and `breadth.json` (file, opset, the most subgraphs the
partition may have).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import timm
import torch
import torchvision
from torchvision.models import detection

SEED = 0


class _Tensor(torch.nn.Module):
    """Segmentation and classification models as one tensor out."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, x):
        y = self.model(x)
        return y["out"] if isinstance(y, dict) else y


M = torchvision.models
# name: (constructor, input size, opset, most subgraphs: FPGA body, the Flatten on the CPU, the classifier)
CLASSIFIERS = {
    "resnext50_32x4d": (lambda: M.resnext50_32x4d(), 224, 13, 3),
    "regnet_y_400mf": (lambda: M.regnet_y_400mf(), 224, 11, 3),
    "densenet121": (lambda: M.densenet121(), 224, 13, 3),
    "inception_v3": (lambda: M.inception_v3(aux_logits=False, init_weights=True), 299, 13, 3),
}
# timm 1.0.31 (name: input size, opset, most subgraphs): MixNet keeps its 9x9 kernels and its splits of
# depthwise outputs on the CPU (a bound that says it partitions at all: it stopped with exit 2)
TIMM = {"rexnet_100": (224, 13, 3), "hrnet_w18_small": (224, 11, 3), "hgnetv2_b0": (224, 13, 5),
        "mobileone_s0": (224, 17, 3), "ghostnet_100": (224, 13, 3), "tinynet_e": (106, 17, 3),
        "ese_vovnet19b_dw": (224, 11, 3), "dpn68": (224, 13, 3), "mixnet_s": (224, 17, 80)}
CLASSIFIERS.update({name: (lambda name=name: timm.create_model(name, pretrained=False), size, opset, most)
                    for name, (size, opset, most) in TIMM.items()})
# their RoI heads and box decoding stay on the CPU: a bound, not an aim. With seeded weights Mask R-CNN's masks
# are chaotic: boxes that move by a fifth of a pixel between onnxruntime's own runs (optimisations off and on)
# move the masks by 0.14 in the float partition too, so its float check is not asserted (`verify: false`)
DETECTORS = {
    "fasterrcnn_mobilenet_v3_320": (lambda: detection.fasterrcnn_mobilenet_v3_large_320_fpn(
        weights=None, weights_backbone=None), 320, 11, 10),
    "maskrcnn_resnet50": (lambda: detection.maskrcnn_resnet50_fpn(
        weights=None, weights_backbone=None, min_size=256, max_size=256), 256, 11, 14),
}


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "build/corpus") / "breadth"
    out.mkdir(parents=True, exist_ok=True)
    record = {}
    for name, (make, size, opset, most) in {**CLASSIFIERS, **DETECTORS}.items():
        torch.manual_seed(SEED)
        model = make().eval()
        if name in CLASSIFIERS:
            args = (torch.randn(1, 3, size, size),)
            model = _Tensor(model)
        else:
            args = ([torch.rand(3, size, size)],)
        path = out / f"{name}.onnx"
        torch.onnx.export(model, args, str(path), opset_version=opset, input_names=["images"], dynamo=False)
        record[name] = {"file": path.name, "opset": opset, "max_subgraphs": most, "verify": name != "maskrcnn_resnet50",
                        "exporter": f"torch {torch.__version__} torchvision {torchvision.__version__}"
                                    + (f" timm {timm.__version__}" if name in TIMM else "")}
        print(f"{name}: {path}", flush=True)
    (out / "breadth.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
