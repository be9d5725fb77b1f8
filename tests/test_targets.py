"""FPGA target predicates and the cost model's per-node numbers."""
from __future__ import annotations

import numpy as np
import pytest
from graphs import Net
from ir_helpers import ir_of
from onnx import numpy_helper

from fpga_runtime.boards import BOARDS, board
from partitioner.passes.pipeline import run_fusion
from partitioner.placement.cost import CostModel, node_cost
from partitioner.targets import fpga


def _conv_graph(k=3, stride=1, dilation=1, group=1, cin=4, cout=4, size=8, pool=None):
    n = Net(channels=cin, size=size)
    n.inits.append(numpy_helper.from_array(np.ones((cout, cin // group, k, k), np.float32), "w"))
    pad = dilation * (k // 2)
    out = n.node("Conv", ["x", "w"], "c", kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4,
                 dilations=[dilation, dilation], group=group)
    if pool:
        out = n.node("MaxPool", [out], "p", kernel_shape=[pool, pool], strides=[pool, pool])
    return run_fusion(ir_of(n.model([out])))


@pytest.mark.parametrize("kw,ok,reason", [
    ({}, True, ""), ({"k": 7}, True, ""), ({"k": 9}, False, "kernel (9, 9) larger than 7x7"),
    ({"stride": 2}, True, ""), ({"stride": 3}, False, "stride (3, 3) not in [1, 2]"),
    ({"dilation": 6, "size": 16}, True, ""), ({"group": 4}, True, ""),
    ({"group": 2}, True, ""),         # grouped: a block-diagonal standard conv after split_grouped_convs
    ({"pool": 2}, True, ""), ({"pool": 4, "size": 8}, False, "max pool kernel (4, 4) not in [2, 3]"),
])
def test_conv_support(kw, ok, reason):
    g = _conv_graph(**kw)
    node = g.nodes["c"]
    verdict = fpga.check(node, g, {})
    assert verdict.ok is ok
    assert reason in verdict.reason


def test_a_tensor_past_the_engines_pixel_addressing_stays_on_the_cpu(monkeypatch):
    """pixel_address.sv's DSP operands are 27-bit: a tensor of MAX_PIXELS pixels or more (batch x spatial) is
    refused with its name and count (the limit lowered so a small graph reaches it)."""
    import dataclasses
    g = _conv_graph(size=8)
    assert fpga.check(g.nodes["c"], g, {}).ok
    monkeypatch.setattr(fpga, "LIMITS", dataclasses.replace(fpga.LIMITS, max_pixels=64))
    verdict = fpga.check(g.nodes["c"], g, {})
    assert not verdict.ok and "holds 64 pixels" in verdict.reason and "fewer than 64" in verdict.reason


def test_board_catalog_is_complete():
    assert set(BOARDS) == {"pynq-z2", "ultra96v2", "kv260", "zcu104", "zcu102", "alveo-u250"}
    z = board("zcu104")
    assert (z.dsp, z.bram36, z.uram) == (1728, 312, 96)
    assert board("pynq-z2").int8_macs_per_dsp == 1 and z.int8_macs_per_dsp == 2
    with pytest.raises(KeyError, match="known boards"):
        board("nope")


def test_node_cost_counts_macs_before_pooling():
    g = _conv_graph(cin=8, cout=16, size=8, pool=2)
    cost = node_cost(g.nodes["c"], g)
    assert cost.macs == 16 * 8 * 8 * 8 * 9
    assert cost.act_bytes == 8 * 64 + 16 * 16          # int8 input and pooled output
    assert cost.weight_bytes == 16 * 8 * 9


def test_faster_clocks_and_bigger_engines_are_faster():
    from fpga_runtime.abi import EngineConfig
    g = _conv_graph(cin=64, cout=64, size=32)
    nodes = list(g.nodes.values())
    times = {b: CostModel(board(b)).region(nodes, g, 0).fpga_layers_s for b in ("pynq-z2", "zcu104")}
    assert times["pynq-z2"] > times["zcu104"]
    big_cfg = EngineConfig(vec=32, pe_rows=32, clock_mhz=300)
    big = CostModel(board("zcu104"), big_cfg).region(nodes, g, 0)
    assert big.fpga_layers_s < times["zcu104"]
    from fpga_runtime.cycle_model import layer_cycles
    from partitioner.engine.geometry import layer_shape
    expected = sum(layer_cycles(layer_shape(n, g, big_cfg), big_cfg) for n in nodes if layer_shape(n, g, big_cfg))
    assert big.fpga_compute_s == pytest.approx(expected / 300e6)      # the RTL-fitted cycle model, 300 MHz


@pytest.mark.parametrize("k,pad,ok,reason", [
    (2, 0, True, ""),
    (4, 1, False, "transposed conv kernel [4, 4] stride [2, 2]: the engine runs kernel = stride = 2"),
])
def test_transposed_conv_support_and_cost(k, pad, ok, reason):
    """A 2x2 stride-2 transposed conv runs on the engine and costs one MAC per input channel per output;
    another one stays on the CPU with its reason."""
    n = Net(channels=8, size=6)
    g = run_fusion(ir_of(n.model([n.conv_transpose("x", "up", k=k, pad=pad)])))
    verdict = fpga.check(g.nodes["up"], g, {})
    assert verdict.ok is ok and reason in verdict.reason
    if ok:
        assert node_cost(g.nodes["up"], g).macs == 8 * 8 * 12 * 12


@pytest.mark.parametrize("act,ok", [("Relu", True), ("Sigmoid", False)])
def test_l2_normalization_needs_zero_padding_channels_from_its_producer(act, ok):
    """The engine sums squares over padded channels: a ReLU conv leaves them 0, a sigmoid conv 0.5."""
    n = Net(channels=6, size=4)
    x = n.node(act, [n.conv("x", "c")], "act")
    n.node("LpNormalization", [x], "l2", axis=1, p=2)
    g = run_fusion(ir_of(n.model(["l2"])))
    verdict = fpga.check(g.nodes["l2"], g, {"c": True})
    assert verdict.ok is ok
    assert ok or "padding channels may not be zero" in verdict.reason
    assert fpga.check(g.nodes["l2"], g, {"c": False}).ok         # a host-written input has zero padding


def _fallback_reasons(model) -> dict[str, str]:
    from fpga_runtime.boards import board as board_by_name
    from partitioner.placement.partition import partition
    g = run_fusion(ir_of(model))
    return partition(g, fpga, CostModel(board_by_name("zcu104")), True).fallbacks


def test_a_global_average_pool_whose_sum_could_pass_27_bits_stays_on_the_cpu():
    """Its sum, 128 per pixel at most, is the requantisation's input (ABI v3: 27 bits): 524,287 pixels at most."""
    for size, ok in ((724, True), (725, False)):
        n = Net(channels=1, size=size)
        g = ir_of(n.model([n.node("GlobalAveragePool", ["x"], "gap")]))
        verdict = fpga.check(g.nodes["gap"], g, {})
        assert verdict.ok is ok, verdict
        assert ok or "725x725 map's sum could pass the engine's 27-bit requantisation input" in verdict.reason


def test_every_cpu_fallback_names_what_this_node_has_that_the_engine_cannot_take():
    """Not what the engine supports in general: the value, attribute or shape of this node (each between convs, so
    it is a compute node, not post-processing)."""
    n = Net(channels=8, size=8)
    a = n.conv("x", "a")
    n.node("Concat", [a, n.conv("x", "b")], "cat_h", axis=2)
    n.node("Add", [a, n.node("ReduceMean", [a], "mean", axes=[2, 3], keepdims=0)], "bcast")
    n.node("PRelu", [a, n.const("w_slope", np.linspace(0, 0.5, 8).astype(np.float32))], "prelu_w")
    n.node("Resize", [a, "", n.const("sc", np.array([1, 1, 2, 2], np.float32))], "bilinear", mode="linear")
    n.nodes.append(__import__("onnx").helper.make_node("MaxPool", [a], ["pooled", "where"], name="with_indices",
                                                       kernel_shape=[2, 2], strides=[2, 2]))
    model = n.model([n.conv(t, f"after_{t}") for t in ("cat_h", "bcast", "prelu_w", "bilinear", "pooled")])
    why = _fallback_reasons(model)
    assert why["cat_h"] == "it joins on axis 2, not the channels (axis 1)"
    assert why["bcast"].startswith("it broadcasts [1, 8, 8, 8] + [1, 8]")
    assert "its slope [8] varies along more than the channels" in why["prelu_w"]
    assert why["bilinear"].startswith("mode 'linear'")
    assert why["with_indices"].startswith("it also outputs the indices")
    assert not any(r.startswith("only ") for r in why.values()), why
