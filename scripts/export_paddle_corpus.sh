#!/usr/bin/env bash
# Makes an environment with PaddlePaddle and paddle2onnx (CPU wheels from PyPI) in .paddle-venv, and exports
# PicoDet (LCNet and ESNet backbones) into build/corpus beside the torch exports (scripts/export_corpus.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${PADDLE_VENV:-.paddle-venv}
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
# paddle2onnx 2.1 reads Paddle 3's PIR programs; it rejects float64 attribute arrays, so the models avoid them
"$VENV/bin/python" -m pip install -q "paddlepaddle==3.3.1" "paddle2onnx==2.1.0" packaging pillow "numpy<2.5"
"$VENV/bin/python" scripts/export_paddle_corpus.py "${1:-build/corpus}"
