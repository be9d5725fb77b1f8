"""ONNX import: load, check, pin shapes, normalise the opset, infer shapes, fold constants, build the IR.

Large initializers are set aside before the checker, the opset converter and shape inference run (they
only need types and shapes of weights), which keeps a 250 MB model's import to well under a second.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import networkx as nx
import numpy as np
import onnx
from onnx import numpy_helper, shape_inference, version_converter

from fpga_runtime.checking.frames import pinned_shape_hint
from partitioner.errors import ModelError
from partitioner.frontend.constant_folding import BIG_ELEMENTS, fold_constants
from partitioner.frontend.contrib_ops import probe_output_types, runs_on_cpu
from partitioner.frontend.float16 import model_precision, widen_to_float32
from partitioner.frontend.onnx_walk import dims_of, node_label, outer_scope_names
from partitioner.frontend.opset_downgrade import downgrade, spell_retired_ops
from partitioner.ir.graph import Graph, Node, OpKind, Tensor
from partitioner.ir.names import NameTable

CANONICAL_OPSET = 17
_KNOWN_DOMAINS = ("", "ai.onnx", "ai.onnx.ml")


@dataclass
class ImportResult:
    graph: Graph
    model: onnx.ModelProto                       # the normalised skeleton (big weights stripped)
    weights: dict[str, onnx.TensorProto] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    folded: list[str] = field(default_factory=list)   # ONNX nodes evaluated at import (constant subgraphs)
    precision: str = "float32"                   # the model's own: float16 and bfloat16 models are widened


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def load_model(path: str | os.PathLike) -> onnx.ModelProto:
    path = Path(path)
    if not path.is_file():
        raise ModelError(f"{path}: no such file")
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as exc:
        raise ModelError(f"{path}: not a readable ONNX file (corrupt or truncated): {_first_line(exc)}") from None
    base = path.resolve().parent
    for t in onnx.external_data_helper._get_all_tensors(model):
        if t.data_location != onnx.TensorProto.EXTERNAL:
            continue
        location = {e.key: e.value for e in t.external_data}.get("location", "")
        target = (base / location).resolve()
        if os.path.isabs(location) or not target.is_relative_to(base):
            raise ModelError(f"initializer {t.name!r}: external data location {location!r} "
                             f"escapes the model's folder {str(base)!r}; refusing to read it")
        if not target.is_file():
            raise ModelError(f"initializer {t.name!r}: external data file {location!r} is missing")
    try:
        onnx.external_data_helper.load_external_data_for_model(model, str(base))
    except Exception as exc:
        raise ModelError(f"{path}: external data could not be read: {_first_line(exc)}") from None
    return model


def _validate_structure(graph: onnx.GraphProto) -> None:
    """Fail early, naming the node, on what the ONNX checker reports poorly or not at all."""
    if len(graph.node) == 0:
        raise ModelError("empty graph: the model has no nodes")
    if len(graph.output) == 0:
        raise ModelError("the model declares no outputs: nothing it computes is used")
    for t in graph.initializer:
        _check_initializer(t)
    defined = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    seen_names: dict[str, int] = {}
    producer: dict[str, str] = {}
    for i, n in enumerate(graph.node):
        label = node_label(n, i)
        if n.domain not in _KNOWN_DOMAINS:
            if not runs_on_cpu(n.domain, n.op_type):
                raise ModelError(f"custom op domain {n.domain!r} is not an ONNX standard domain and onnxruntime "
                                 "has no CPU kernel for this op; no backend here can run it", node=label, op=n.op_type)
        elif not onnx.defs.has(n.op_type, n.domain):
            raise ModelError("unknown op: not in the ONNX operator set", node=label, op=n.op_type)
        if n.name:
            if n.name in seen_names:
                raise ModelError(f"name clash: node name {n.name!r} is used by nodes #{seen_names[n.name]} and #{i}",
                                 node=label, op=n.op_type)
            seen_names[n.name] = i
        for out in n.output:
            if not out:
                continue
            if out in producer or out in defined:
                other = producer.get(out, "a graph input or initializer")
                raise ModelError(f"name clash: tensor {out!r} is also produced by {other}", node=label, op=n.op_type)
            producer[out] = label
    for i, n in enumerate(graph.node):
        for name in list(n.input) + outer_scope_names(n):
            if name and name not in producer and name not in defined:
                raise ModelError(f"input {name!r} is not produced by any node and is neither a graph input "
                                 "nor an initializer (missing initializer?)", node=node_label(n, i), op=n.op_type)
    for o in graph.output:
        if o.name not in producer and o.name not in defined:
            raise ModelError(f"graph output {o.name!r} is produced by no node")


def _initializers_as_constants(model: onnx.ModelProto) -> int:
    """Drop the graph inputs that name an initializer: before IR version 4 every initializer had to be listed as an
    input too, and a deployed model's weights are its constants (left as inputs, each would be a tensor the runtime
    asks a frame for). Returns how many."""
    constants = {t.name for t in model.graph.initializer}
    keep = [i for i in model.graph.input if i.name not in constants]
    dropped = len(model.graph.input) - len(keep)
    if dropped:
        del model.graph.input[:]
        model.graph.input.extend(keep)
        model.ir_version = max(model.ir_version, 4)     # the checker asks IR < 4 to list every initializer as input
    return dropped


def _check_initializer(t: onnx.TensorProto) -> None:
    """Raw bytes that do not fill the declared shape (a truncated or edited file) would fail deep in numpy."""
    if t.data_location == onnx.TensorProto.EXTERNAL or not t.HasField("raw_data") \
            or t.data_type in (onnx.TensorProto.STRING, onnx.TensorProto.UNDEFINED):
        return
    try:
        itemsize = onnx.helper.tensor_dtype_to_np_dtype(t.data_type).itemsize
    except Exception:
        raise ModelError(f"initializer {t.name!r} has unknown element type {t.data_type}") from None
    bits = 4 if t.data_type in (onnx.TensorProto.INT4, onnx.TensorProto.UINT4) else 8 * itemsize
    want = -(-int(np.prod(t.dims, dtype=np.int64)) * bits // 8)
    if len(t.raw_data) != want:
        raise ModelError(f"initializer {t.name!r} is corrupt: {len(t.raw_data)} bytes of data for shape "
                         f"{list(t.dims)}, which needs {want}")


MAX_ELEMENTS = 1 << 31       # a tensor beyond this is no model this tool (or a board's DDR) can run


def _check_sizes(graph: Graph) -> None:
    """Zero-sized inputs and absurdly large tensors fail with a name here, not deep in onnxruntime or numpy; an
    empty result of a node is valid ONNX (an export slicing zero mask columns) and stays on the CPU."""
    producer = {o: n for n in graph.nodes.values() for o in n.outputs if o}
    for t in graph.tensors.values():
        if t.shape is None or t.is_const or not all(isinstance(d, int) for d in t.shape):
            continue
        elements = int(np.prod(t.shape, dtype=np.int64))
        node = producer.get(t.name)
        if 0 < elements <= MAX_ELEMENTS or elements == 0 and node is not None:   # an empty result is valid ONNX
            continue
        what = f"tensor {t.onnx_name!r} {list(t.shape)}"
        why = ("is empty (a zero dimension)" if elements == 0
               else f"has {elements:.3g} elements, beyond {MAX_ELEMENTS:,}")
        if node is None:
            raise ModelError(f"input {what} {why}")
        raise ModelError(f"{what} {why}", node=node.label, op=node.op_type)


def _sort_topologically(graph: onnx.GraphProto) -> None:
    g = nx.DiGraph()
    g.add_nodes_from(range(len(graph.node)))
    producer = {out: i for i, n in enumerate(graph.node) for out in n.output if out}
    for i, n in enumerate(graph.node):
        for name in list(n.input) + outer_scope_names(n):
            if name in producer:
                g.add_edge(producer[name], i)
    try:
        cycle = nx.find_cycle(g)
    except nx.NetworkXNoCycle:
        cycle = None
    if cycle:
        path = " -> ".join(node_label(graph.node[a], a) for a, _ in cycle)
        first = graph.node[cycle[0][0]]
        raise ModelError(f"the graph has a cycle: {path} -> {node_label(first, cycle[0][0])}",
                         node=node_label(first, cycle[0][0]), op=first.op_type)
    order = list(nx.lexicographical_topological_sort(g))
    if order != list(range(len(graph.node))):
        nodes = [graph.node[i] for i in order]
        copies = [onnx.NodeProto() for _ in nodes]
        for c, n in zip(copies, nodes):
            c.CopyFrom(n)
        del graph.node[:]
        graph.node.extend(copies)


def _pin_input_shapes(graph: onnx.GraphProto, pins: dict[str, tuple[int, ...]]) -> None:
    inputs = {i.name: i for i in graph.input}
    for name, shape in pins.items():
        if name not in inputs:
            raise ModelError(f"--input-shape names {name!r}, but the model's inputs are {sorted(inputs)}")
        dims = inputs[name].type.tensor_type.shape.dim
        given = "x".join(str(v) for v in shape)
        if len(dims) and len(dims) != len(shape):
            raise ModelError(f"--input-shape {name}={given}: rank {len(shape)} given, but the model's input is "
                             f"{_describe_input(inputs[name])}")
        for axis, (d, v) in enumerate(zip(dims, shape)):
            if d.HasField("dim_value") and d.dim_value != v:
                raise ModelError(f"--input-shape {name}={given}: dimension {axis} is fixed at {d.dim_value} by the "
                                 f"model, {v} given; the model's input is {_describe_input(inputs[name])}")
        del inputs[name].type.tensor_type.shape.dim[:]
        for v in shape:
            inputs[name].type.tensor_type.shape.dim.add().dim_value = int(v)


def _describe_input(value: onnx.ValueInfoProto) -> str:
    """`images [1, 416, 416, 3] uint8 (NHWC: batch, height, width, channels)`: what --input-shape must match."""
    t = value.type.tensor_type
    dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in t.shape.dim]
    dtype = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type).name if t.elem_type else "undefined"
    layout = ""
    if len(dims) == 4 and dims[3] in (1, 3, 4) and dims[1] not in (1, 3, 4):
        layout = " (NHWC: batch, height, width, channels)"
    elif len(dims) == 4 and dims[1] in (1, 3, 4):
        layout = " (NCHW: batch, channels, height, width)"
    return f"{value.name} [{', '.join(str(d) for d in dims)}] {dtype}{layout}"


def _strip_big_initializers(model: onnx.ModelProto) -> dict[str, onnx.TensorProto]:
    """Move weights out of the proto; they come back in the IR as numpy arrays."""
    big: dict[str, onnx.TensorProto] = {}
    keep = []
    for t in model.graph.initializer:
        if int(np.prod(t.dims)) > BIG_ELEMENTS:
            big[t.name] = t
            model.graph.input.append(onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
        else:
            keep.append(t)
    del model.graph.initializer[:]
    model.graph.initializer.extend(keep)
    return big


def _restore_inputs(model: onnx.ModelProto, big: dict[str, onnx.TensorProto]) -> None:
    keep = [i for i in model.graph.input if i.name not in big]
    del model.graph.input[:]
    model.graph.input.extend(keep)


_INFER_WHERE = re.compile(r"\(op_type:(?P<op>[^,]+), node name: (?P<node>[^)]*)\)")


def _infer_shapes(model: onnx.ModelProto, weights: dict[str, onnx.TensorProto]) -> onnx.ModelProto:
    """ONNX shape inference, continued past contrib ops by running them alone (contrib_ops.py)."""
    g = model.graph
    del g.value_info[:]
    declared = {}
    for o in g.output:
        if o.type.tensor_type.HasField("shape"):
            declared[o.name] = onnx.TensorShapeProto()
            declared[o.name].CopyFrom(o.type.tensor_type.shape)
            o.type.tensor_type.ClearField("shape")
    model = _onnx_inference(model)
    while probe_output_types(model, weights):
        model = _onnx_inference(model)
    for o in model.graph.output:     # what inference cannot tell (a Loop's output): the model's own declaration
        if not o.type.tensor_type.HasField("shape") and o.name in declared:
            o.type.tensor_type.shape.CopyFrom(declared[o.name])
    return model


def _onnx_inference(model: onnx.ModelProto) -> onnx.ModelProto:
    try:
        return shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
    except Exception as exc:
        text = _first_line(exc)
        m = _INFER_WHERE.search(text)
        node = m.group("node") if m else None
        op = m.group("op") if m else None
        reason = text.split("):", 1)[-1].strip() if m else text
        raise ModelError(f"shape inference failed: {reason}", node=node, op=op) from None


def normalise(model: onnx.ModelProto, input_shapes: dict[str, tuple[int, ...]] | None = None
              ) -> tuple[onnx.ModelProto, dict[str, onnx.TensorProto], list[str], list[str]]:
    """Checked, shape-inferred, canonical-opset, constant-folded skeleton plus the big weights."""
    warnings: list[str] = []
    retired = spell_retired_ops(model)
    if retired:
        warnings.append(f"{len(retired)} ImageScaler node(s) (an op ONNX dropped after opset 9) spelt as Mul and Add: "
                        f"{', '.join(retired[:3])}{', ...' if len(retired) > 3 else ''}")
    _validate_structure(model.graph)
    weights_as_inputs = _initializers_as_constants(model)
    if weights_as_inputs:
        warnings.append(f"{weights_as_inputs} graph input(s) are also initializers (the IR version < 4 convention of "
                        "opset <= 8 exports): taken as the model's constants, their values as the file has them")
    _sort_topologically(model.graph)
    precision = model_precision(model)
    if precision != "float32":
        counts = widen_to_float32(model)
        edges = (f"{counts['inputs']} input(s) and {counts['outputs']} output(s) keep {precision}, cast at the "
                 "model's edges" if precision == "float16" else
                 f"its {counts['inputs']} input(s) and {counts['outputs']} output(s) become float32: numpy and "
                 "onnxruntime's Python API have no bfloat16 arrays")
        warnings.append(f"{precision} model: computed in float32 ({counts['constants']} constants widened, "
                        f"{counts['casts']} casts to {precision} made float32; {edges}); --verify checks it "
                        "against the model widened so" + (", and reports the original's own float16 rounding "
                                                          "beside it" if precision == "float16" else ""))
    _pin_input_shapes(model.graph, input_shapes or {})
    big = _strip_big_initializers(model)
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    if opset is None:
        raise ModelError("the model imports no version of the default ONNX domain")
    if opset > CANONICAL_OPSET:                  # onnx's converter has no downward adapters for most ops
        model = downgrade(model, opset)
        warnings.append(f"converted opset {opset} to {CANONICAL_OPSET}")
    elif opset != CANONICAL_OPSET:
        try:
            model = version_converter.convert_version(model, CANONICAL_OPSET)
        except Exception as exc:
            raise ModelError(f"cannot convert opset {opset} to {CANONICAL_OPSET}: {_first_line(exc)}") from None
        warnings.append(f"converted opset {opset} to {CANONICAL_OPSET}")
    model = _infer_shapes(model, big)
    try:
        onnx.checker.check_model(model)
    except Exception as exc:
        raise ModelError(f"the ONNX checker rejects the model: {_first_line(exc)}") from None
    folded: list[str] = []
    while True:                  # folding gives inference new static shapes, which may let more fold
        model, more = fold_constants(model, CANONICAL_OPSET, big)
        if not more:
            break
        folded += more
        model = _infer_shapes(model, big)
    folded += _drop_dead_nodes(model)
    _restore_inputs(model, big)
    return model, big, warnings, folded


def _drop_dead_nodes(model: onnx.ModelProto) -> list[str]:
    """Removes the nodes no graph output depends on (names returned): folding a Shape leaves the node that fed it
    with no reader (torchvision's detectors), and a subgraph of nothing but such nodes would compute nothing."""
    live = {o.name for o in model.graph.output}
    kept, dead = [], []
    for i, node in reversed(list(enumerate(model.graph.node))):
        if any(o and o in live for o in node.output):
            kept.append(node)
            live.update(x for x in node.input if x)
            live.update(outer_scope_names(node))
        else:
            dead.append(node_label(node, i))
    if dead:
        del model.graph.node[:]
        model.graph.node.extend(reversed(kept))
    return dead[::-1]


def to_ir(model: onnx.ModelProto, big: dict[str, onnx.TensorProto]) -> Graph:
    g = model.graph
    names = NameTable()
    graph = Graph(names, CANONICAL_OPSET, name=g.name or "model")
    graph.opset_imports = [o for o in model.opset_import if o.domain not in ("", "ai.onnx")]
    graph.opset_imports.insert(0, onnx.helper.make_opsetid("", CANONICAL_OPSET))

    def declare(name: str, elem: int, shape: tuple | None, data: np.ndarray | None = None) -> None:
        safe = names.safe(name)
        if safe not in graph.tensors:
            graph.tensors[safe] = Tensor(safe, name, elem, shape, data)

    for t in list(g.initializer) + list(big.values()):
        data = numpy_helper.to_array(t)
        declare(t.name, t.data_type, tuple(int(d) for d in t.dims), data)
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        declare(vi.name, vi.type.tensor_type.elem_type, dims_of(vi))
    initialised = {t.name for t in g.initializer} | set(big)
    graph.inputs = [names.safe(i.name) for i in g.input if i.name not in initialised]
    graph.outputs = [names.safe(o.name) for o in g.output]

    for i, n in enumerate(g.node):
        label = node_label(n, i)
        for out in n.output:
            if out and out not in names:
                declare(out, 0, None)
        node = Node(
            name=names.safe(label),
            kind=OpKind.of(n.op_type, n.domain),
            op_type=n.op_type,
            inputs=[names.safe(x) if x else "" for x in n.input],
            outputs=[names.safe(x) if x else "" for x in n.output],
            origin=[label],
            attrs={a.name: a for a in n.attribute},
            domain=n.domain,
            implicit_inputs=[names.safe(x) for x in outer_scope_names(n)],
        )
        graph.nodes[node.name] = node
    return graph


def import_model(path: str | os.PathLike, input_shapes: dict[str, tuple[int, ...]] | None = None) -> ImportResult:
    model = load_model(path)
    precision = model_precision(model)
    skeleton, big, warnings, folded = normalise(model, input_shapes)
    graph = to_ir(skeleton, big)
    _check_sizes(graph)
    for name in graph.inputs:
        t = graph.tensors[name]
        if not t.is_static:
            warnings.append(f"input {t.onnx_name!r} has dynamic shape {t.shape}; pin it with "
                            f"--input-shape {t.onnx_name}={pinned_shape_hint(t.shape)} (the free sizes yours) or "
                            "its nodes stay on the CPU")
    return ImportResult(graph, skeleton, big, warnings, folded, precision)
