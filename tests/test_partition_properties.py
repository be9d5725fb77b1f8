"""Property tests: random DAGs of supported and unsupported ops keep the partitioner's invariants."""
from __future__ import annotations

import tempfile
from pathlib import Path

import networkx as nx
import numpy as np
import onnx
import pytest
from graphs import Net, channel_shuffle
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from onnx import helper, numpy_helper

from fpga_runtime.abi import EngineConfig
from fpga_runtime.boards import BOARDS
from fpga_runtime.plan import read_plan
from partitioner.build import PartitionConfig, run_partition

OPS = ["conv", "conv_relu", "conv_bn_leaky", "conv_silu", "add", "maxpool", "concat_conv", "upsample_conv",
       "abs", "tanh", "sigmoid", "relu", "concat3_conv", "split_concat", "se", "pad_pool", "pad_conv", "slice_conv",
       "convT_pool", "shuffle", "gather_channels", "darknet_upsample", "zero_pad_pool",
       "grouped"]


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
        elif op == "concat3_conv":          # one tensor may land in several concat buffers, inputs included
            cat = net.node("Concat", [pick(), pick(), pick()], f"{name}_cat", axis=1)
            out = net.conv(cat, name, k=1, cin=12)
        elif op == "split_concat":          # CSP / C2f: split channels, work on a half, concat back
            halves = [f"{name}_a", f"{name}_b"]
            net.nodes.append(helper.make_node("Split", [pick(), net.const(f"{name}_sizes", np.array([2, 2]))],
                                              halves, name=f"{name}_split", axis=1))
            left = net.conv(halves[0], f"{name}_c", cin=2, cout=2)
            out = net.node("Concat", [left, halves[1]], name, axis=1)
        elif op == "se":                    # squeeze-and-excitation
            x = pick()
            squeeze = net.node("GlobalAveragePool", [x], f"{name}_gap")
            hidden = net.node("Relu", [net.conv(squeeze, f"{name}_fc1", k=1)], f"{name}_fc1_relu")
            gate = net.node("HardSigmoid", [net.conv(hidden, f"{name}_fc2", k=1)], f"{name}_gate")
            out = net.node("Mul", [x, gate], name)
        elif op == "pad_pool":              # SPP behind an explicit Pad
            padded = net.node("Pad", [pick(), net.const(f"{name}_pads", np.array([0, 0, 2, 2, 0, 0, 2, 2]))],
                              f"{name}_pad")
            out = net.node("MaxPool", [padded], name, kernel_shape=[5, 5])
        elif op == "pad_conv":
            padded = net.node("Pad", [pick(), net.const(f"{name}_pads", np.array([0, 0, 1, 1, 0, 0, 1, 1]))],
                              f"{name}_pad")
            out = net.conv_valid(padded, name)
        elif op == "slice_conv":  # a channel slice (route layer), then a conv
            part = net.node(
                "Slice",
                [
                    pick(),
                    net.const(f"{name}_s", np.array([0])),
                    net.const(f"{name}_e", np.array([2])),
                    net.const(f"{name}_ax", np.array([1])),
                ],
                f"{name}_slice",
            )
            out = net.conv(part, name, cin=2)
        elif op == "convT_pool":            # FPN / segmentation upsampling by a transposed conv, pooled back
            k = draw(st.sampled_from([2, 2, 4]))
            up = net.node("Relu", [net.bn(net.conv_transpose(pick(), name, k, pad=k // 2 - 1), f"{name}_bn")],
                          f"{name}_relu")
            out = net.node("MaxPool", [up], f"{name}_down", kernel_shape=[2, 2], strides=[2, 2])
        elif op == "shuffle":               # ShuffleNet / ESNet: Reshape -> Transpose -> Reshape
            out = channel_shuffle(net, pick(), name, 4)
        elif op == "gather_channels":       # a channel reorder (BGR -> RGB and the like)
            order = net.const(f"{name}_order", np.array(draw(st.permutations([0, 1, 2, 3])), np.int64))
            out = net.node("Gather", [pick(), order], name, axis=1)
        elif op == "darknet_upsample":      # darknet2onnx: view -> expand -> view, then back down by a pool
            y = net.node("Reshape", [pick(), net.const(f"{name}_s6", np.array([1, 4, 6, 1, 6, 1]))], f"{name}_r1")
            y = net.node("Expand", [y, net.const(f"{name}_e6", np.array([1, 4, 6, 2, 6, 2]))], f"{name}_ex")
            y = net.node("Reshape", [y, net.const(f"{name}_s4", np.array([1, 4, 12, 12]))], f"{name}_r2")
            out = net.node("MaxPool", [net.conv(y, name)], f"{name}_down", kernel_shape=[2, 2], strides=[2, 2])
        elif op == "zero_pad_pool":         # ultralytics YOLOv3-tiny: ZeroPad2d((0, 1, 0, 1)), MaxPool 2 stride 1
            y = net.node("LeakyRelu", [net.conv(pick(), name)], f"{name}_leaky", alpha=0.1)
            pads = net.const(f"{name}_pads", np.array([0, 0, 0, 0, 0, 0, 1, 1]))
            out = net.node("MaxPool", [net.node("Pad", [y, pads], f"{name}_pad")], f"{name}_pool",
                           kernel_shape=[2, 2])
        elif op == "grouped":               # ResNeXt / RegNet: a conv, then a grouped conv (2 groups of 2 channels)
            y = net.node("Relu", [net.conv(pick(), f"{name}_reduce", k=1)], f"{name}_relu")
            out = net.node("Conv", [y, net._w(f"{name}.w", (4, 2, 3, 3), 0.3)], name, kernel_shape=[3, 3],
                           pads=[1, 1, 1, 1], group=2)
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
    middle = [t for t in tensors[len(net.inputs):] if t in read]
    if middle and draw(st.booleans()):      # an output taken from the middle of the graph
        outputs.append(middle[draw(st.integers(0, len(middle) - 1))])
    return net.model(outputs)


def _check_invariants(model: onnx.ModelProto, out: Path, offload_everything: bool, board: str, **options) -> None:
    path = out / "m.onnx"
    onnx.save(model, str(path))
    result = run_partition(PartitionConfig(model=path, out_dir=out / "build", board=board, verify=True,
                                           picture=False, offload_everything=offload_everything, **options))
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


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_nets())
def test_invariants_offloading_every_supported_region(model):
    with tempfile.TemporaryDirectory() as d:
        _check_invariants(model, Path(d), True, "zcu104")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_nets(), st.sampled_from(sorted(BOARDS)))
def test_invariants_with_the_cost_model(model, board):
    with tempfile.TemporaryDirectory() as d:
        _check_invariants(model, Path(d), False, board)


@st.composite
def labelled_dags(draw):
    """Random DAGs (edges only forward in a random order) with two or three labels, as the carver sees them."""
    n = draw(st.integers(2, 18))
    edges = [(f"v{a}", f"v{b}") for a in range(n) for b in range(a + 1, n) if draw(st.integers(0, 9)) < 3]
    dag = nx.DiGraph(edges)
    dag.add_nodes_from(f"v{i}" for i in range(n))
    labels = {v: draw(st.integers(0, draw(st.integers(1, 2)))) for v in dag}
    return dag, labels


@settings(max_examples=1500, deadline=None)
@given(labelled_dags())
def test_carving_and_parallel_splits_are_convex_and_acyclic(case):
    """The carver alone, on thousands of graphs: clusters are convex, parallel parts never form a cycle (an edge
    that skips a sequential node once tied two parallel parts into one)."""
    from partitioner.placement.carve import carve, cluster_graph, split_parallel
    dag, labels = case
    order = {v: i for i, v in enumerate(nx.topological_sort(dag))}
    parts = [p for cluster in carve(dag, labels, order) for p, _ in split_parallel(dag, cluster, order)]
    assert sorted(v for p in parts for v in p) == sorted(dag)
    assert all(len({labels[v] for v in p}) == 1 for p in parts)
    assert nx.is_directed_acyclic_graph(cluster_graph(dag, parts))


@pytest.mark.slow
@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_nets(), st.booleans())
def test_invariants_on_a_thousand_detector_like_graphs(model, offload_everything):
    with tempfile.TemporaryDirectory() as d:
        _check_invariants(model, Path(d), offload_everything, "zcu104")


