"""Property tests: random DAGs of supported and unsupported ops keep the partitioner's invariants."""
from __future__ import annotations

import tempfile
from pathlib import Path

import networkx as nx
import numpy as np
import onnx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import numpy_helper

from fpga_runtime.boards import BOARDS
from fpga_runtime.plan import read_plan
from graphs import Net
from partitioner.build import PartitionConfig, run_partition

OPS = ["conv", "conv_relu", "conv_bn_leaky", "conv_silu", "add", "maxpool", "concat_conv", "upsample_conv",
       "abs", "tanh", "sigmoid", "relu"]


@st.composite
def random_nets(draw):
    net = Net(channels=4, size=6, seed=draw(st.integers(0, 10_000)), inputs=draw(st.integers(1, 2)))
    tensors = list(net.inputs)
    count = draw(st.integers(1, 14))

    def pick() -> str:
        return tensors[draw(st.integers(0, len(tensors) - 1))]

    for i in range(count):
        op, name = draw(st.sampled_from(OPS)), f"n{i}"
        if op == "conv":
            out = net.conv(pick(), name)
        elif op == "conv_relu":
            out = net.node("Relu", [net.conv(pick(), name)], f"{name}_relu")
        elif op == "conv_bn_leaky":
            out = net.node("LeakyRelu", [net.bn(net.conv(pick(), name), f"{name}_bn")], f"{name}_leaky", alpha=0.1)
        elif op == "conv_silu":
            c = net.conv(pick(), name)
            out = net.node("Mul", [c, net.node("Sigmoid", [c], f"{name}_sig")], f"{name}_silu")
        elif op == "add":
            out = net.node("Add", [pick(), pick()], name)
        elif op == "maxpool":
            out = net.node("MaxPool", [pick()], name, kernel_shape=[3, 3], pads=[1, 1, 1, 1])
        elif op == "concat_conv":
            cat = net.node("Concat", [pick(), pick()], f"{name}_cat", axis=1)
            out = net.conv(cat, name, k=1, cin=8)
        elif op == "upsample_conv":
            net.inits.append(numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), f"{name}_scales"))
            up = net.node("Resize", [pick(), "", f"{name}_scales"], f"{name}_up", mode="nearest",
                          coordinate_transformation_mode="asymmetric", nearest_mode="floor")
            out = net.node("MaxPool", [net.conv(up, name)], f"{name}_down", kernel_shape=[2, 2], strides=[2, 2])
        else:
            out = net.node({"abs": "Abs", "tanh": "Tanh", "sigmoid": "Sigmoid", "relu": "Relu"}[op], [pick()], name)
        tensors.append(out)
    read = {i for n in net.nodes for i in n.input}
    outputs = [t for t in tensors[len(net.inputs):] if t not in read] or [tensors[-1]]
    return net.model(outputs)


def _check_invariants(model: onnx.ModelProto, out: Path, offload_everything: bool, board: str) -> None:
    path = out / "m.onnx"
    onnx.save(model, str(path))
    result = run_partition(PartitionConfig(model=path, out_dir=out / "build", board=board, verify=True,
                                           picture=False, offload_everything=offload_everything))
    plan = read_plan(out / "build")          # checks the order: every input produced before it is read

    placed = [n for s in plan.subgraphs for n in s.nodes] + plan.folded
    assert sorted(placed) == sorted(n.name for n in model.graph.node), "every node placed exactly once"

    producer = {t.name: s.name for s in plan.subgraphs for t in s.outputs}
    g = nx.DiGraph()
    g.add_nodes_from(s.name for s in plan.subgraphs)
    g.add_edges_from((producer[t.name], s.name) for s in plan.subgraphs for t in s.inputs if t.name in producer)
    assert nx.is_directed_acyclic_graph(g), "the graph of subgraphs is acyclic"
    assert all(set(s.depends_on) == set(g.predecessors(s.name)) for s in plan.subgraphs)

    for s in plan.subgraphs:
        for other in s.concurrent_with:
            assert not nx.has_path(g, s.name, other) and not nx.has_path(g, other, s.name)
        onnx.checker.check_model(str(plan.onnx_path(s)))

    ir_nodes = [n for s in result.partition.subgraphs for n in s.nodes]
    assert len(ir_nodes) == len(set(ir_nodes)) == len(result.partition.graph.nodes)
    assert result.verified, result.checks


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_nets())
def test_invariants_offloading_every_supported_region(model):
    with tempfile.TemporaryDirectory() as d:
        _check_invariants(model, Path(d), True, "zcu104")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_nets(), st.sampled_from(sorted(BOARDS)))
def test_invariants_with_the_cost_model(model, board):
    with tempfile.TemporaryDirectory() as d:
        _check_invariants(model, Path(d), False, board)
