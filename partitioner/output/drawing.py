"""A picture of the partitioned graph: Graphviz clusters per subgraph, coloured by device and role."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from partitioner.placement.partition import Device, Partition

DRAW_TIMEOUT_S = 60     # Graphviz gets this long; after it the build goes on without the SVG
DETAIL_LIMIT = 300      # above this many layers (or twice as many edges) a box per subgraph: a box per layer is
                        # neither readable nor drawn in reasonable time (Graphviz took minutes on DenseNet's edges)
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
    if len(graph.nodes) > DETAIL_LIMIT or graph.dag().number_of_edges() > 2 * DETAIL_LIMIT:
        return _subgraph_dot(part)
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


def _subgraph_dot(part: Partition) -> str:
    """One box per subgraph (its layers, first and last), edges labelled with the tensors that cross."""
    graph = part.graph
    home = {n: sg.name for sg in part.subgraphs for n in sg.nodes}
    lines = ["digraph partition {", "  rankdir=TB; fontname=Helvetica;",
             '  node [shape=box, style="rounded,filled", fontname=Helvetica, fontsize=10];']
    for sg in part.subgraphs:
        first, last = graph.nodes[sg.nodes[0]].name, graph.nodes[sg.nodes[-1]].name
        text = f"{sg.name} ({sg.device.value}, {sg.role.value})\n{len(sg.nodes)} layers: {first}"
        text += f" ... {last}" if len(sg.nodes) > 1 else ""
        if sg.parallel_group is not None:
            text += f"\nparallel group {sg.parallel_group}"
        colour = COLOURS[(sg.device.value, sg.role.value)]
        lines.append(f"  {_quote(sg.name)} [label={_quote(text)}, fillcolor={_quote(colour)}];")
    crossing: dict[tuple[str, str], list[str]] = {}
    for u, v, data in graph.dag().edges(data=True):
        if home[u] != home[v]:
            crossing.setdefault((home[u], home[v]), []).extend(data["tensors"])
    for (a, b), tensors in crossing.items():
        shown = [_tensor_label(graph, t) for t in dict.fromkeys(tensors)]
        label = "\n".join(shown[:3] + ([f"... {len(shown) - 3} more"] if len(shown) > 3 else []))
        lines.append(f"  {_quote(a)} -> {_quote(b)} [label={_quote(label)}, fontsize=8, penwidth=1.6];")
    lines += _legend()
    lines.append("}")
    return "\n".join(lines) + "\n"


def draw(part: Partition, out_dir: Path) -> Path | None:
    """Writes partition.dot and, when Graphviz is installed and draws it in time, partition.svg (returned; None
    otherwise: the picture is never worth failing a build for)."""
    dot_path = out_dir / "partition.dot"
    dot_path.write_text(to_dot(part))
    if shutil.which("dot") is None:
        return None
    svg = out_dir / "partition.svg"
    try:
        subprocess.run(["dot", "-Tsvg", str(dot_path), "-o", str(svg)], check=True, capture_output=True,
                       timeout=DRAW_TIMEOUT_S)
    except (subprocess.TimeoutExpired, subprocess.CalledProcessError, OSError):
        svg.unlink(missing_ok=True)
        return None
    return svg