def test_an_add_whose_operand_is_a_concat_shares_its_layout(tmp_path):
    """Found by the property test above: a CSP-style split/conv/concat added to the network input. The concat
    places its output with padding between its slots; the input it is added to must take that placement (it used
    to keep its own and the engine compiler refused the add)."""
    from graphs import Net

    from fpga_runtime.checking.accuracy import output_accuracy
    from fpga_runtime.checking.frames import original_outputs, random_frame
    from fpga_runtime.run.session import Session
    net = Net(channels=4, size=6)
    halves = ["n2_a", "n2_b"]
    net.nodes.append(helper.make_node("Split", [net.conv("x", "n0"), net.const("n2_sizes", np.array([2, 2]))],
                                      halves, name="n2_split", axis=1))
    joined = net.node("Concat", [net.conv("n2_a", "n2_c", cin=2, cout=2), "n2_b"], "n2", axis=1)
    model = net.model([net.conv(net.node("Add", ["x", joined], "n5"), "n13")])
    _check_invariants(model, tmp_path, True, "zcu104")
    with Session(tmp_path / "build") as s:
        frame = random_frame(s.plan, 0)
        got = s.run(None, frame)[0]
    assert any(sg.device == "fpga" for sg in s.plan.subgraphs)
    assert output_accuracy("n13", original_outputs(tmp_path / "m.onnx", frame)["n13"], got).cosine > 0.98


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 14), st.lists(st.tuples(st.integers(0, 13), st.integers(0, 13)), max_size=40))
@example(3, [(0, 1), (1, 2), (0, 2)])                        # a skip edge over a node comparable with both ends
@example(6, [(0, 1), (1, 2), (2, 3), (3, 4), (1, 5), (4, 5)])  # YOLOv3-tiny's route around its second head
@example(4, [(0, 1), (0, 2), (1, 3), (2, 3)])                # a diamond
def test_sequential_nodes_are_those_comparable_with_every_other(n, pairs):
    """The linear-time rule equals the definition (ancestors + descendants = every other node) on random DAGs."""
    import networkx as nx

    from partitioner.placement.carve import sequential_nodes
    dag = nx.DiGraph()
    dag.add_nodes_from(range(n))
    dag.add_edges_from((min(a, b), max(a, b)) for a, b in pairs if a != b and max(a, b) < n)
    topo = list(range(n))
    brute = [v for v in topo if len(nx.descendants(dag, v)) + len(nx.ancestors(dag, v)) == n - 1]
    assert sequential_nodes(dag, topo) == brute


