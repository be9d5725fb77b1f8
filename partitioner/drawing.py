"""A picture of the partitioned graph: Graphviz clusters per subgraph, coloured by device and role."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from .partition import Device, Partition

COLOURS = {("fpga", "compute"): "#f6b26b", ("cpu", "pre"): "#9fc5e8", ("cpu", "compute"): "#d9d9d9",
           ("cpu", "post"): "#b6d7a8"}


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(part: Partition) -> str:
    graph = part.graph
    ids = {n: f"n{i}" for i, n in enumerate(graph.nodes)}
    lines = ["digraph partition {", "  rankdir=TB; compound=true; fontname=Helvetica;",
             '  node [shape=box, style="rounded,filled", fontname=Helvetica, fontsize=10];']
    for sg in part.subgraphs:
        colour = COLOURS[(sg.device.value, sg.role.value)]
        title = f"{sg.name} ({sg.device.value}, {sg.role.value}"
        title += f", parallel group {sg.parallel_group})" if sg.parallel_group is not None else ")"
        lines.append(f"  subgraph cluster_{sg.name} {{ label={_quote(title)}; style=filled; color={_quote(colour)};")
        for n in sg.nodes:
            node = graph.nodes[n]
            text = f"{node.name}\n{node.describe()}"
            if len(node.origin) > 1:
                text += f"\n({len(node.origin)} ONNX nodes)"
            fill = "white" if sg.device is Device.FPGA else "#f3f3f3"
            lines.append(f"    {ids[n]} [label={_quote(text)}, fillcolor={_quote(fill)}];")
        lines.append("  }")
    for u, v in graph.dag().edges:
        lines.append(f"  {ids[u]} -> {ids[v]};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def draw(part: Partition, out_dir: Path) -> Path | None:
    """Writes partition.dot and, when Graphviz is installed, partition.svg (returned)."""
    dot_path = out_dir / "partition.dot"
    dot_path.write_text(to_dot(part))
    if shutil.which("dot") is None:
        return None
    svg = out_dir / "partition.svg"
    subprocess.run(["dot", "-Tsvg", str(dot_path), "-o", str(svg)], check=True, capture_output=True, timeout=120)
    return svg
