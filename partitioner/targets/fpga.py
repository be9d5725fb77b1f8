"""The FPGA engine target: which fused nodes the engine runs, as limits (data) plus one predicate per op kind.

`check` is asked once per node in topological order; `on_fpga` says where each earlier node was placed,
which a channel concat needs (it is free only when every input is written by the engine).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from onnx import TensorProto

from fpga_runtime.abi import MAX_PIXELS
from partitioner.engine.layout import layout_conflicts as engine_layout_conflicts
from partitioner.ir.graph import Activation, ActKind, ConvForm, Graph, Node, OpKind, Pool, ResidualAdd
from partitioner.ir.op_facts import (
    EPILOGUE_ACTIVATION_KINDS,
    attr_text,
    gate_operands,
    pool_of,
    transposed_conv_problem,
    upsample_factor,
)
from partitioner.targets import YES, Verdict, no

NAME = "fpga"


@dataclass(frozen=True)
class FpgaLimits:
    max_kernel: int = 7
    strides: frozenset[int] = frozenset({1, 2})
    max_dilation: int = 8
    max_channels: int = 4096
    max_dense_inputs: int = 65536
    max_products: int = 65536  # int8 products per output: the int32 accumulator keeps half its range for the bias
    max_spatial: int = 2048
    # a global average pool's sum, 128 per pixel at most, must fit the requantisation's 27 bits (ABI v3)
    max_pool_pixels: int = (1 << 19) - 1
    max_pixels: int = MAX_PIXELS      # batch x rows x columns of a tensor: the RTL's 27-bit address products
    pool_kernels: frozenset[int] = frozenset({2, 3})
    pool_strides: frozenset[int] = frozenset({1, 2})
    dtypes: frozenset[int] = frozenset({TensorProto.FLOAT})


LIMITS = FpgaLimits()


def _tensors_ok(node: Node, graph: Graph) -> Verdict:
    for name in node.all_inputs + node.outputs:
        t = graph.tensors[name]
        if t.shape is not None and 0 in t.shape and not t.is_const:     # an empty roi or scales is no data
            return no(f"tensor {t.onnx_name!r} {list(t.shape)} is empty (a zero dimension): nothing for the engine "
                      "to compute; onnxruntime runs it")
    for name in node.inputs[:1] + node.outputs[:1]:      # a second output (a pool's indices) has its own rule
        t = graph.tensors[name]
        if not t.is_static:
            return no(_dynamic_reason(t, graph))
        if t.elem_type not in LIMITS.dtypes:
            return no(f"tensor {t.onnx_name!r} is {t.dtype_name}; the engine takes float32 models (quantised to int8)")
        if len(t.shape) >= 3:
            pixels = int(np.prod([t.shape[0], *t.shape[2:]], dtype=np.int64))
            if pixels >= LIMITS.max_pixels:
                return no(f"tensor {t.onnx_name!r} {list(t.shape)} holds {pixels:,} pixels (batch x spatial); the "
                          f"engine addresses fewer than {LIMITS.max_pixels:,} per tensor")
    return YES


def _dynamic_reason(t, graph: Graph) -> str:
    """Point at --input-shape only where a model input really is dynamic; otherwise the shape depends on data."""
    dynamic = [graph.tensors[i].onnx_name for i in graph.inputs if not graph.tensors[i].is_static]
    if dynamic:
        return (f"dynamic dimension in {t.onnx_name!r} {t.shape}: pin the model's dynamic input(s) {dynamic} "
                "with --input-shape")
    return (f"the shape of {t.onnx_name!r} ({t.shape}) is not static although every model input is: it depends "
            "on data computed at run time (e.g. NonZero, TopK or a data-dependent Resize)")


def _epilogue_ok(steps: tuple) -> Verdict:
    """Order the engine applies: activation?, residual add?, activation?, max pool?"""
    kinds = "".join("a" if isinstance(s, Activation) else "r" if isinstance(s, ResidualAdd) else "p"
                    for s in steps)
    allowed = {"", "a", "r", "ar", "ra", "ara", "p", "ap", "rp", "arp", "rap", "arap"}
    if any(isinstance(s, Activation) and s.kind is ActKind.PRELU for s in steps[1:]):
        return no("a per-channel PRelu after another epilogue step: the requantiser applies it, first")
    return YES if kinds in allowed else no(f"epilogue order {kinds!r} is not one the engine applies")


def _pool_ok(pool: Pool) -> Verdict:
    if pool.kernel[0] != pool.kernel[1] or pool.kernel[0] not in LIMITS.pool_kernels:
        return no(f"max pool kernel {pool.kernel} not in {sorted(LIMITS.pool_kernels)}")
    if pool.strides[0] != pool.strides[1] or pool.strides[0] not in LIMITS.pool_strides:
        return no(f"max pool stride {pool.strides} not in {sorted(LIMITS.pool_strides)}")
    return YES


def _fused_conv(node: Node, graph: Graph, on_fpga: dict[str, bool]) -> Verdict:
    spec = node.conv
    x = graph.tensors[node.inputs[0]].shape
    y = graph.tensors[node.outputs[0]].shape
    for t in (spec.weight, spec.bias):
        if t and not np.all(np.isfinite(graph.const(t))):
            return no(f"{'weights' if t == spec.weight else 'bias'} contain NaN or infinity: nothing to quantise")
    if spec.form is ConvForm.DENSE:
        if x[1] > LIMITS.max_dense_inputs or y[1] > LIMITS.max_channels:
            return no(f"dense layer {x[1]}->{y[1]} exceeds {LIMITS.max_dense_inputs}->{LIMITS.max_channels}")
        return _epilogue_ok(spec.epilogue)
    if max(spec.kernel) > LIMITS.max_kernel:
        return no(f"kernel {spec.kernel} larger than {LIMITS.max_kernel}x{LIMITS.max_kernel}")
    if spec.strides[0] != spec.strides[1] or spec.strides[0] not in LIMITS.strides:
        return no(f"stride {spec.strides} not in {sorted(LIMITS.strides)}")
    if spec.dilations[0] != spec.dilations[1] or spec.dilations[0] > LIMITS.max_dilation:
        return no(f"dilation {spec.dilations} beyond {LIMITS.max_dilation}")
    cin, cout = x[1], y[1]
    if spec.group != 1 and not (spec.group == cin == cout):
        return no(f"grouped conv (group={spec.group}, {cin}->{cout}) is neither standard nor depthwise")
    if max(cin, cout) > LIMITS.max_channels:
        return no(f"{max(cin, cout)} channels exceed {LIMITS.max_channels}")
    products = cin if spec.form is ConvForm.TRANSPOSED else spec.kernel[0] * spec.kernel[1] * (1 if spec.group > 1
                                                                                                    else cin)
    if products > LIMITS.max_products:
        return no(f"{products} int8 products per output ({spec.kernel[0]}x{spec.kernel[1]}x{cin}) could overflow "
                  f"the engine's int32 accumulator (limit {LIMITS.max_products})")
    if max(x[2] * spec.upsample, x[3] * spec.upsample) > LIMITS.max_spatial:
        return no(f"spatial size {x[2:]} exceeds {LIMITS.max_spatial}")
    if any(p >= (k - 1) * d + 1 for p, k, d in zip(spec.pads, spec.kernel * 2, spec.dilations * 2)):
        return no(f"padding {spec.pads} not smaller than the kernel's reach")
    for step in spec.epilogue:
        if isinstance(step, Pool) and not (v := _pool_ok(step)).ok:
            return v
    return _epilogue_ok(spec.epilogue)


def _maxpool(node: Node, graph: Graph, on_fpga: dict[str, bool]) -> Verdict:
    pool = pool_of(node)
    shape = graph.tensors[node.inputs[0]].shape
    if len(shape) != 4:
        return no(f"its input is {len(shape)}-D {list(shape)}; the engine pools 2-D maps of NCHW tensors")
    if pool is None:
        if len([o for o in node.outputs if o]) > 1:
            return no("it also outputs the indices of the maxima, which the engine does not compute")
        if any(d != 1 for d in node.attr("dilations", [1, 1])):
            return no(f"dilations {list(node.attr('dilations'))}: the engine pools without dilation")
        if node.attr("storage_order", 0):
            return no("storage_order 1 (column-major indices)")
        return no(f"kernel {list(node.attr('kernel_shape', []))} is not a 2-D window")
    return _pool_ok(pool)


def _add(node: Node, graph: Graph, on_fpga: dict[str, bool]) -> Verdict:
    shapes = [graph.tensors[t].shape for t in node.inputs]
    const = [graph.tensors[t].onnx_name for t in node.inputs if graph.const(t) is not None]
    if const:
        return no(f"it adds the constant {const[0]!r} {list(graph.tensors[node.inputs[-1]].shape or [])} that no "
                  "conv before it could take as a bias; the engine adds two activations")
    if len(set(shapes)) != 1:
        return no(f"it broadcasts {' + '.join(str(list(x)) for x in shapes)}; the engine adds two activations of "
                  "one shape")
    if len(shapes[0]) != 4:
        return no(f"its operands are {len(shapes[0])}-D {list(shapes[0])}; the engine adds NCHW activations")
    return YES


def _global_avg_pool(node: Node, graph: Graph, on_fpga: dict[str, bool]) -> Verdict:
    x = graph.tensors[node.inputs[0]].shape
    if len(x) != 4:
        return no(f"its input is {len(x)}-D {list(x)}; the engine pools NCHW tensors")
    if x[2] * x[3] > LIMITS.max_pool_pixels:
        return no(f"a {x[2]}x{x[3]} map's sum could pass the engine's 27-bit requantisation input (at most "
                  f"{LIMITS.max_pool_pixels:,} pixels)")
    return YES


def _scale(node: Node, graph: Graph, on_fpga: dict[str, bool]) -> Verdict:
    if gate_operands(node, graph) is None:
        const = [graph.tensors[t].onnx_name for t in node.inputs if graph.const(t) is not None]
        shapes = " x ".join(str(list(graph.tensors[t].shape or [])) for t in node.inputs)
        if const:
            return no(f"it multiplies by the constant {const[0]!r} ({shapes}) that no conv before or after it could "
                      "take into its weights")
        return no(f"it multiplies {shapes}; the engine scales an activation only by a per-channel [N, C, 1, 1] "
                  "gate (squeeze-and-excitation)")
    return YES


def _resize(node: Node, graph: Graph, on_fpga: dict[str, bool]) -> Verdict:
    if upsample_factor(node, graph) == 2:
        return YES
    mode = attr_text(node.attr("mode", "nearest"))
    x, y = graph.tensors[node.inputs[0]].shape, graph.tensors[node.outputs[0]].shape
    if mode != "nearest":
        return no(f"mode {mode!r}: the engine upsamples nearest-neighbour by 2")
    return no(f"it resizes {list(x)} to {list(y or [])}, not a nearest-neighbour x2 of both sides (or the "
              f"coordinate mode {attr_text(node.attr('coordinate_transformation_mode', 'half_pixel'))!r} does "
              "not replicate pixels)")


def _concat(node: Node, graph: Graph, on_fpga: dict[str, bool]) -> Verdict:
    if node.concat is None:
        shapes = [graph.tensors[t].shape for t in node.inputs]
        if any(s is None or len(s) != 4 for s in shapes):
            return no(f"it joins {', '.join(str(list(s or [])) for s in shapes)}: the engine concatenates NCHW "
                      "tensors")
        return no(f"it joins on axis {node.attr('axis')}, not the channels (axis 1)")
    for t in node.inputs:
        p = graph.producer(t)
        if p is None or not on_fpga.get(p.name, False):
            return no(f"input {graph.tensors[t].onnx_name!r} is not written by the engine, so the concat is not free")
    return YES


_ZERO_AT_ZERO = {ActKind.RELU, ActKind.RELU6, ActKind.LEAKY_RELU, ActKind.SILU, ActKind.HARD_SWISH, ActKind.MISH,
                 ActKind.TANH, ActKind.ELU, ActKind.SELU, ActKind.GELU, ActKind.GELU_TANH, ActKind.PRELU}


def _writes_zero_padding(node: Node) -> bool:
    """A conv whose padding channels come out 0: zero weights and bias give 0, and each activation keeps 0."""
    if node.kind is not OpKind.FUSED_CONV:
        return False
    for step in node.conv.epilogue:
        if isinstance(step, ResidualAdd):
            return False
        if isinstance(step, Activation) and step.kind not in _ZERO_AT_ZERO and not (
                step.kind is ActKind.CLIP and (step.lo is None or step.lo <= 0) and (step.hi is None or step.hi >= 0)):
            return False
    return True


def _l2_normalization(node: Node, graph: Graph, on_fpga: dict[str, bool]) -> Verdict:
    """The engine sums squares over every physical channel, padding included, so those must hold zero: a
    host-written input's do, and a conv's whose activations keep 0."""
    x = graph.tensors[node.inputs[0]].shape
    if node.attr("p", 2) != 2 or node.attr("axis", 1) % 4 != 1 or len(x) != 4:
        return no(f"p={node.attr('p', 2)} over axis {node.attr('axis', 1)} of a {len(x)}-D tensor: the engine "
                  "normalises L2 over the channels of NCHW tensors")
    source = graph.producer(node.inputs[0])
    if source is not None and on_fpga.get(source.name, False) and not _writes_zero_padding(source):
        return no(f"its input comes from {source.op_type} {source.label!r}, whose padding channels may not be zero "
                  "(the engine's sum of squares covers them)")
    if x[1] > LIMITS.max_channels:
        return no(f"{x[1]} channels exceed {LIMITS.max_channels}")
    return YES


def _unformed_transposed(node: Node, graph: Graph, on_fpga: dict[str, bool]) -> Verdict:
    """A ConvTranspose the conv-forming pass left alone; say why."""
    return no(transposed_conv_problem(node, graph) or "transposed conv not formed")


RULES: dict[OpKind, Callable[[Node, Graph, dict[str, bool]], Verdict]] = {
    OpKind.FUSED_CONV: _fused_conv,
    OpKind.MAXPOOL: _maxpool,
    OpKind.ADD: _add,
    OpKind.RESIZE: _resize,
    OpKind.CONCAT: _concat,
    OpKind.GLOBAL_AVG_POOL: _global_avg_pool,
    OpKind.MUL: _scale,
    OpKind.CONV_TRANSPOSE: _unformed_transposed,
    OpKind.LP_NORMALIZATION: _l2_normalization,
}

_WHY_NOT = {
    OpKind.CONV: "convolution with non-constant weights",
    OpKind.BATCHNORM: "BatchNormalization not after a conv (nothing to fold it into)",
}


def _prelu_reason(node: Node, graph: Graph) -> str:
    """Why a PRelu was not made an engine layer (prelu.py takes a scalar or per-channel slope of an NCHW tensor)."""
    x = graph.tensors[node.inputs[0]].shape
    slope = graph.tensors[node.inputs[1]] if len(node.inputs) > 1 else None
    if slope is None or slope.data is None:
        return "its slope is computed at run time, not a constant"
    if x is None or len(x) not in (2, 4):
        return f"its input is {len(x or [])}-D; the engine's PRelu is per channel of an NCHW or [N, C] tensor"
    if not np.all(np.isfinite(slope.data)):
        return "its slope holds NaN or infinity"
    return (f"its slope {list(slope.shape)} varies along more than the channels of {list(x)} (a [C] slope on NCHW "
            "broadcasts over the width): the engine takes a scalar or a [C, 1, 1] slope")


def _matmul_reason(node: Node, graph: Graph) -> str:
    """Why a Gemm/MatMul was not made a dense layer (conv_form.py takes constant weights and a 2-D input)."""
    if len(node.inputs) > 1 and graph.const(node.inputs[1]) is None:
        return ("both operands are computed at run time (attention's q.k or attn.v): the engine multiplies by "
                "constant weights")
    x = graph.tensors[node.inputs[0]].shape
    if x is None or len(x) != 2:
        return (f"its input is {len(x or [])}-D {list(x or [])}: the engine's dense layer takes [N, K] (a batched "
                "or per-token MatMul is not one)")
    if node.kind is OpKind.GEMM and node.attr("transA", 0):
        return "transA=1: the engine's dense layer reads its input untransposed"
    return "its bias is computed at run time, not a constant"


def check(node: Node, graph: Graph, on_fpga: dict[str, bool]) -> Verdict:
    rule = RULES.get(node.kind)
    if rule is None and node.op_type == "PRelu" and node.domain in ("", "ai.onnx"):
        return no(_prelu_reason(node, graph))
    if rule is None and node.kind in (OpKind.GEMM, OpKind.MATMUL):
        return no(_matmul_reason(node, graph))
    if rule is None:
        return no(_WHY_NOT.get(node.kind, f"{node.op_type} is not an engine op"
                               + (" (only fused into a conv)" if node.kind in EPILOGUE_ACTIVATION_KINDS else "")))
    v = _tensors_ok(node, graph)
    return rule(node, graph, on_fpga) if v.ok else v


def layout_conflicts(graph: Graph, nodes: list[str], config) -> dict[str, str]:
    """Nodes (with the reason) whose operands the engine's channel layout cannot place as they need, among the
    nodes going to the FPGA: the layout planner knows, so the target asks it."""
    return engine_layout_conflicts(graph, nodes, config)
