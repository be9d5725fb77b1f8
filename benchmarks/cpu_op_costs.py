"""onnxruntime's per-op costs on this machine (fpga_runtime/cpu_costs.py), and what the cost table makes of the
zoo models' CPU pre- and post-processing on each board.

    python benchmarks/cpu_op_costs.py [--repeats 20] [--models yolov3-tiny,ssd-mobilenet-v1] [--write]

First table: per op, seconds per node, per activation element and per MAC measured here (one thread, the
fastest of the repeats). Second: each model's CPU subgraphs timed by that table scaled to each board (per-node
costs by clock x IPC, work by element-wise throughput), beside the shipped table's figure. `--write` replaces
the shipped table (fpga_runtime/data/cpu_costs.json) with this measurement.
"""
from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from _zoo import SIZES, fused_graph

from fpga_runtime.boards import BOARDS
from fpga_runtime.prediction import cpu_costs
from partitioner.placement.cost import CostModel, cpu_op, node_cost
from partitioner.placement.partition import Device, partition
from partitioner.targets import fpga as fpga_target


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--models", default="yolov3-tiny,ssd-mobilenet-v1")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    table = cpu_costs.measure(repeats=args.repeats)
    shipped = cpu_costs.load()
    print(f"measured on {table.machine} at {table.ghz:.2f} GHz: a session run {table.session_s * 1e6:.1f} us, "
          f"element-wise {table.gbps:.1f} GB/s\n")
    print("| op | us per node | ns per element | ps per MAC |")
    print("|---|---|---|---|")
    for op, c in sorted(table.ops.items()):
        print(f"| {op} | {c.call_s * 1e6:.2f} | {c.element_s * 1e9:.3f} | {c.mac_s * 1e12:.1f} |")
    print("\n| model | board | CPU subgraph | nodes | ms (this measurement, scaled) | ms (shipped table) |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            graph = fused_graph(name, Path(tmp))
            for b in BOARDS.values():
                draft = partition(graph, fpga_target, CostModel(b), offload_everything=True)
                for sg in draft.subgraphs:
                    if sg.device is not Device.CPU:
                        continue
                    ops = [cpu_op(graph.nodes[n], node_cost(graph.nodes[n], graph)) for n in sg.nodes]
                    print(f"| {name}-{SIZES[name]} | {b.name} | {sg.name} | {len(ops)} | "
                          f"{table.subgraph_s(ops, b) * 1e3:.2f} | {shipped.subgraph_s(ops, b) * 1e3:.2f} |")
    if args.write:
        cpu_costs.SHIPPED.write_text(json.dumps(table.to_json(), indent=1) + "\n")
        print(f"\nwrote {cpu_costs.SHIPPED}")


if __name__ == "__main__":
    main()
