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
    lanes = sorted({s.lane for s in spans}, key=_lane_order)
    tid = {lane: i for i, lane in enumerate(lanes)}
    events = [{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": title}}]
    events += [{"name": "thread_name", "ph": "M", "pid": 1, "tid": tid[lane], "args": {"name": lane}} for lane in lanes]
    events += [{"name": s.name, "cat": s.lane.split("-")[0], "ph": "X", "pid": 1, "tid": tid[s.lane],
                "ts": s.start_s * 1e6, "dur": (s.end_s - s.start_s) * 1e6, "args": {"frame": s.frame}}
               for s in spans]
    path.write_text(json.dumps({"traceEvents": events, "displayTimeUnit": "ms"}))
    return path


def _lane_order(lane: str) -> tuple:
    return (not lane.startswith("fpga"), lane)


def write_gantt(spans: list[Span], path: Path, title: str = "") -> Path:
    """One row per lane (FPGA compute units first, then CPU workers). Hue says the device (orange: FPGA,
    blue: CPU), shade says the frame; bars wide enough carry their subgraph's name."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    lanes = sorted({s.lane for s in spans}, key=_lane_order)
    frames = sorted({s.frame for s in spans})
    shades = {f: 0.75 - 0.45 * (k % 4) / 3 for k, f in enumerate(frames)}
    maps = {"fpga": plt.get_cmap("Oranges"), "cpu": plt.get_cmap("Blues")}

    def colour(device: str, frame: int):
        return maps.get(device, maps["cpu"])(shades[frame])

    total = max((s.end_s for s in spans), default=0.0) or 1.0
    fig, ax = plt.subplots(figsize=(13, 1.6 + 0.55 * len(lanes)))
    for i, lane in enumerate(lanes):
        device = lane.split("-")[0]
        for s in (s for s in spans if s.lane == lane):
            ax.broken_barh([(s.start_s * 1e3, (s.end_s - s.start_s) * 1e3)], (i - 0.4, 0.8),
                           facecolors=colour(device, s.frame), edgecolor="black", linewidth=0.4)
            width = (s.end_s - s.start_s) / total
            if width > 0.02 * max(1, len(s.name) / 6):
                ax.text((s.start_s + s.end_s) / 2 * 1e3, i, s.name if len(frames) == 1 else f"{s.name}\nf{s.frame}",
                        ha="center", va="center", fontsize=7, clip_on=True)
    ax.set_yticks(range(len(lanes)), [lane.replace("fpga-", "FPGA ").replace("cpu-", "CPU ") for lane in lanes])
    ax.set_xlabel("time (ms)")
    ax.set_xlim(0, total * 1e3)
    ax.set_title(title or "schedule")
    ax.invert_yaxis()
    ax.grid(axis="x", linestyle=":", linewidth=0.5)
    devices = [d for d in ("fpga", "cpu") if any(lane.startswith(d) for lane in lanes)]
    shown = frames[:4]
    handles = [Patch(facecolor=colour(d, f), edgecolor="black", linewidth=0.4,
                     label=f"{d.upper()}" + (f", frame {f}" if len(frames) > 1 else ""))
               for d in devices for f in shown]
    legend_title = "device" + (", frame (shades repeat every 4 frames)" if len(frames) > 4 else
                               ", frame" if len(frames) > 1 else "")
    ax.legend(handles=handles, title=legend_title, fontsize=7, title_fontsize=7, loc="upper left",
              bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
