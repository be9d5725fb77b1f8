#!/usr/bin/env bash
# Makes an environment with torch and the darknet2any converter (CPU wheels from PyPI) in .darknet-venv, and
# exports YOLOv3 and YOLOv3-tiny from Darknet .cfg and .weights files into build/corpus beside the other exports.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${DARKNET_VENV:-.darknet-venv}
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install -q "torch==2.14.1" "darknet2any==0.7.6" onnx pillow
"$VENV/bin/python" scripts/export_darknet_corpus.py "${1:-build/corpus}"
