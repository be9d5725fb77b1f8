"""Small networks for fast tests: each builds in well under a second and still has the shapes that matter
(a residual block, two branches that rejoin, a classifier with dense layers)."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto

from models.builder import GraphBuilder


def resblock(size: int = 16, batch: int = 1, seed: int = 0) -> tuple[onnx.ModelProto, GraphBuilder]:
    b = GraphBuilder("resblock", seed)
    x = b.input("x", TensorProto.FLOAT, (batch, 8, size, size))
    x = b.op("Mul", [x, b.const("input_scale", np.float32(0.5))], "normalise")
    b.shapes[x] = (batch, 8, size, size)
    x = b.conv_bn_act(x, 16, 3, act="relu")
    y = b.conv_bn_act(x, 16, 3, act="relu")
    y = b.batchnorm(b.conv(y, 16, 3), gamma_scale=0.5)
    x = b.activation(b.add(y, x), "relu")
    x = b.conv_bn_act(x, 32, 3, stride=2, act="silu")
    pooled = b.op("GlobalAveragePool", [x], "gap")
    return b.build([x, pooled], "one residual block"), b


def two_branch(size: int = 16, batch: int = 1, seed: int = 0) -> tuple[onnx.ModelProto, GraphBuilder]:
    b = GraphBuilder("two_branch", seed)
    x = b.input("x", TensorProto.FLOAT, (batch, 3, size, size))
    stem = b.conv_bn_act(x, 16, 3, act="leaky")
    a = b.conv_bn_act(b.conv_bn_act(stem, 16, 3, act="relu"), 16, 3, act="hardswish")
    c = b.conv_bn_act(b.conv_bn_act(stem, 8, 1, act="relu6"), 16, 3, act="silu")
    x = b.conv_bn_act(b.concat([a, c]), 16, 1, act="sigmoid" if False else "leaky")
    head_a = b.conv(x, 8, 1, bias=True, hint="head_a")
    head_b = b.maxpool(b.conv_bn_act(x, 8, 3, act="relu"), 2, 2)
    return b.build([head_a, head_b], "two branches that rejoin, then two heads"), b


def classifier(size: int = 16, batch: int = 1, seed: int = 0, classes: int = 10
               ) -> tuple[onnx.ModelProto, GraphBuilder]:
    b = GraphBuilder("classifier", seed)
    x = b.input("x", TensorProto.FLOAT, (batch, 3, size, size))
    x = b.maxpool(b.conv_bn_act(x, 16, 3, act="relu"), 2, 2)
    x = b.maxpool(b.conv_bn_act(x, 32, 3, act="relu"), 2, 2)
    x = b.op("Flatten", [x], "flatten", axis=1)
    b.shapes[x] = (batch, 32 * (size // 4) ** 2)
    x = b.activation(b.gemm(x, 64), "relu")
    b.shapes[x] = (batch, 64)
    logits = b.gemm(x, classes, hint="logits")
    probs = b.op("Softmax", [logits], "probs", axis=-1)
    return b.build([probs], "conv-pool-dense classifier"), b
