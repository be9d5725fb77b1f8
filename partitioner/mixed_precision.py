"""`partition --min-cosine X [--min-f1 Y] --auto-fallback`: the fewest engine layers kept in float on the CPU that
bring every output to the accuracy asked for.

The build ranks the engine's tensors by what int8 rounding of each alone costs the outputs (sensitivity.py);
prefixes of that ranking are tried, growing by doubling until one meets the targets and then narrowed by
bisection, so k layers moved cost about 2 log2 k builds. Each try is a whole build with `--keep-on-cpu` for the
layers of the prefix: the calibration ranges are the float model's and do not change, so the ranking stays valid.
`--fallback-budget` caps the conv MACs the moved layers may take: the ranking loses the tensors that would pass it.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from partitioner.build import PartitionConfig, run_partition
from partitioner.evaluate.sensitivity import TensorSensitivity
from partitioner.placement.cost import node_cost
from partitioner.result import BuildResult

MAX_TRIES = 16


@dataclass
class Fallback:
    result: BuildResult
    kept: list[str] = field(default_factory=list)        # ONNX nodes whose layers moved to the CPU, in rank order
    tensors: list[str] = field(default_factory=list)     # the tensors that took them there
    tries: list[tuple[int, bool]] = field(default_factory=list)    # (prefix length, met) per build after the first
    first: BuildResult | None = None                     # the all-int8 build, when it did not meet the targets


def shortfall(result: BuildResult, min_cosine: float | None, min_f1: float | None) -> str | None:
    """Why `result` misses the targets, or None where it meets them."""
    if min_cosine is not None and (low := result.below(min_cosine)) is not None:
        worst = min((o for o in result.accuracy.outputs if o.name == low[0]), key=lambda o: o.cosine)
        return f"output {low[0]!r} cosine {worst.cosine:.5f} < {min_cosine}"
    if min_f1 is not None and result.accuracy is not None and result.accuracy.detections is not None:
        f1 = result.accuracy.detections.f1
        if f1 is not None and f1 < min_f1:
            return f"detection F1 {f1:.3f} < {min_f1}"
    return None


def _prefix(ranking, k: int) -> tuple[list[str], list[str]]:
    nodes: list[str] = []
    for s in ranking[:k]:
        nodes += [n for n in s.layers if n not in nodes]
    return nodes, [s.tensor for s in ranking[:k]]


def layer_macs(result: BuildResult) -> dict[str, int]:
    """Conv MACs per engine layer, by the first ONNX node's name (what --keep-on-cpu and the ranking use)."""
    graph = result.partition.graph
    macs: dict[str, int] = {}
    for node in graph.nodes.values():
        macs[node.label] = macs.get(node.label, 0) + node_cost(node, graph).macs
    return macs


def within_budget(ranking: list[TensorSensitivity], macs: dict[str, int], allowed: float
                  ) -> list[TensorSensitivity]:
    """The ranking, worst first, without the tensors whose layers would take the layers moved so far past
    `allowed` MACs: a budget keeps an expensive early layer from buying a target the cheaper ones can meet."""
    kept, moved, spent = [], set(), 0
    for s in ranking:
        extra = sum(macs.get(n, 0) for n in set(s.layers) - moved)
        if spent + extra <= allowed:
            kept.append(s)
            moved |= set(s.layers)
            spent += extra
    return kept


def meet_accuracy(cfg: PartitionConfig, min_cosine: float | None, min_f1: float | None,
                  echo: Callable[[str], None] = lambda _: None, budget: float | None = None) -> Fallback:
    """Builds `cfg`; where it misses the targets, moves the fewest most sensitive layers to the CPU, with `budget`
    the largest share of the FPGA's conv MACs they may take (None: no limit). The build left in cfg.out_dir is the
    returned one."""
    first = run_partition(replace(cfg, sensitivity=True), echo)
    why = shortfall(first, min_cosine, min_f1)
    if why is None:
        return Fallback(first)
    ranking = [s for s in first.sensitivity if s.layers]
    if budget is not None:
        macs = layer_macs(first)
        ranking = within_budget(ranking, macs, budget * first.fpga_macs)
        echo(f"auto-fallback: {len(ranking)} engine tensors whose layers fit the budget of {budget:.0%} of the "
             "FPGA's conv MACs")
    echo(f"auto-fallback: {why} in all-int8; trying the most sensitive of {len(ranking)} engine tensors in float")
    fallback = Fallback(first, first=first)
    built: dict[int, BuildResult] = {}

    def build(k: int) -> BuildResult:
        nodes = _prefix(ranking, k)[0]
        built[k] = run_partition(replace(cfg, keep_on_cpu=tuple(cfg.keep_on_cpu) + tuple(nodes), sensitivity=False),
                                 lambda _: None)
        return built[k]

    def attempt(k: int) -> bool:
        met = shortfall(build(k), min_cosine, min_f1)
        fallback.tries.append((k, met is None))
        echo(f"auto-fallback: {k} tensor(s), {len(_prefix(ranking, k)[0])} layer(s) in float -> "
             + ("targets met" if met is None else met))
        return met is None

    low, high, k = 0, None, 1
    while k <= len(ranking) and len(fallback.tries) < MAX_TRIES:
        if attempt(k):
            high = k
            break
        low = k
        if k == len(ranking):
            break
        k = min(2 * k, len(ranking))
    if high is None:
        fallback.result = built[max(built)] if built else first
        fallback.kept, fallback.tensors = _prefix(ranking, max(built, default=0))
        return fallback
    while high - low > 1 and len(fallback.tries) < MAX_TRIES:
        mid = (low + high) // 2
        if attempt(mid):
            high = mid
        else:
            low = mid
    fallback.kept, fallback.tensors = _prefix(ranking, high)
    if fallback.tries[-1][0] != high:               # the folder holds the last build tried: make it the chosen one
        build(high)
    fallback.result = built[high]
    return fallback
