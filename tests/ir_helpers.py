"""Shared test helpers: import a model into the IR, run IR graphs through onnxruntime."""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

from partitioner.frontend.importer import import_model
from partitioner.ir.graph import Graph
from partitioner.ir.to_onnx import to_model


def ir_of(model: onnx.ModelProto) -> Graph:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "m.onnx"
        onnx.save(model, str(path))
        return import_model(path).graph


def run_model(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def run_graph(graph: Graph, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    model = to_model(graph, list(graph.nodes), graph.inputs, graph.outputs, "g", graph.opset_imports)
    onnx.checker.check_model(model)
    return run_model(model, feeds)


def random_feeds(graph: Graph, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {graph.tensors[t].onnx_name: rng.standard_normal(graph.tensors[t].shape).astype(np.float32)
            for t in graph.inputs}
