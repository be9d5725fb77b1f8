"""Ops outside the ONNX standard domains that onnxruntime's CPU provider runs (its contrib ops, domain
`com.microsoft`, which its own optimisers write: FusedConv, Gelu, ...). They stay on the CPU; an op that no
runtime here has is refused at import."""
from __future__ import annotations

import functools

import numpy as np
import onnx


@functools.lru_cache(maxsize=1)
def _cpu_kernels() -> frozenset[tuple[str, str]]:
    try:
        from onnxruntime.capi import _pybind_state as ort_state
        return frozenset((k.domain, k.op_name) for k in ort_state.get_all_opkernel_def()
                         if k.provider == "CPUExecutionProvider")
    except (ImportError, AttributeError):        # an onnxruntime build without the kernel registry
        return frozenset()


def runs_on_cpu(domain: str, op_type: str) -> bool:
    return (domain, op_type) in _cpu_kernels()


STANDARD_DOMAINS = ("", "ai.onnx", "ai.onnx.ml")


def _static_type(vi: onnx.ValueInfoProto) -> bool:
    t = vi.type.tensor_type
    return bool(t.elem_type) and t.HasField("shape") and all(d.HasField("dim_value") for d in t.shape.dim)


def probe_output_types(model: onnx.ModelProto, weights: dict[str, onnx.TensorProto]) -> bool:
    """ONNX shape inference knows nothing of contrib ops, so it stops at them. Run each such node alone on
    onnxruntime (zeros for activations, the real constants) to learn its output types; True if any was learnt,
    so inference can go on past it."""
    from fpga_runtime.onnx_chain import cpu_session

    g = model.graph
    typed = {vi.name: vi for vi in list(g.input) + list(g.value_info) + list(g.output) if _static_type(vi)}
    consts = {t.name: t for t in g.initializer} | weights
    outputs = {o.name: o for o in g.output}
    learnt = False
    for node in g.node:
        if node.domain in STANDARD_DOMAINS or all(not o or o in typed for o in node.output):
            continue
        feeds, inputs, inits = {}, [], []
        for name in dict.fromkeys(x for x in node.input if x):
            if name in consts:
                inits.append(consts[name])
            elif name in typed:
                t = typed[name].type.tensor_type
                shape = [d.dim_value for d in t.shape.dim]
                inputs.append(onnx.helper.make_tensor_value_info(name, t.elem_type, shape))
                feeds[name] = np.zeros(shape, onnx.helper.tensor_dtype_to_np_dtype(t.elem_type))
            else:
                break                           # an input of unknown type: try again after more inference
        else:
            probe = onnx.helper.make_model(
                onnx.helper.make_graph([node], "probe", inputs,
                                       [onnx.helper.make_empty_tensor_value_info(o) for o in node.output if o], inits),
                opset_imports=list(model.opset_import), ir_version=model.ir_version)
            try:
                values = cpu_session(probe.SerializeToString()).run(None, feeds)
            except Exception:                       # noqa: BLE001 - the op's own complaint surfaces later
                continue
            for name, value in zip([o for o in node.output if o], values):
                value = np.asarray(value)
                info = onnx.helper.make_tensor_value_info(name, onnx.helper.np_dtype_to_tensor_dtype(value.dtype),
                                                          list(value.shape))
                if name in outputs:
                    outputs[name].CopyFrom(info)
                else:
                    g.value_info.append(info)
                typed[name] = info
                learnt = True
    return learnt
