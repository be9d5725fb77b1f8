#!/usr/bin/env bash
# Installs everything (Debian packages, a virtualenv in .venv with the project), builds the default model
# (YOLOv3-tiny at 416x416), partitions and quantises it for the ZCU104 (checking the float partition against
# onnxruntime and reporting int8 accuracy), then runs the build on the reference backend.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends graphviz python3-venv python3-dev build-essential tcl >/dev/null
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade "pip>=23" "setuptools>=68,<81" wheel
.venv/bin/python -m pip install -q -e ".[test,serve]"
mkdir -p build/models
.venv/bin/python -m models build yolov3-tiny -o build/models/yolov3-tiny.onnx
.venv/bin/partition build/models/yolov3-tiny.onnx --target fpga --board zcu104 -o build/yolov3-tiny --verify
.venv/bin/fpga-run run build/yolov3-tiny --backend reference --frames 2
