"""Per-tensor int8 sensitivity: the float partition with one engine tensor at a time rounded to its int8 scale, the
rest float, each output compared with the all-float partition.

Where a build's int8 output departs from float, this says which few tensors cost the most (the per-layer table
says where the error *appears*, which after a few layers is everywhere). The rounding is onnxruntime's
QuantizeLinear/DequantizeLinear at the scale and zero point the build gave the tensor (a fused stage's: range / 127,
symmetric): not bit-exact with the engine, which also rounds weights and multipliers, but the ranking is what
matters.
A tensor stays out of int8 only if every engine layer that writes or reads it moves: `partition --keep-on-cpu
NODE` keeps those layers in float on the CPU.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

from fpga_runtime.checking.accuracy import output_accuracy
from fpga_runtime.checking.detections import ranked_outputs
from fpga_runtime.onnx_chain import Chain, cpu_session
from fpga_runtime.plan import Plan
from partitioner.ir.graph import BY_REQUANTISER, Activation, Graph
from partitioner.ir.to_onnx import stage_names


@dataclass
class TensorSensitivity:
    tensor: str           # ONNX name of the engine tensor rounded to int8
    layers: list[str]     # the engine layers writing or reading it, by first ONNX node (--keep-on-cpu)
    subgraph: str
    cosine: float         # the worst output's cosine against the all-float partition


def _with_rounding(model: onnx.ModelProto, tensor: str, scale: float, zero: int) -> onnx.ModelProto:
    """A copy of `model` whose node output `tensor` passes through int8 QuantizeLinear/DequantizeLinear."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    raw = f"{tensor}__float"
    for node in out.graph.node:
        for i, name in enumerate(node.output):
            if name == tensor:
                node.output[i] = raw
    s, z = f"{tensor}__scale", f"{tensor}__zero"
    out.graph.initializer.extend([numpy_helper.from_array(np.array(scale, np.float32), s),
                                  numpy_helper.from_array(np.array(zero, np.int8), z)])
    out.graph.node.extend([helper.make_node("QuantizeLinear", [raw, s, z], [f"{tensor}__q"]),
                           helper.make_node("DequantizeLinear", [f"{tensor}__q", s, z], [tensor])])
    return out


def _round(x: np.ndarray, scale: float, zero: int) -> np.ndarray:
    return ((np.clip(np.rint(x / scale) + zero, -128, 127) - zero) * scale).astype(np.float32)


def layers_of_tensor(graph: Graph, nodes: list[str]) -> dict[str, list[str]]:
    """ONNX tensor name -> the engine layers that keep it in int8: the one that writes it (outputs and the fused
    stages the engine rounds) and those that read it, each by its first ONNX node (what --keep-on-cpu takes)."""
    touching: dict[str, list[str]] = {}
    for n in nodes:
        node = graph.nodes[n]
        label = node.label
        names = stage_names(graph, node)[:-1] if node.conv is not None else []
        if names and isinstance(node.conv.epilogue[0], Activation) and node.conv.epilogue[0].kind in BY_REQUANTISER:
            names = names[1:]      # requantised straight to the clamp's output scale: never int8 at its own
        for t in names + [graph.tensors[t].onnx_name for t in node.outputs]:
            touching.setdefault(t, []).insert(0, label)
        for t in node.inputs:
            if t and graph.const(t) is None:
                touching.setdefault(graph.tensors[t].onnx_name, []).append(label)
    return {t: list(dict.fromkeys(v)) for t, v in touching.items()}


def int8_sensitivity(plan: Plan, graph: Graph, fpga_nodes: list[str], ranges: dict[str, float],
                     feeds: dict[str, np.ndarray], echo=lambda s: None,
                     quantisation: dict[str, tuple[float, int]] | None = None) -> list[TensorSensitivity]:
    """Worst first. Subgraphs before the one being probed run once; each probe runs its subgraph and the rest.
    `quantisation`: (scale, zero point) of the tensors as the build coded them (fused stages included)."""
    quantisation = quantisation or {}
    touching = layers_of_tensor(graph, fpga_nodes)
    root = Path(plan.root)
    models = {sg.name: onnx.load(str(root / sg.onnx)) for sg in plan.subgraphs if sg.device == "fpga"}
    chain = Chain(plan, optimise=False)
    reference = chain.run(feeds)
    outputs = compared_tensors(plan, reference)
    results: list[TensorSensitivity] = []
    before = dict(feeds)
    probes = sum(1 for sg in plan.subgraphs if sg.device == "fpga"
                 for t in _probed(models[sg.name], sg, ranges, touching))
    done = 0
    for k, sg in enumerate(plan.subgraphs):
        if sg.device == "fpga":
            for tensor, is_input in _probed(models[sg.name], sg, ranges, touching):
                scale, zero = quantisation.get(tensor, (ranges[tensor] / 127.0, 0))
                if is_input:
                    rounded = dict(before)
                    rounded[tensor] = _round(before[tensor], scale, zero)
                    got = chain.run(rounded, start=k)
                else:
                    probe = cpu_session(_with_rounding(models[sg.name], tensor, scale, zero).SerializeToString(),
                                        optimise=False)
                    got = chain.run(before, start=k, probe=probe)
                cos = min((output_accuracy(o, reference[o], got[o]).cosine for o in outputs), default=1.0)
                results.append(TensorSensitivity(tensor, touching.get(tensor, []), sg.name, cos))
                done += 1
                if done % 20 == 0:
                    echo(f"sensitivity: {done}/{probes} tensors")
        before = chain.run(before, start=k, stop=k + 1)
    return sorted(results, key=lambda r: r.cosine)


def compared_tensors(plan: Plan, values: dict[str, np.ndarray]) -> list[str]:
    """The float tensors a probe is judged on: the model's outputs (float16 models' too), except rows of detections
    chosen and ordered by score (a TopK/NMS head's), whose order flips under any rounding; for those, what the
    subgraph selecting them reads (the raw head), which moves in proportion to the rounding."""
    outputs = {t.name: values[t.name] for t in plan.outputs if values[t.name].dtype.kind == "f"}
    ranked = ranked_outputs(outputs)
    names = [n for n in outputs if n not in ranked]
    model_inputs = {t.name for t in plan.inputs}
    for sg in plan.subgraphs:
        if any(t.name in ranked for t in sg.outputs):
            names += [t.name for t in sg.inputs if t.name not in model_inputs and t.name not in names
                      and values[t.name].dtype.kind == "f"]
    return names


def _probed(model: onnx.ModelProto, sg, ranges: dict[str, float], rounded: dict) -> list[tuple[str, bool]]:
    """(tensor, is a subgraph input) for every tensor of an FPGA subgraph the engine holds in int8."""
    inputs = [(t.name, True) for t in sg.inputs if ranges.get(t.name, 0) > 0]
    made = [(o, False) for n in model.graph.node for o in n.output if ranges.get(o, 0) > 0 and o in rounded]
    return inputs + list(dict.fromkeys(made))
