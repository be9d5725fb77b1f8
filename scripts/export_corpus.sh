#!/usr/bin/env bash
# Makes an environment with torch, torchvision, timm and ultralytics (CPU; pip takes torch from the local wheel cache
# where one is configured) in .exports-venv, and exports the corpus of real detectors into build/corpus.
# The corpus is not in git (hundreds of MB); the `exports` test tier and benchmarks/partition_quality.py use it.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${EXPORTS_VENV:-.exports-venv}
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install -q "torch==2.14.1" "torchvision==0.29.1" "timm==1.0.31"
"$VENV/bin/python" -m pip install -q ultralytics "onnx>=1.16,<1.23" "numpy<2" onnxruntime pillow onnxconverter-common
"$VENV/bin/python" scripts/export_corpus.py "${1:-build/corpus}"
"$VENV/bin/python" scripts/export_breadth.py "${1:-build/corpus}"
"$VENV/bin/python" scripts/export_families.py "${1:-build/corpus}"
