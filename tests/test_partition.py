"""Partitioner on hand-built graphs: subgraphs as sets of original node names, and the same outputs."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from graphs import Net
from ir_helpers import ir_of
from onnx import TensorProto, helper, numpy_helper

from fpga_runtime.boards import board
from fpga_runtime.plan import read_plan
from partitioner.build import PartitionConfig, TargetName, run_partition
from partitioner.passes.pipeline import run_fusion
from partitioner.placement.cost import CostModel
from partitioner.placement.partition import partition
from partitioner.placement.roles import Role
from partitioner.targets import fpga


def _parts(model, offload_everything=True, board_name="zcu104"):
    g = run_fusion(ir_of(model))
    p = partition(g, fpga, CostModel(board(board_name)), offload_everything)
    return p, [(s.device.value, {o for n in s.nodes for o in g.nodes[n].origin}) for s in p.subgraphs]


def _build(tmp_path, model, **kw):
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    cfg = PartitionConfig(model=path, out_dir=tmp_path / "out", verify=True, picture=False,
                          offload_everything=kw.pop("offload_everything", True), **kw)
    result = run_partition(cfg)
    assert result.verified, result.checks
    return result


def test_diamond_with_fused_join_is_one_subgraph(tmp_path):
    n = Net()
    a = n.conv("x", "a")
    b = n.conv(a, "b")
    c = n.conv(a, "c")
    model = n.model([n.node("Add", [b, c], "join")])
    p, sets = _parts(model)
    assert sets == [("fpga", {"a", "b", "c", "join"})]
    _build(tmp_path, model)


def test_independent_branches_become_parallel_subgraphs(tmp_path):
    n = Net()
    a = n.conv("x", "a")
    b2 = n.conv(n.conv(a, "b1"), "b2")
    c1 = n.conv(a, "c1")
    model = n.model([b2, c1])
    p, sets = _parts(model)
    assert sets == [("fpga", {"a"}), ("fpga", {"b1", "b2"}), ("fpga", {"c1"})]
    groups = [s.parallel_group for s in p.subgraphs]
    assert groups[0] is None and groups[1] == groups[2] is not None
    assert p.subgraphs[1].concurrent_with == [p.subgraphs[2].name]
    assert p.subgraphs[1].depends_on == [p.subgraphs[0].name]
    _build(tmp_path, model)


def test_branches_that_rejoin_split_and_join(tmp_path):
    n = Net()
    a = n.conv("x", "a")
    left = n.conv(n.conv(a, "l1"), "l2")
    right = n.conv(n.conv(a, "r1"), "r2")
    cat = n.node("Concat", [left, right], "cat", axis=1)
    out = n.conv(cat, "tail", cin=8)
    model = n.model([out])
    p, sets = _parts(model)
    assert sets == [("fpga", {"a"}), ("fpga", {"l1", "l2"}), ("fpga", {"r1", "r2"}), ("fpga", {"cat", "tail"})]
    assert p.subgraphs[3].depends_on == [p.subgraphs[1].name, p.subgraphs[2].name]
    _build(tmp_path, model)


def test_placement_that_would_create_a_cycle_is_split(tmp_path):
    """a (FPGA) -> abs (CPU) -> add (FPGA) and a -> add: a and add cannot share a subgraph."""
    n = Net()
    a = n.conv("x", "a")
    ab = n.node("Abs", [a], "abs")
    add = n.node("Add", [a, ab], "add")
    model = n.model([n.conv(add, "e")])
    p, sets = _parts(model)
    assert sets == [("fpga", {"a"}), ("cpu", {"abs"}), ("fpga", {"add", "e"})]
    assert p.fallbacks == {"abs": "Abs is not an engine op"}
    _build(tmp_path, model)


def test_residual_chain_stays_one_subgraph(tmp_path):
    n = Net()
    x = n.conv("x", "stem")
    for i in range(3):
        y = n.conv(n.node("Relu", [n.conv(x, f"c{i}a")], f"r{i}"), f"c{i}b")
        x = n.node("Add", [x, y], f"add{i}")
    model = n.model([x])
    p, sets = _parts(model)
    assert len(sets) == 1 and sets[0][0] == "fpga" and len(sets[0][1]) == 1 + 3 * 4
    _build(tmp_path, model)


def test_pre_and_post_processing_stay_on_cpu(tmp_path):
    n = Net()
    pre = n.node("Transpose", [n.node("Mul", ["x", n._w("scale", (1,), 1.0)], "norm")], "tr", perm=[0, 1, 3, 2])
    body = n.conv(n.conv(pre, "c1"), "c2")
    post = n.node("Softmax", [n.node("Flatten", [body], "flat")], "soft")
    model = n.model([post])
    p, sets = _parts(model)
    assert sets == [("cpu", {"norm", "tr"}), ("fpga", {"c1", "c2"}), ("cpu", {"flat", "soft"})]
    assert [s.role for s in p.subgraphs] == [Role.PRE, Role.COMPUTE, Role.POST]
    _build(tmp_path, model)


def test_many_sibling_cpu_heads_are_packed_into_one_subgraph_per_cpu_worker(tmp_path):
    """Forty Softmax heads on one conv: the same producer, no readers. Forty one-node CPU subgraphs would be forty
    onnxruntime sessions and tasks a frame; they become CPU_WORKERS subgraphs of balanced work (big heads and small
    spread over them), and the partitioned model still computes the original."""
    from fpga_runtime.run.policy import CPU_WORKERS
    n = Net(channels=8)
    body = n.conv("x", "c1")
    heads = [n.node("Softmax", [n.node("Flatten", [body], f"flat{i}")], f"soft{i}") for i in range(38)]
    heads += [n.node("LRN", [body], f"lrn{i}", size=3) for i in range(2)]       # two heavier heads
    model = n.model(heads)
    p, sets = _parts(model)
    cpu = [sg for sg in p.subgraphs if sg.device.value == "cpu"]
    assert len(cpu) == CPU_WORKERS and all(sg.role is Role.POST and sg.depends_on == ["fpga_0"] for sg in cpu)
    assert sorted(n for sg in cpu for n in sg.nodes) == sorted(
        [f"flat{i}" for i in range(38)] + [f"soft{i}" for i in range(38)] + ["lrn0", "lrn1"])
    assert all(sum(n.startswith("lrn") for n in sg.nodes) == 1 for sg in cpu)      # one heavy head each
    loads = [sg.estimate.cpu_s for sg in cpu]
    assert max(loads) < 1.3 * min(loads)
    _build(tmp_path, model)


def _keras_conv(n: Net, x: str, name: str, auto: str, stride: int = 1) -> str:
    w = n.weight(f"{name}.w", (n.c, n.c, 3, 3), np.sqrt(2.0 / (n.c * 9)))
    b = n.weight(f"{name}.b", (n.c,), 0.1)
    return n.node("Conv", [x, w, b], name, kernel_shape=[3, 3], strides=[stride, stride], auto_pad=auto)


def test_auto_pad_convs_and_pools_become_one_fpga_subgraph(tmp_path):
    """keras2onnx writes auto_pad even with static shapes: SAME_UPPER and SAME_LOWER convs and max pools (odd
    sizes, stride 2) and VALID ones are one FPGA subgraph, and the partition computes the original."""
    n = Net(channels=8, size=23)
    y = n.node("Relu", [_keras_conv(n, "x", "c1", "SAME_UPPER", stride=2)], "r1")
    y = n.node("MaxPool", [y], "p1", kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")
    y = n.node("Relu", [_keras_conv(n, y, "c2", "SAME_LOWER")], "r2")
    y = n.node("MaxPool", [y], "p2", kernel_shape=[2, 2], strides=[2, 2], auto_pad="SAME_LOWER")
    y = n.node("Relu", [_keras_conv(n, y, "c3", "VALID")], "r3")
    model = n.model([y])
    p, sets = _parts(model)
    assert [d for d, _ in sets] == ["fpga"], sets
    assert not p.fallbacks
    _build(tmp_path, model)


def test_an_empty_tensor_stays_on_the_cpu_instead_of_stopping_the_build(tmp_path):
    """An export that slices zero columns (ultralytics' NMS export with no mask coefficients) is valid ONNX:
    the empty slice and what reads it run on onnxruntime; the convs still go to the FPGA."""
    n = Net(channels=8)
    body = n.conv(n.conv("x", "c1"), "c2")
    flat = n.node("Flatten", [body], "flat")
    none = n.node("Slice", [flat, n.const("s", np.array([0], np.int64)), n.const("e", np.array([0], np.int64)),
                            n.const("a", np.array([1], np.int64))], "empty")
    out = n.node("Concat", [flat, none], "cat", axis=1)
    model = n.model([out])
    p, sets = _parts(model, offload_everything=False)
    assert ("fpga", {"c1", "c2"}) in sets
    assert any(d == "cpu" and {"empty", "cat"} <= ns for d, ns in sets), sets
    _build(tmp_path, model, offload_everything=False)


def test_concat_with_a_cpu_input_is_not_free(tmp_path):
    n = Net()
    a = n.conv("x", "a")
    t = n.node("Tanh", ["x"], "tanh")
    out = n.conv(n.node("Concat", [a, t], "cat", axis=1), "tail", cin=8)
    model = n.model([out])
    p, sets = _parts(model)
    assert ("cpu", {"cat"}) in sets or any(d == "cpu" and "cat" in s for d, s in sets)
    assert "not written by the engine" in p.fallbacks["cat"]
    _build(tmp_path, model)


def test_cost_model_keeps_tiny_regions_on_cpu(tmp_path):
    n = Net(channels=2, size=2)
    model = n.model([n.conv("x", "tiny", k=1)])
    p, sets = _parts(model, offload_everything=False)
    assert sets == [("cpu", {"tiny"})]
    assert "not worth offloading" in p.fallbacks["tiny"]
    assert [d.accepted for d in p.decisions] == [False]
    result = _build(tmp_path, model, offload_everything=False)
    assert result.plan.decisions[0]["accepted"] is False


def test_cost_model_offloads_heavy_regions():
    n = Net(channels=64, size=56)
    model = n.model([n.conv(n.conv("x", "c1"), "c2")])
    p, sets = _parts(model, offload_everything=False, board_name="zcu104")
    assert sets == [("fpga", {"c1", "c2"})]
    est = p.subgraphs[0].estimate
    assert est.macs == 2 * 64 * 64 * 9 * 56 * 56
    assert est.fpga_s < est.cpu_s


def test_cpu_target_gives_one_subgraph(tmp_path, zoo):
    result = run_partition(PartitionConfig(model=zoo("yolov3-tiny", 96), out_dir=tmp_path / "cpu",
                                           target=TargetName.CPU, verify=True, picture=False))
    assert result.verified
    plan = read_plan(tmp_path / "cpu")
    assert [(s.device, s.role) for s in plan.subgraphs] == [("cpu", "compute")]
    model = onnx.load(str(zoo("yolov3-tiny", 96)))
    assert plan.folded and not set(plan.folded) & set(plan.subgraphs[0].nodes)
    assert sorted(plan.subgraphs[0].nodes + plan.folded) == sorted(n.name for n in model.graph.node)


def test_control_flow_node_reads_outer_scope(tmp_path):
    """An If (of a condition the frame gives) whose branches read an outer tensor: the dependency is seen and the
    model still runs."""
    n = Net()
    a = n.conv("x", "a")
    then = helper.make_graph([helper.make_node("Relu", [a], ["t_out"], name="then_relu")], "then", [],
                             [helper.make_tensor_value_info("t_out", 1, None)])
    other = helper.make_graph([helper.make_node("Neg", [a], ["e_out"], name="else_neg")], "else", [],
                              [helper.make_tensor_value_info("e_out", 1, None)])
    n.nodes.append(helper.make_node("If", ["cond"], ["branch"], name="if", then_branch=then, else_branch=other))
    model = n.model(["branch"])
    model.graph.input.append(helper.make_tensor_value_info("cond", onnx.TensorProto.BOOL, []))
    p, sets = _parts(model)
    assert sets == [("fpga", {"a"}), ("cpu", {"if"})]
    _build(tmp_path, model)


_CONVS = {"conv", "conv_1", "conv_2", "conv_3", "conv_4", "conv_5", "conv_6"}
ZOO_PARTITIONS = {
    "resblock": [("cpu", "pre", {"normalise"}),
                 ("fpga", "compute", {"add", "bn", "conv", "conv.bn", "conv.bn_1", "conv.bn_2", "conv_1", "conv_2",
                                      "conv_3", "relu", "relu_1", "relu_2", "sigmoid", "silu"}),
                 ("cpu", "post", {"gap"})],
    "two-branch": [("fpga", "compute", _CONVS | {f"conv.bn{s}" for s in ("", "_1", "_2", "_3", "_4", "_5", "_6")}
                    | {"concat", "head_a", "hsig", "hswish", "leaky", "leaky_1", "pool", "relu", "relu6", "relu_1",
                       "sigmoid", "silu"})],
    # the flatten before fc leaves the graph (fc reads the map as a conv), so the head joins the convs
    "classifier": [("fpga", "compute", {"conv", "conv.bn", "conv.bn_1", "conv_1", "pool", "pool_1", "relu",
                                        "relu_1", "fc", "flatten", "logits", "relu_2"}),
                   ("cpu", "post", {"probs"})],
}


@pytest.mark.parametrize("name", sorted(ZOO_PARTITIONS))
def test_small_zoo_models_partition_into_these_node_sets_and_verify(tmp_path, zoo, name):
    """With the cost model on the ZCU104: each subgraph as (device, role, original ONNX nodes), every node placed
    once, and the partitioned model computing what the original computes."""
    result = run_partition(PartitionConfig(model=zoo(name), out_dir=tmp_path / name, verify=True, picture=False))
    got = [(s.device, s.role, set(s.nodes)) for s in result.plan.subgraphs]
    assert got == ZOO_PARTITIONS[name]
    placed = [n for s in result.plan.subgraphs for n in s.nodes] + result.plan.folded
    assert sorted(placed) == sorted(n.name for n in onnx.load(str(zoo(name))).graph.node)
    assert result.verified


def test_onnxruntime_contrib_ops_stay_on_the_cpu_between_fpga_layers(tmp_path):
    """com.microsoft ops (written by onnxruntime's optimisers) run on the CPU; shape inference goes on past them
    and the convs around them still reach the FPGA."""
    n = Net(channels=8, size=12)
    a = n.conv("x", "a")
    n.nodes.append(helper.make_node("Gelu", [a], ["g"], name="gelu", domain="com.microsoft"))
    fused = helper.make_node("FusedConv", ["g", n._w("f.w", (8, 8, 3, 3), 0.2), n._w("f.b", (8,), 0.1)], ["f"],
                             name="fused", domain="com.microsoft", activation="Relu", kernel_shape=[3, 3],
                             pads=[1, 1, 1, 1])
    n.nodes.append(fused)
    y = n.conv("f", "y")
    model = n.model([y])
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    result = _build(tmp_path, model)
    plan = read_plan(tmp_path / "out")
    where = {node: s.device for s in plan.subgraphs for node in s.nodes}
    assert where["a"] == where["y"] == "fpga" and where["gelu"] == where["fused"] == "cpu"
    assert {f["node"] for f in plan.fallbacks} >= {"gelu", "fused"}
    assert result.verified


def test_only_branches_worth_a_program_start_are_split_off():
    """Light branches stay in the sequential part before the group (fewer programs and segments); heavy ones
    become parallel parts; with fewer than two heavy branches nothing is split."""
    import networkx as nx

    from partitioner.placement.carve import cluster_graph, split_parallel
    dag = nx.DiGraph([("s", "a"), ("s", "b"), ("s", "light"), ("a", "t"), ("b", "t"), ("light", "t")])
    order = {n: i for i, n in enumerate(["s", "a", "b", "light", "t"])}
    parts = split_parallel(dag, set(dag), order, worth=lambda branch: "light" not in branch)
    assert [(sorted(p), g is not None) for p, g in parts] == [(["light", "s"], False), (["a"], True), (["b"], True),
                                                              (["t"], False)]
    assert nx.is_directed_acyclic_graph(cluster_graph(dag, [p for p, _ in parts]))
    assert len(split_parallel(dag, set(dag), order, worth=lambda branch: "a" in branch)) == 1


def test_verify_tolerance_has_an_absolute_floor_for_small_outputs():
    """A sigmoid map near zero: 1.8e-7 absolute is float rounding, although 2.4e-4 relative to its 7.5e-4 peak."""
    from partitioner.evaluate.float_check import compare
    ref = np.full((1, 1, 4, 4), 7.5e-4, np.float32)
    ok = compare({"map": ref}, {"map": ref + np.float32(1.8e-7)}, 1e-4)[0]
    assert ok.ok and ok.max_rel > 1e-4
    bad = compare({"map": ref}, {"map": ref + np.float32(1e-4)}, 1e-4)[0]
    assert not bad.ok
    nan = np.array([np.nan, 1.0], np.float32)
    assert compare({"y": nan}, {"y": nan.copy()}, 1e-4)[0].ok
    assert not compare({"y": nan}, {"y": np.array([0.0, 1.0], np.float32)}, 1e-4)[0].ok


def test_a_fork_is_not_split_where_the_part_before_it_would_have_no_work():
    """An L2 normalisation in front of two heavy heads stays with them: alone it would be a program of no MACs."""
    import networkx as nx

    from partitioner.placement.carve import split_parallel
    dag = nx.DiGraph([("conv", "norm"), ("norm", "loc"), ("norm", "conf")])
    order = {n: i for i, n in enumerate(["conv", "norm", "loc", "conf"])}
    members = {"norm", "loc", "conf"}
    assert len(split_parallel(dag, members, order)) == 3
    parts = split_parallel(dag, members, order, works=lambda part: bool(part & {"conv", "loc", "conf"}))
    assert [sorted(p) for p, _ in parts] == [["conf", "loc", "norm"]]


def test_verify_allows_what_onnxruntime_moves_by_itself_and_no_more():
    """An ill-conditioned output (onnxruntime's own optimised and unoptimised runs differ by 0.2 at a peak of
    800): a partition 0.27 away passes, one 1.0 away does not."""
    from partitioner.evaluate.float_check import CONDITIONING_FACTOR, compare
    ref = np.linspace(-800, 800, 64, dtype=np.float32)
    own = ref.copy()
    own[3] += np.float32(0.2)
    near, far = ref.copy(), ref.copy()
    near[5] += np.float32(0.27)
    far[5] += np.float32(1.0)
    assert compare({"y": ref}, {"y": near}, 1e-4)[0].ok is False            # beyond 1e-4 of 800 alone
    check = compare({"y": ref}, {"y": near}, 1e-4, {"y": own})[0]
    assert check.ok and abs(check.own_gap - 0.2) < 1e-4
    assert 1.0 > CONDITIONING_FACTOR * 0.2 and not compare({"y": ref}, {"y": far}, 1e-4, {"y": own})[0].ok


def test_a_big_graph_is_drawn_a_box_per_subgraph_and_a_slow_graphviz_costs_only_the_picture(tmp_path, monkeypatch):
    from partitioner.output import drawing
    n = Net()
    t = "x"
    for i in range(12):
        t = n.conv(t, f"c{i}") if i % 3 else n.node("Tanh", [t], f"t{i}")
    p, _ = _parts(n.model([t]))
    monkeypatch.setattr(drawing, "DETAIL_LIMIT", 4)
    dot = drawing.to_dot(p)
    assert dot.count("layers:") == len(p.subgraphs) and "c1" in dot
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "dot").write_text("#!/bin/sh\nsleep 5\n")
    (fake / "dot").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{__import__('os').environ['PATH']}")
    monkeypatch.setattr(drawing, "DRAW_TIMEOUT_S", 0.5)
    assert drawing.draw(p, tmp_path) is None
    assert (tmp_path / "partition.dot").exists() and not (tmp_path / "partition.svg").exists()


def _keras_cascade(n: Net) -> str:
    """An MTCNN-style stage as keras2onnx writes it: VALID/SAME_UPPER convs and pools, PRelu per channel after
    each conv (keras' default, slopes [C, 1, 1]) and one with shared axes (a [1, 1, 1] slope)."""
    from graphs import prelu
    rng = np.random.default_rng(3)
    y = prelu(n, _keras_conv(n, "x", "c1", "VALID"), "p1", rng.uniform(0.05, 0.4, (n.c, 1, 1)))
    y = n.node("MaxPool", [y], "pool1", kernel_shape=[2, 2], strides=[2, 2], auto_pad="SAME_UPPER")
    y = prelu(n, _keras_conv(n, y, "c2", "SAME_UPPER"), "p2", rng.uniform(-0.1, 0.3, (n.c, 1, 1)))
    y = prelu(n, _keras_conv(n, y, "c3", "SAME_UPPER", stride=2), "p3", [[[0.2]]])
    return n.conv(y, "head", k=1)


def test_keras_face_cascade_with_prelu_and_auto_pad_is_one_fpga_subgraph(tmp_path):
    n = Net(channels=8, size=24)
    model = n.model([_keras_cascade(n)])
    p, sets = _parts(model)
    assert [d for d, _ in sets] == ["fpga"] and not p.fallbacks, (sets, p.fallbacks)
    result = _build(tmp_path, model)
    assert min(o.cosine for o in result.accuracy.outputs) > 0.99


def test_text_detector_with_erf_gelu_and_squeeze_excite_is_one_fpga_subgraph(tmp_path):
    """A PP-OCR-style detector: erf-GELU convs, an SE block (gate by a sigmoid), an upsampled map with a
    sigmoid probability head, which stays in float on the CPU (a head's probabilities)."""
    from graphs import gelu_erf
    n = Net(channels=8, size=16)
    y = gelu_erf(n, n.conv("x", "stem", stride=2), "g1")
    y = gelu_erf(n, n.conv(y, "body"), "g2", grouping="transformers")
    squeeze = n.node("GlobalAveragePool", [y], "se_pool")
    gate = n.node("Sigmoid", [n.conv(n.node("Relu", [n.conv(squeeze, "se1", k=1)], "se_relu"), "se2", k=1)],
                  "se_gate")
    y = n.node("Mul", [y, gate], "se_scale")
    y = n.node("Resize", [y, "", n.const("up.scales", np.array([1, 1, 2, 2], np.float32))], "up",
               mode="nearest")
    prob = n.node("Sigmoid", [n.conv(y, "map", k=1, cout=1)], "prob")
    model = n.model([prob])
    p, sets = _parts(model)
    assert [d for d, _ in sets] == ["fpga", "cpu"] and sets[1][1] == {"prob"}, sets
    assert all("Erf" not in why for why in p.fallbacks.values())
    _build(tmp_path, model)


def test_float16_model_runs_in_float32_inside_and_keeps_its_interface(tmp_path):
    """A float16 export with a float32 island (Cast up, Softmax, Cast down): its convs reach the FPGA, the island's
    casts fold away, the plan takes and gives float16, and verify checks against the model widened to float32,
    reporting the original's own float16 rounding beside."""
    from graphs import float16_model

    from partitioner.evaluate.float_check import OWN_ROUNDING
    n = Net(channels=8, size=12)
    y = n.node("Relu", [n.conv("x", "c1")], "r1")
    island = n.node("Softmax", [n.node("Cast", [y], "up", to=TensorProto.FLOAT)], "sm", axis=1)
    y = n.node("Cast", [island], "down", to=TensorProto.FLOAT16)
    model = float16_model(n.model([n.node("LeakyRelu", [n.conv(y, "c2")], "l2", alpha=0.1)]))
    result = _build(tmp_path, model)
    plan = result.plan
    assert plan.model["precision"] == "float16"
    assert [t.dtype for t in plan.inputs] == ["float16"] and [t.dtype for t in plan.outputs] == ["float16"]
    fpga = {o for s in plan.subgraphs if s.device == "fpga" for o in s.nodes}
    assert {"c1", "r1", "c2", "l2"} <= fpga
    assert not any(o in ("up", "down") for s in plan.subgraphs for o in s.nodes if s.device == "cpu"), plan.subgraphs
    assert any(c.subgraph == OWN_ROUNDING for c in result.checks)
    assert any(w.startswith("float16 model: computed in float32") for w in result.warnings)
    from fpga_runtime.run.session import Session
    x = np.random.default_rng(0).standard_normal((1, 8, 12, 12)).astype(np.float16)
    with Session(tmp_path / "out", backend="reference") as s:
        out, = s.run(None, {"x": x})
    assert out.dtype == np.float16 and out.shape == (1, 8, 12, 12)


def test_verify_names_the_subgraph_that_computes_something_else(tmp_path):
    """Each subgraph is checked alone on the original's own tensors: a wrong one is caught and named, though the
    chain's error would only show at the end."""
    from partitioner.evaluate.float_check import first_failure, verify
    n = Net(channels=8)
    y = n.node("Tanh", [n.conv(n.node("Abs", [n.conv("x", "c1")], "abs"), "c2")], "t")
    model = n.model([n.node("Softmax", [n.node("Flatten", [y], "flat")], "soft")])
    result = _build(tmp_path, model)
    plan = read_plan(tmp_path / "out")
    assert all(c.ok for c in result.checks) and any(c.subgraph == "cpu_compute_0" for c in result.checks)
    broken = next(s for s in plan.subgraphs if "abs" in s.nodes)
    path = plan.onnx_path(broken)
    m = onnx.load(str(path))
    node = next(x for x in m.graph.node if x.op_type == "Abs")
    node.op_type = "Neg"
    onnx.save(m, str(path))
    feeds = {"x": np.random.default_rng(1).standard_normal((1, 8, 6, 6)).astype(np.float32)}
    checks = verify(plan, tmp_path / "m.onnx", feeds)
    assert [c.subgraph for c in checks if c.subgraph and not c.ok] == [broken.name]
    assert f"subgraph {broken.name!r}" in first_failure(checks)


def test_verify_bound_grows_with_the_subgraphs_in_series():
    """Float rounding compounds along a chain of subgraphs: an output after k subgraphs in series gets k times
    the tolerance, each subgraph alone only one."""
    from types import SimpleNamespace

    from partitioner.evaluate.float_check import _depths
    sg = lambda name, deps: SimpleNamespace(name=name, depends_on=deps)     # noqa: E731
    plan = SimpleNamespace(subgraphs=[sg("a", []), sg("b", ["a"]), sg("c", ["a"]), sg("d", ["b", "c"]),
                                      sg("e", ["d"])])
    assert _depths(plan) == {"a": 1, "b": 2, "c": 2, "d": 3, "e": 4}


def test_an_empty_constant_operand_is_no_empty_tensor(tmp_path):
    """torch writes Resize's unused roi as an empty constant: that is no data for the engine to lack (HRNet's
    fuse layers were each cut out to the CPU for it)."""
    n = Net(channels=8)
    low = n.conv("x", "c1", stride=2)
    y = n.node("Resize", [low, n.const("roi", np.zeros(0, np.float32)),
                          n.const("scales", np.array([1, 1, 2, 2], np.float32))], "up", mode="nearest")
    model = n.model([n.conv(n.node("Add", [y, n.conv("x", "c2")], "fuse"), "c3")])
    p, sets = _parts(model)
    assert [d for d, _ in sets] == ["fpga"] and not p.fallbacks, (sets, p.fallbacks)
    _build(tmp_path, model)


def test_a_bfloat16_model_is_partitioned_with_a_float32_interface(tmp_path):
    """numpy and onnxruntime's Python API have no bfloat16 arrays: the plan takes and gives float32, verify and
    the int8 report use the model widened to float32, and fpga-run says why it cannot compare with the original."""
    from fpga_runtime.plan import original_model
    n = Net(channels=8, size=6)
    model = n.model([n.node("Relu", [n.conv(n.conv("x", "a"), "b")], "r")])
    g = model.graph
    for i, t in enumerate(g.initializer):
        a = numpy_helper.to_array(t).astype(np.float32)
        g.initializer[i].CopyFrom(helper.make_tensor(t.name, TensorProto.BFLOAT16, a.shape, a.ravel().tolist()))
    for vi in list(g.input) + list(g.output):
        vi.type.tensor_type.elem_type = TensorProto.BFLOAT16
    result = _build(tmp_path, model)
    plan = result.plan
    assert plan.model["precision"] == "bfloat16"
    assert [t.dtype for t in plan.inputs] == ["float32"] and [t.dtype for t in plan.outputs] == ["float32"]
    assert [s.device for s in plan.subgraphs] == ["fpga"]
    assert result.accuracy.outputs[0].cosine > 0.99 and "bfloat16" in result.accuracy.frame
    assert original_model(plan)[1].startswith("the original is a bfloat16 model")
