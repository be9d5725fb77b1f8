"""Descriptor geometry and buffer sizing, in one place: the layer a fused node becomes (its output size, the
geometry fields of its descriptor, its shape for the cycle model) and the sizes of the buffers the generated
engine needs for a build's layers. The cost model, the exploration, the compiler and the code generator all
read them here."""
from __future__ import annotations

import math
from dataclasses import replace

from fpga_runtime import engine_parts, window_path
from fpga_runtime.abi import Descriptor, EngineConfig, Flag, Op
from fpga_runtime.cycle_model import LayerShape, taps_inside
from fpga_runtime.winograd import MAX_IN_C as WINOGRAD_MAX_IN_C
from partitioner.ir.graph import ConvForm, Graph, Node, OpKind, Pool, ResidualAdd
from partitioner.ir.op_facts import pool_of, takes_table


def conv_output_hw(node: Node, graph: Graph) -> tuple[int, int]:
    """A fused conv's own output size, before any fused pooling."""
    spec = node.conv
    x = graph.tensors[node.inputs[0]].shape
    if spec.form is ConvForm.DENSE:
        return 1, 1
    if spec.form is ConvForm.TRANSPOSED:          # per output phase: a 1x1 conv over the input
        return x[2], x[3]
    h = (x[2] * spec.upsample + spec.pads[0] + spec.pads[2] - spec.dilations[0] * (spec.kernel[0] - 1) - 1) \
        // spec.strides[0] + 1
    w = (x[3] * spec.upsample + spec.pads[1] + spec.pads[3] - spec.dilations[1] * (spec.kernel[1] - 1) - 1) \
        // spec.strides[1] + 1
    return h, w


def cpu_fed_convs(graph: Graph, nodes) -> set[str]:
    """The convs among the engine's `nodes` whose input the host writes (no engine layer makes it) and nothing
    else on the engine reads (no other layer, no fused residual): their input may be written column-packed
    (`column_taps`)."""
    made = {t for n in nodes for t in graph.nodes[n].outputs}
    readers: dict[str, int] = {}
    for n in nodes:
        node = graph.nodes[n]
        residual = [s.tensor for s in node.conv.epilogue if isinstance(s, ResidualAdd)] if node.conv else []
        for t in list(dict.fromkeys(node.inputs)) + residual:
            readers[t] = readers.get(t, 0) + 1
    return {n for n in nodes if graph.nodes[n].kind is OpKind.FUSED_CONV and graph.nodes[n].inputs[0] not in made
            and readers[graph.nodes[n].inputs[0]] == 1}


def column_taps(node: Node, graph: Graph, cfg: EngineConfig, cpu_fed: bool) -> int:
    """Kernel columns a conv takes as input channels (1: none). A conv whose input the host writes (a frame's
    first conv: 3 channels in a 16-lane beat) gets it column-packed: each pixel with the channels of its kw - 1
    right-hand neighbours beside its own (TensorView.column_taps), so one beat holds a kernel row's taps and the
    conv becomes a kh x 1 conv over kw times the channels, where that takes fewer beats per output."""
    spec = node.conv
    if (not cpu_fed or node.kind is not OpKind.FUSED_CONV or spec is None or spec.form is not ConvForm.CONV
            or spec.group != 1 or spec.dilations != (1, 1) or spec.upsample != 1 or spec.kernel[1] == 1):
        return 1
    x = graph.tensors[node.inputs[0]].shape
    kw = spec.kernel[1]
    return kw if len(x) == 4 and cfg.padded(kw * x[1]) < kw * cfg.padded(x[1]) else 1


def packed_width(node: Node, graph: Graph) -> int:
    """Columns of a column-packed input: one per kernel position along the padded row."""
    spec = node.conv
    return graph.tensors[node.inputs[0]].shape[3] + spec.pads[1] + spec.pads[3] - spec.kernel[1] + 1


