"""Partition -> build folder: one ONNX file per subgraph, and the `Plan` that describes them (the build writes
it as plan.json once every step has run)."""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import onnx

from fpga_runtime.abi import EngineConfig
from fpga_runtime.boards import Board
from fpga_runtime.cycle_model import layer_bytes, layer_cycles
from fpga_runtime.plan import PLAN_VERSION, Layer, Plan, SubgraphSpec, TensorSpec, file_sha256
from partitioner.engine.geometry import cpu_fed_convs, layer_shape
from partitioner.ir.graph import Graph
from partitioner.ir.to_onnx import to_model
from partitioner.placement.cost import node_cost
from partitioner.placement.partition import Device, Partition

SUBGRAPH_DIR = "subgraphs"


def _spec(graph: Graph, tensor: str) -> TensorSpec:
    t = graph.tensors[tensor]
    return TensorSpec(t.onnx_name, None if t.shape is None else list(t.shape), t.dtype_name)


def retime_winograd(plan: Plan, trials) -> None:
    """The plan's layers are timed direct when it is written, before the compile chooses the Winograd layers: a
    chosen one's cycles and DDR bytes as compiled (engine/winograd.py's trial), so that `fpga-run predict`, the
    report and the runtime's schedule time what the engine runs."""
    chosen = {t.node: t for t in trials if t.chosen}
    for sg in plan.subgraphs:
        for layer in sg.layers:
            trial = chosen.get(layer.name)
            if trial is not None:
                layer.cycles, layer.bytes = trial.winograd_cycles, layer.bytes + trial.extra_bytes


def write_build(part: Partition, out_dir: Path, model_path: Path, target: str, board: Board,
                folded: list[str], engine: EngineConfig, build_id: str) -> Plan:
    graph = part.graph
    (out_dir / SUBGRAPH_DIR).mkdir(parents=True, exist_ok=True)
    specs = []
    fed = cpu_fed_convs(graph, [n for sg in part.subgraphs if sg.device is Device.FPGA for n in sg.nodes])
    for sg in part.subgraphs:
        rel = f"{SUBGRAPH_DIR}/{sg.name}.onnx"
        model = to_model(graph, sg.nodes, sg.inputs, sg.outputs, sg.name, graph.opset_imports,
                         out_dir / SUBGRAPH_DIR / f"{sg.name}.weights")
        onnx.save(model, str(out_dir / rel))
        layers = []
        if sg.device is Device.FPGA:
            costs = {n: node_cost(graph.nodes[n], graph) for n in sg.nodes}
            shapes = {n: layer_shape(graph.nodes[n], graph, engine, n in fed) for n in sg.nodes}
            port = board.port_bits // 8
            layers = [Layer(n, graph.nodes[n].kind.value, graph.nodes[n].describe(), list(graph.nodes[n].origin),
                            costs[n].macs, layer_bytes(shapes[n], engine) if shapes[n] else 0,
                            layer_cycles(shapes[n], engine, port) if shapes[n] else 0)
                      for n in sg.nodes]
        specs.append(SubgraphSpec(
            name=sg.name, device=sg.device.value, role=sg.role.value,
            nodes=[o for n in sg.nodes for o in graph.nodes[n].origin],
            inputs=[_spec(graph, t) for t in sg.inputs], outputs=[_spec(graph, t) for t in sg.outputs],
            depends_on=list(sg.depends_on), parallel_group=sg.parallel_group, onnx=rel,
            estimate=sg.estimate.as_dict() if sg.estimate else None, concurrent_with=list(sg.concurrent_with),
            layers=layers))
    fallbacks = [{"node": ", ".join(graph.nodes[n].origin), "op": graph.nodes[n].describe(), "reason": why}
                 for n, why in part.fallbacks.items()]
    decisions = [{"nodes": [o for n in d.nodes for o in graph.nodes[n].origin], "accepted": d.accepted,
                  "estimate": d.estimate.as_dict()} for d in part.decisions]
    model_info = {"path": str(model_path.resolve()), "sha256": file_sha256(model_path), "name": graph.name,
                  "opset": graph.opset}
    plan = Plan(PLAN_VERSION, target, board.name, model_info, [_spec(graph, t) for t in graph.inputs],
                [_spec(graph, t) for t in graph.outputs], specs, list(folded), fallbacks, decisions,
                engine_config=asdict(engine), build_id=build_id, root=out_dir)
    return plan
