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


LEGEND = [(("fpga", "compute"), "FPGA subgraph"), (("cpu", "pre"), "CPU pre-processing"),
          (("cpu", "compute"), "CPU compute (fallback)"), (("cpu", "post"), "CPU post-processing")]


def _tensor_label(graph, tensor: str) -> str:
    """`name [1x256x13x13]` for an edge between two subgraphs: what crosses there."""
    t = graph.tensors.get(tensor)
    shape = "?" if t is None or t.shape is None else "x".join(str(d) for d in t.shape)
    name = t.onnx_name if t is not None else tensor
    return f"{name if len(name) <= 24 else name[:21] + '...'} [{shape}]"


def _legend() -> list[str]:
    lines = ['  subgraph cluster_legend { label="legend"; style=dashed; color=gray; fontsize=10;']
    for i, (key, text) in enumerate(LEGEND):
        lines.append(f"    legend{i} [label={_quote(text)}, fillcolor={_quote(COLOURS[key])}];")
    lines.append('    legend_edge [shape=plaintext, style="", label="edges between subgraphs:\\ntensor [shape]"];')
    lines.append("    " + " -> ".join(f"legend{i}" for i in range(len(LEGEND))) + " -> legend_edge [style=invis];")
    lines.append("  }")
    return lines


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
    home = {n: sg.name for sg in part.subgraphs for n in sg.nodes}
    for u, v, data in graph.dag().edges(data=True):
        if home[u] == home[v]:
            lines.append(f"  {ids[u]} -> {ids[v]};")
        else:
            label = "\n".join(_tensor_label(graph, t) for t in data["tensors"])
            lines.append(f"  {ids[u]} -> {ids[v]} [label={_quote(label)}, fontsize=8, penwidth=1.6];")
    lines += _legend()
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