def _convex(dag: nx.DiGraph, members: set[str]) -> bool:
    """No path leaves the set and comes back into it."""
    outside = {s for m in members for s in dag.successors(m)} - members
    reach = set(outside)
    for v in outside:
        reach |= nx.descendants(dag, v)
    return not reach & members


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_nets())
def test_every_branch_split_candidate_keeps_the_invariants(model):
    """Each way the exploration may cut the FPGA regions at their forks (explore/draft.py): every node placed
    exactly once, every subgraph convex, the subgraph graph acyclic; each candidate's FPGA layers among those the
    designs are sized for (a cut may leave a piece of data movement alone, which goes to the CPU)."""
    from ir_helpers import ir_of

    from partitioner.explore.draft import branch_splits
    from partitioner.passes.pipeline import run_fusion
    from partitioner.placement.cost import CostModel
    from partitioner.placement.partition import partition
    from partitioner.targets import fpga
    g = run_fusion(ir_of(model))
    b = BOARDS["zcu104"]
    nodes, splits = branch_splits(g, b)
    dag = g.dag()
    union: set[str] = set()
    for sp in splits:
        placed = [n for s in sp.stages if s.device == "fpga" for n in s.nodes]
        assert len(placed) == len(set(placed)) and set(placed) <= set(nodes)
        union |= set(placed)
        part = partition(g, fpga, CostModel(b), offload_everything=True, branch_share=sp.share)
        placed = [n for s in part.subgraphs for n in s.nodes]
        assert sorted(placed) == sorted(g.nodes)
        assert all(_convex(dag, set(s.nodes)) for s in part.subgraphs)
        cg = nx.DiGraph((d, s.name) for s in part.subgraphs for d in s.depends_on)
        assert nx.is_directed_acyclic_graph(cg)
    assert union == set(nodes), "the designs are sized for exactly the layers some candidate offloads"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_nets())
def test_invariants_with_two_units_fixed_for_latency(model):
    """A fixed two-unit engine weighs the branch splits for one frame's latency; the build keeps every invariant
    and computes what the original computes (--verify)."""
    with tempfile.TemporaryDirectory() as d:
        _check_invariants(model, Path(d), False, "zcu104",
                          engine=EngineConfig(vec=8, pe_rows=8, compute_units=2), objective="latency")
