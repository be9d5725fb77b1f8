"""The draft partitions the exploration sizes designs on: every supported layer offloaded, and the ways of
cutting the FPGA regions at their forks that it weighs (`branch_splits`)."""
from __future__ import annotations

import math
from dataclasses import dataclass

from fpga_runtime.boards import Board
from partitioner.ir.graph import Graph
from partitioner.placement.cost import CostModel
from partitioner.placement.partition import Device, Partition, partition
from partitioner.targets import fpga as fpga_target

MAX_SPLITS = 8          # candidates beyond "no split"; more distinct branch sizes are thinned evenly


@dataclass(frozen=True)
class Stage:
    """A subgraph of a draft partition, as the frame schedule sees it."""
    name: str
    device: str                  # "cpu" or "fpga"
    depends_on: tuple[str, ...]
    nodes: tuple[str, ...]       # the engine layers of an FPGA stage
    fixed_s: float               # a CPU stage's time; an FPGA stage's transfers and program start


@dataclass(frozen=True)
class BranchSplit:
    """One way to cut the FPGA regions at their forks: every parallel branch holding at least `share` of the
    model's offloaded MACs becomes a subgraph of its own (`math.inf`: none does)."""
    share: float
    stages: tuple[Stage, ...]
    fpga_subgraphs: int
    parallel_groups: int

    @property
    def label(self) -> str:
        if math.isinf(self.share):
            return "no split"
        return f"branches >= {self.share * 100:.2g} % of MACs"

    def as_dict(self) -> dict:
        return {"share": None if math.isinf(self.share) else self.share, "label": self.label,
                "fpga_subgraphs": self.fpga_subgraphs, "parallel_groups": self.parallel_groups}


def _stages(draft: Partition) -> tuple[Stage, ...]:
    stages = []
    for sg in draft.subgraphs:
        est = sg.estimate
        on_fpga = sg.device is Device.FPGA
        fixed = (est.transfer_s + est.invoke_s if on_fpga else est.cpu_s) if est is not None else 0.0
        stages.append(Stage(sg.name, sg.device.value, tuple(sg.depends_on), tuple(sg.nodes) if on_fpga else (),
                            fixed))
    return tuple(stages)


def _draft(graph: Graph, board: Board, keep: tuple[str, ...], share: float | None,
           split_all: bool = False) -> Partition:
    return partition(graph, fpga_target, CostModel(board), offload_everything=True, keep_on_cpu=keep,
                     split_all_branches=split_all, branch_share=share)


def full_offload_draft(graph: Graph, board: Board, keep: tuple[str, ...] = ()) -> tuple[list[str], int, list[Stage]]:
    """The layers a full offload would put on the FPGA (the cost model needs a design first), in how many
    subgraphs, and that draft's stages, its branches split by the cost model's rule."""
    draft = _draft(graph, board, keep, None)
    fpga = [sg for sg in draft.subgraphs if sg.device is Device.FPGA]
    return [n for sg in fpga for n in sg.nodes], max(1, len(fpga)), list(_stages(draft))


def _thresholds(offered: list[int], total: int) -> list[float]:
    """The distinct branch sizes, as shares of the offloaded MACs, largest first; each, as a threshold, splits
    one more set of branches off than the one before it."""
    shares = sorted({m / total for m in offered if m > 0}, reverse=True)
    if len(shares) > MAX_SPLITS:
        step = (len(shares) - 1) / (MAX_SPLITS - 1)
        shares = [shares[round(i * step)] for i in range(MAX_SPLITS)]
    return shares


def branch_splits(graph: Graph, board: Board, keep: tuple[str, ...] = (),
                  split_all: bool = False) -> tuple[list[str], list[BranchSplit]]:
    """The layers some candidate offloads and the distinct ways of splitting the regions at forks, from no split
    to every branch with MACs split off. Each candidate is a whole draft partition, so every piece is convex and the
    subgraph graph acyclic by the carve's construction. `split_all`: the one way `--offload-all` builds split
    (every branch), nothing to choose."""
    if split_all:
        draft = _draft(graph, board, keep, None, split_all=True)
        nodes = [n for sg in draft.subgraphs if sg.device is Device.FPGA for n in sg.nodes]
        return nodes, [_candidate(draft, 0.0)]
    everything = _draft(graph, board, keep, 0.0)
    total = sum(sg.estimate.macs for sg in everything.subgraphs
                if sg.device is Device.FPGA and sg.estimate is not None)
    out: list[BranchSplit] = []
    seen: set[frozenset] = set()
    offloaded: set[str] = set()
    for share in [math.inf, *(_thresholds(everything.fork_branches, total) if total else [])]:
        draft = _draft(graph, board, keep, share)
        pieces = [frozenset(sg.nodes) for sg in draft.subgraphs if sg.device is Device.FPGA]
        if frozenset(pieces) not in seen:
            seen.add(frozenset(pieces))
            offloaded.update(*pieces)
            out.append(_candidate(draft, share))
    # a cut can leave a piece of data movement alone, which goes to the CPU: candidates may differ in such layers,
    # and the designs are sized and timed for all of them
    return [n for n in graph.nodes if n in offloaded], out


def _candidate(draft: Partition, share: float) -> BranchSplit:
    pieces = [sg for sg in draft.subgraphs if sg.device is Device.FPGA]
    groups = {sg.parallel_group for sg in pieces if sg.parallel_group is not None}
    return BranchSplit(share, _stages(draft), max(1, len(pieces)), len(groups))
