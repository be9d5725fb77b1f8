"""Execution traces: Chrome-trace JSON (opens in Perfetto / chrome://tracing) and a Gantt picture (PNG)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Span:
    name: str          # subgraph
    frame: int
    lane: str          # "cpu-0", "fpga-cu1", ...
    start_s: float
    end_s: float


def write_chrome_trace(spans: list[Span], path: Path, title: str = "fpga-runtime") -> Path:
    lanes = sorted({s.lane for s in spans}, key=lambda x: (not x.startswith("fpga"), x))
    tid = {lane: i for i, lane in enumerate(lanes)}
    events = [{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": title}}]
    events += [{"name": "thread_name", "ph": "M", "pid": 1, "tid": tid[lane], "args": {"name": lane}} for lane in lanes]
    events += [{"name": s.name, "cat": s.lane.split("-")[0], "ph": "X", "pid": 1, "tid": tid[s.lane],
                "ts": s.start_s * 1e6, "dur": (s.end_s - s.start_s) * 1e6, "args": {"frame": s.frame}}
               for s in spans]
    path.write_text(json.dumps({"traceEvents": events, "displayTimeUnit": "ms"}))
    return path


def write_gantt(spans: list[Span], path: Path, title: str = "") -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lanes = sorted({s.lane for s in spans}, key=lambda x: (not x.startswith("fpga"), x))
    frames = sorted({s.frame for s in spans})
    colours = plt.get_cmap("tab10")
    total = max((s.end_s for s in spans), default=0.0)
    fig, ax = plt.subplots(figsize=(12, 1 + 0.6 * len(lanes)))
    for i, lane in enumerate(lanes):
        for s in (s for s in spans if s.lane == lane):
            ax.broken_barh([(s.start_s * 1e3, (s.end_s - s.start_s) * 1e3)], (i - 0.4, 0.8),
                           facecolors=colours(frames.index(s.frame) % 10), edgecolor="black", linewidth=0.3)
            if s.end_s - s.start_s > 0.04 * total:
                ax.text((s.start_s + s.end_s) / 2 * 1e3, i, s.name, ha="center", va="center", fontsize=6)
    ax.set_yticks(range(len(lanes)), lanes)
    ax.set_xlabel("time (ms)")
    ax.set_title(title or "schedule (colour = frame)")
    ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
