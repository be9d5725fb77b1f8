"""What a build gives its caller: the plan and partition, the checks, int8 accuracy and the design; and what they
say (verified? why no FPGA subgraph? which output misses a cosine target? what share of the MACs the FPGA runs)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from fpga_runtime.checking.accuracy import AccuracyReport
from fpga_runtime.checking.frames import pinned_shape_hint
from fpga_runtime.plan import Plan
from partitioner.evaluate.float_check import OutputCheck
from partitioner.evaluate.int8_accuracy import LayerAccuracy
from partitioner.evaluate.sensitivity import TensorSensitivity
from partitioner.explore.design_space import Exploration
from partitioner.ir.graph import OpKind
from partitioner.placement.partition import Partition


@dataclass
class BuildResult:
    plan: Plan
    partition: Partition
    warnings: list[str]
    checks: list[OutputCheck] | None
    timings: list[tuple[str, float]]
    accuracy: AccuracyReport | None = None
    exploration: Exploration | None = None
    layers: list[LayerAccuracy] = field(default_factory=list)
    sensitivity: list[TensorSensitivity] = field(default_factory=list)
    splits: Exploration | None = None        # the branch splits weighed (the exploration's, or a fixed engine's)

    @property
    def verified(self) -> bool:
        return self.checks is not None and all(c.ok for c in self.checks)

    @property
    def fpga_macs(self) -> int:
        """The conv MACs the FPGA subgraphs run."""
        return sum((s.estimate or {}).get("macs", 0) for s in self.plan.subgraphs if s.device == "fpga")

    @property
    def fpga_mac_share(self) -> float:
        """The share of the model's conv MACs the FPGA subgraphs run."""
        total = sum((s.estimate or {}).get("macs", 0) for s in self.plan.subgraphs)
        return self.fpga_macs / total if total else 0.0

    @property
    def modelled_rate(self) -> float | None:
        """Whole frames per second of the chosen design under fpga-run's defaults (at the board clock), if explored."""
        chosen = self.exploration.chosen if self.exploration is not None else None
        return chosen.rate if chosen is not None else None

    def why_no_fpga(self) -> str | None:
        """Why a model with conv layers got no FPGA subgraph (None where it has one, or no convs): the most
        common reason its convs stayed on the CPU, or why no engine design fits; for dynamic inputs, the
        --input-shape to pass."""
        graph = self.partition.graph
        convs = [n for n in graph.nodes.values() if n.kind is OpKind.FUSED_CONV]
        if not convs or any(s.device == "fpga" for s in self.plan.subgraphs):
            return None
        if self.exploration is not None and self.exploration.chosen is None:
            return self.exploration.note
        reasons = Counter(self.partition.fallbacks.get(n.name) for n in convs if n.name in self.partition.fallbacks)
        why = reasons.most_common(1)[0][0] if reasons else "the cost model kept every region on the CPU"
        dynamic = [graph.tensors[t] for t in graph.inputs if not graph.tensors[t].is_static]
        if dynamic:
            why += "; e.g. " + " ".join(f"--input-shape {t.onnx_name}={pinned_shape_hint(t.shape)}" for t in dynamic)
        return f"{len(convs)} conv layers, none on the FPGA: {why}"

    def below(self, min_cosine: float) -> tuple[str, str] | None:
        """(worst output, first layer) where int8 falls below `min_cosine` against float, or None. Outputs of
        detections ordered by score have no meaningful cosine: `--min-f1` judges them."""
        if self.accuracy is None:
            return None
        low = [o for o in self.accuracy.outputs if o.cosine < min_cosine and not o.ranked]
        if not low:
            return None
        first = next((layer.tensor for layer in self.layers if layer.cosine < min_cosine), "none of the FPGA layers")
        return min(low, key=lambda o: o.cosine).name, first