def conv_descriptor(node: Node, graph: Graph, cfg: EngineConfig, cpu_fed: bool = False) -> Descriptor | None:
    """The geometry fields of the descriptor a fused (non-dense) conv compiles to: what decides its RTL path."""
    spec = node.conv
    if node.kind is not OpKind.FUSED_CONV or spec is None or spec.form is ConvForm.DENSE:
        return None
    x = graph.tensors[node.inputs[0]].shape
    h, w = conv_output_hw(node, graph)
    taps = column_taps(node, graph, cfg, cpu_fed)
    residual = any(isinstance(step, ResidualAdd) for step in spec.epilogue)
    pool = any(isinstance(step, Pool) for step in spec.epilogue)
    flags = (Flag.DEPTHWISE * (spec.group > 1) | Flag.RESIDUAL * residual | Flag.UPSAMPLE2 * (spec.upsample > 1)
             | Flag.POOL * pool)
    y = graph.tensors[node.outputs[0]].shape
    if spec.form is ConvForm.TRANSPOSED:          # one of its four phases
        return Descriptor(op=Op.CONV, flags=int(flags), batch=x[0], in_h=x[2], in_w=x[3], in_c=cfg.padded(x[1]),
                          out_c=cfg.padded(y[1]), conv_h=h, conv_w=w, out_h=h, out_w=w, out_step=2)
    if taps > 1:
        return Descriptor(op=Op.CONV, flags=int(flags), batch=x[0], in_h=x[2], in_w=packed_width(node, graph),
                          in_c=cfg.padded(taps * x[1]), out_c=cfg.padded(y[1]), conv_h=h, conv_w=w, kh=spec.kernel[0],
                          kw=1, stride_h=spec.strides[0], stride_w=spec.strides[1], dil_h=1, dil_w=1,
                          pad_t=spec.pads[0])
    return Descriptor(op=Op.CONV, flags=int(flags), batch=x[0], in_h=x[2], in_w=x[3], in_c=cfg.padded(x[1]),
                      out_c=cfg.padded(y[1]),
                      conv_h=h, conv_w=w, kh=spec.kernel[0], kw=spec.kernel[1], stride_h=spec.strides[0],
                      stride_w=spec.strides[1], dil_h=spec.dilations[0], dil_w=spec.dilations[1], pad_t=spec.pads[0])


def winograd_problem(node: Node, graph: Graph, cfg: EngineConfig) -> str | None:
    """Why the engine `cfg` cannot run `node` as an integer Winograd layer (`partition --winograd`), or None: on an
    engine with a window path, what its RTL Winograd unit takes (`window_path.winograd_problem`)."""
    spec = node.conv
    if node.kind is not OpKind.FUSED_CONV or spec is None or spec.form is not ConvForm.CONV:
        return "not a standard conv"
    if spec.kernel != (3, 3) or spec.strides != (1, 1) or spec.dilations != (1, 1) or spec.group != 1:
        return "not a 3x3 stride-1 undilated dense conv"
    if spec.upsample != 1:
        return "reads its input through x2 upsampling"
    if cfg.padded(graph.tensors[node.inputs[0]].shape[1]) > WINOGRAD_MAX_IN_C:
        return f"more than {WINOGRAD_MAX_IN_C} input channels (int32 accumulators)"
    if cfg.pixels < 2:               # no window path, no Winograd unit: the build runs on reference and csim only
        return None
    problem = window_path.winograd_problem(winograd_descriptor(node, graph, cfg), cfg)
    return None if problem is None else f"the RTL engine's Winograd unit: {problem}"


def winograd_shape(node: Node, graph: Graph, cfg: EngineConfig) -> LayerShape:
    """The eligible conv's shape as a Winograd layer on `cfg` (with the window it then takes: four rows per row of
    tiles)."""
    shape = replace(layer_shape(node, graph, cfg), winograd=True)
    if cfg.pixels < 2:
        return shape
    return shape.on_window_path(winograd_descriptor(node, graph, cfg), replace(cfg, winograd=True))


def winograd_descriptor(node: Node, graph: Graph, cfg: EngineConfig) -> Descriptor:
    """The conv's descriptor geometry flagged WINOGRAD."""
    d = conv_descriptor(node, graph, cfg)
    return replace(d, flags=d.flags | Flag.WINOGRAD)


def layer_shape(node: Node, graph: Graph, cfg: EngineConfig, cpu_fed: bool = False) -> LayerShape | None:
    """The engine layer a node becomes (None: a concat, which costs no layer); `cpu_fed`: the host writes its
    input (`cpu_fed_convs`), which a conv may then read column-packed."""
    y = graph.tensors[node.outputs[0]].shape
    if node.kind is OpKind.CONCAT:
        return None
    if node.kind is OpKind.FUSED_CONV:
        x = graph.tensors[node.inputs[0]].shape
        h, w = conv_output_hw(node, graph)
        spec = node.conv
        inside = 1.0
        if spec.form is ConvForm.TRANSPOSED:
            shape = LayerShape(Op.CONV, x[0], cfg.padded(x[1]), cfg.padded(y[1]), 1, 1, h, w, phases=4)
            return shape.on_window_path(conv_descriptor(node, graph, cfg), cfg)
        if spec.form is ConvForm.CONV:
            inside = (taps_inside(h, spec.kernel[0], spec.strides[0], spec.pads[0], spec.dilations[0],
                                  x[2] * spec.upsample)
                      * taps_inside(w, spec.kernel[1], spec.strides[1], spec.pads[1], spec.dilations[1],
                                    x[3] * spec.upsample))
        residual = any(isinstance(step, ResidualAdd) for step in spec.epilogue)
        taps = column_taps(node, graph, cfg, cpu_fed)
        if taps > 1:                              # the kernel's columns in the channels: no padding along a row
            inside = taps_inside(h, spec.kernel[0], spec.strides[0], spec.pads[0], 1, x[2])
            shape = LayerShape(Op.CONV, x[0], cfg.padded(taps * x[1]), cfg.padded(y[1]), spec.kernel[0], 1, h, w,
                               False, residual, inside=inside)
        else:
            shape = LayerShape(Op.CONV, x[0], cfg.padded(x[1]), cfg.padded(y[1]), spec.kernel[0], spec.kernel[1], h,
                               w, spec.group > 1, residual, inside=inside)
        shape = replace(shape, out_pixels=y[0] * math.prod(y[2:]))     # after a fused pool
        desc = conv_descriptor(node, graph, cfg, cpu_fed)
        return shape if desc is None else shape.on_window_path(desc, cfg)
    if node.kind is OpKind.GLOBAL_AVG_POOL:
        x = graph.tensors[node.inputs[0]].shape
        return LayerShape(Op.GLOBAL_AVG_POOL, x[0], cfg.padded(x[1]), cfg.padded(y[1]), 1, 1, x[2], x[3],
                          out_pixels=x[0])
    if node.kind is OpKind.MAXPOOL:                 # a cycle and a beat per window tap
        kh, kw = pool_of(node).kernel
        return LayerShape(Op.MAXPOOL, y[0], cfg.padded(y[1]), cfg.padded(y[1]), kh, kw, y[2], y[3])
    op = {OpKind.ADD: Op.ADD, OpKind.MUL: Op.SCALE, OpKind.LP_NORMALIZATION: Op.L2NORM}.get(node.kind, Op.COPY)
    return LayerShape(op, y[0], cfg.padded(y[1]), cfg.padded(y[1]), 1, 1, y[2], y[3])


