"""CPU time from measured per-op costs (fpga_runtime/cpu_costs.py): the table, its scaling to a board, the plan's
op lists, and `fpga-run measure-cpu` feeding `predict`."""
from __future__ import annotations

import json

import numpy as np
import pytest

from fpga_runtime.boards import board
from fpga_runtime.prediction import cpu_costs
from partitioner.build import PartitionConfig, run_partition


def test_measurement_fits_per_node_and_per_element_costs(monkeypatch):
    """With onnxruntime's runs timed by a known law (a session run, plus per node, plus per element), the fit
    recovers it: per-element costs, per-node costs net of the session run, the element-wise throughput."""
    session, node, element = 5e-6, 1e-6, 2e-9
    monkeypatch.setattr(
        cpu_costs,
        "_time",
        lambda s, feeds, repeats: (
            session + node * (s.get_inputs()[0].shape != [1, 1, 2, 2]) + element * _elements(s, feeds),
            _elements(s, feeds),
        ),
    )
    table = cpu_costs.measure(ops=("Add", "Sigmoid", "Transpose", "NonMaxSuppression"), repeats=1)
    assert table.session_s == pytest.approx(session + element * 8)        # the Identity model's 2x4 elements
    for op, cost in table.ops.items():
        assert cost.element_s == pytest.approx(element), op
        assert cost.call_s == pytest.approx(node - element * 8), op
    assert table.gbps == pytest.approx(4 / element / 1e9)
    again = cpu_costs.CostTable.from_json(json.loads(json.dumps(table.to_json())))
    assert again == table


def _elements(session, feeds) -> int:
    return sum(v.size for v in feeds.values()) + sum(np.asarray(o).size for o in session.run(None, feeds))


def test_measurement_on_this_machine_covers_each_op():
    """Real timings (noisy: no magnitudes asserted): every op gets non-negative costs, and Conv a positive cost
    per MAC (its two sizes differ by 256x in MACs, far beyond any noise)."""
    table = cpu_costs.measure(ops=("Add", "Conv", "Softmax"), repeats=5)
    assert set(table.ops) == {"Add", "Conv", "Softmax"} and table.session_s > 0
    assert all(c.call_s >= 0 and c.element_s >= 0 and c.mac_s >= 0 for c in table.ops.values())
    assert table.ops["Conv"].mac_s > 0


def test_shipped_table_scales_to_each_board():
    """The shipped table (measured on the development machine) covers every op it times; on a board its
    per-element costs scale by the element-wise throughputs' ratio and its per-node and per-session costs by
    clock x work per clock; a table measured on a board is used there as it is."""
    table = cpu_costs.load()
    assert set(cpu_costs.MEASURED_OPS) <= set(table.ops) and table.session_s > 0 and table.ghz > 0
    zcu, pynq = board("zcu104"), board("pynq-z2")
    ops = [["Sigmoid", 100_000, 0], ["Concat", 50_000, 0], ["SomeCustomOp", 10_000, 0], ["Conv", 500, 10**6]]
    fixed = table.session_s + sum(table.ops.get(op, table.default).call_s for op, _, _ in ops)
    work = sum(table.ops.get(op, table.default).seconds(e, m) - table.ops.get(op, table.default).call_s
               for op, e, m in ops)
    for b in (zcu, pynq):
        want = fixed * table.ghz / (b.cpu_ghz * b.cpu_ipc) + work * table.gbps / b.cpu_gbps
        assert table.subgraph_s(ops, b) == pytest.approx(want)
    assert table.subgraph_s(ops, pynq) > table.subgraph_s(ops, zcu)
    alone = table.subgraph_s(ops, zcu) - table.subgraph_s(ops, zcu, session=False)
    assert alone == pytest.approx(table.session_s * table.fixed_scale_for(zcu))
    mine = cpu_costs.CostTable(table.ops, table.default, table.gbps, "the board", "zcu104", table.session_s,
                               table.ghz)
    assert mine.subgraph_s(ops, zcu) == pytest.approx(fixed + work)
    assert mine.subgraph_s(ops, pynq) == pytest.approx(table.subgraph_s(ops, pynq))


def test_plan_records_cpu_ops_and_predict_uses_a_measured_table(tmp_path, zoo):
    """The plan lists each CPU subgraph's ops with their elements; `fpga-run measure-cpu` writes the table
    measured on this machine into the build, and `predict` then times the CPU subgraphs with it, unscaled."""
    from click.testing import CliRunner

    from fpga_runtime.cli import main as fpga_run
    from fpga_runtime.plan import read_plan
    from fpga_runtime.prediction.virtual_time import durations_for
    out = tmp_path / "b"
    run_partition(PartitionConfig(model=zoo("ssd-mobilenet-v1", 96), out_dir=out, picture=False, accuracy=False))
    plan = read_plan(out)
    zcu = board(plan.board)
    cpu = [s for s in plan.subgraphs if s.device == "cpu"]
    assert cpu and all(s.estimate["ops"] for s in cpu)
    shipped = cpu_costs.load()
    post = next(s for s in cpu if s.name.startswith("cpu_post"))
    assert {op for op, _, _ in post.estimate["ops"]} >= {"Softmax", "Concat"}
    before = durations_for(plan, zcu)
    for s in cpu:
        assert s.estimate["cpu_s"] == pytest.approx(shipped.subgraph_s(s.estimate["ops"], zcu))
        assert before[s.name] == pytest.approx(s.estimate["cpu_s"])
    result = CliRunner().invoke(fpga_run, ["measure-cpu", str(out), "--repeats", "3"])
    assert result.exit_code == 0, result.output
    assert "| cpu_post_0 |" in result.output
    table = cpu_costs.load(out)
    assert table.board == plan.board and (out / "cpu_costs.json").exists()
    after = durations_for(read_plan(out), zcu)
    for s in cpu:
        assert after[s.name] == pytest.approx(table.subgraph_s(s.estimate["ops"], zcu))
        assert after[s.name] < before[s.name]            # this machine is faster than the board's CPU
    fpga = [s.name for s in plan.subgraphs if s.device == "fpga"]
    assert all(after[n] == before[n] for n in fpga)
    # `predict` names the side that bounds the rate: a CPU a thousand times slower than the table, or free
    from fpga_runtime.prediction.virtual_time import predict
    for factor, side in ((1000.0, "cpu"), (0.0, "fpga")):
        scaled = cpu_costs.CostTable({k: cpu_costs.OpCost(c.call_s * factor, c.element_s * factor, c.mac_s * factor)
                                      for k, c in table.ops.items()}, table.default, table.gbps, "test", plan.board,
                                     table.session_s * factor, table.ghz)
        (out / "cpu_costs.json").write_text(json.dumps(scaled.to_json()))
        assert predict(out, frames=8).limited_by == side
    listing = CliRunner().invoke(fpga_run, ["predict", str(out), "--frames", "8"])
    assert listing.exit_code == 0 and "| limited by |" in listing.output and "| FPGA |" in listing.output