# Floors that also cover the golden cases (kernels up to 7x7 over 64 channels, rows up to 32 wide), so the
# build's own engine can replay them (make csim-gcc, Vitis csim).
GOLDEN_WIDTH = 32
GOLDEN_TILE_INPUTS = 7 * 7 * 64


def engine_limits(descriptors: list[Descriptor], config: EngineConfig) -> dict[str, int]:
    """Sizes the generated engine needs for this build's layers."""
    widths = [d.conv_w for d in descriptors if d.op == Op.CONV] + [GOLDEN_WIDTH]
    pooled = [d.conv_w for d in descriptors if d.op == Op.CONV and d.flags & Flag.POOL] + [GOLDEN_WIDTH]
    row_bytes = config.pe_rows * config.vec
    wtiles = [window_path.min_weight_rows(d, config) * row_bytes for d in descriptors
              if d.op == Op.CONV and not d.flags & Flag.DEPTHWISE] + [GOLDEN_TILE_INPUTS * config.pe_rows]
    rows = max(config.weight_rows, -(-max(wtiles) // row_bytes))
    dw = config.depthwise_rows
    return {
        "max_width": max(widths),
        "wbuf_bytes": rows * row_bytes,
        "pool_width": max(pooled),
        "weight_rows": rows,
        "window_words": config.window_words or window_path.window_words_for(descriptors, config),
        "depthwise_rows": window_path.wants_depthwise_rows(descriptors, config) if dw is None else dw,
        "winograd": config.winograd or any(d.flags & Flag.WINOGRAD for d in descriptors),
    }


def sized_buffers(graph: Graph, nodes: list[str], cfg: EngineConfig) -> EngineConfig:
    """`cfg` with the weight RAM and input window the build's code generator will size for these layers
    (`engine_limits`), so the cost and resource models see the engine the build gets."""
    fed = cpu_fed_convs(graph, nodes)
    descriptors = [d for d in (conv_descriptor(graph.nodes[n], graph, cfg, n in fed) for n in nodes) if d is not None]
    if cfg.winograd:                     # what the layers that may become Winograd need (16 weight taps)
        descriptors += [winograd_descriptor(graph.nodes[n], graph, cfg) for n in nodes
                        if winograd_problem(graph.nodes[n], graph, cfg) is None]
    limits = engine_limits(descriptors, cfg)
    cfg = replace(cfg, weight_rows=limits["weight_rows"], window_words=limits["window_words"],
                  depthwise_rows=limits["depthwise_rows"], winograd=limits["winograd"])
    # the optional parts (engine_parts.py) as the build will trim them: the element-wise layers by their kind
    kinds = {graph.nodes[n].kind for n in nodes}
    residual = any(isinstance(step, ResidualAdd) for n in nodes if graph.nodes[n].conv is not None
                   for step in graph.nodes[n].conv.epilogue)
    wants = {"lane_products": OpKind.LP_NORMALIZATION in kinds
             or any(engine_parts.needs_lane_products(d, cfg) for d in descriptors),
             "residual_stage": residual or bool(kinds & {OpKind.ADD, OpKind.MUL}),
             "activation_tables": any(graph.nodes[n].conv is not None and takes_table(graph.nodes[n].conv.epilogue)
                                      for n in nodes)}
    return replace(cfg, **{p.field: wants[p.field] for p in engine_parts.PARTS})
