"""plan.json: fixed keys, reader checks, and the ONNX files it names are enough to run the model."""
from __future__ import annotations

import json

import numpy as np
import pytest

from fpga_runtime.onnx_chain import run_plan_on_onnxruntime
from fpga_runtime.plan import PlanError, read_plan
from partitioner.build import PartitionConfig, run_partition


@pytest.fixture()
def build(tmp_path, zoo):
    run_partition(PartitionConfig(model=zoo("two-branch"), out_dir=tmp_path / "b", picture=False,
                                  offload_everything=True))
    return tmp_path / "b"


def test_fixed_keys(build):
    raw = json.loads((build / "plan.json").read_text())
    assert raw["version"] == 1 and isinstance(raw["subgraphs"], list)
    for s in raw["subgraphs"]:
        assert set(s) >= {"name", "device", "role", "nodes", "inputs", "outputs", "depends_on", "parallel_group",
                          "onnx", "estimate"}
        assert s["device"] in ("cpu", "fpga") and s["role"] in ("pre", "compute", "post")
        for t in s["inputs"] + s["outputs"]:
            assert set(t) == {"name", "shape", "dtype"}


def test_plan_alone_runs_the_model(build, tmp_path):
    plan = read_plan(build)
    x = np.random.default_rng(0).standard_normal(plan.inputs[0].shape).astype(np.float32)
    out = run_plan_on_onnxruntime(plan, {"x": x})
    assert set(out) == {t.name for t in plan.outputs}
    with pytest.raises(PlanError, match="missing model inputs"):
        run_plan_on_onnxruntime(plan, {})


def test_reader_rejects_wrong_version_and_bad_order(build):
    raw = json.loads((build / "plan.json").read_text())
    (build / "plan.json").write_text(json.dumps({**raw, "version": 99}))
    with pytest.raises(PlanError, match="version 99"):
        read_plan(build)
    raw["subgraphs"].reverse()
    (build / "plan.json").write_text(json.dumps(raw))
    with pytest.raises(PlanError, match="do not run before it|nothing before it produces"):
        read_plan(build)


def test_reader_reports_missing_plan(tmp_path):
    with pytest.raises(PlanError, match="run `partition` first"):
        read_plan(tmp_path)


def test_fpga_chain_is_the_longest_dependency_path_of_fpga_subgraphs(build):
    """Parallel branches do not lengthen it; a CPU subgraph between two FPGA ones passes the chain through."""
    plan = read_plan(build)
    chain = plan.fpga_chain()
    by_name = {s.name: s for s in plan.subgraphs}
    assert chain and all(by_name[n].device == "fpga" for n in chain)
    assert len({by_name[n].parallel_group for n in chain if by_name[n].parallel_group is not None}) == \
        sum(1 for n in chain if by_name[n].parallel_group is not None)      # one branch per parallel group
    fpga = [s for s in plan.subgraphs if s.device == "fpga"]
    assert len(chain) < len(fpga) or not any(s.parallel_group is not None for s in fpga)
    plan.subgraphs[-1].depends_on = []            # a plan whose last subgraph depends on nothing
    assert len(plan.fpga_chain()) <= len(chain)


def test_board_clocks_are_the_engines_clock_on_each_board(build):
    """plan.json records, per board, the clock the engine runs at there (the board's default or, below the RTL's
    estimated Fmax, a clock its overlay's MMCM makes, whichever is lower); predictions for another board use it; a
    malformed entry is refused."""
    from fpga_runtime.abi import EngineConfig
    from fpga_runtime.boards import BOARDS
    from fpga_runtime.pl_clocks import clock_at_most
    from fpga_runtime.prediction.virtual_time import clock_mhz
    from partitioner.explore.clock import estimated_fmax_mhz
    plan = read_plan(build)
    assert set(plan.board_clocks) == set(BOARDS)
    for name, clock in plan.board_clocks.items():
        board = BOARDS[name]
        fmax = estimated_fmax_mhz(board, EngineConfig(**plan.engine_config))
        # at most the lower of the two, and the fastest clock the overlay's MMCM makes below it (in 2-3 MHz steps)
        assert clock <= min(board.clock_mhz, fmax) + 1e-9
        made = clock_at_most(board.family, min(board.clock_mhz, fmax), plan.engine_config.get("dsp_clock", 1))
        if made is not None:
            assert clock == pytest.approx(made, abs=1e-3) and clock > min(board.clock_mhz, fmax) - 4
        else:                             # no PS (Alveo): the Fmax rounded down to 5 MHz, or the board's own
            assert clock > min(board.clock_mhz, fmax) - 5
        if name != plan.board:
            assert clock_mhz(plan, board) == clock
    assert clock_mhz(plan, BOARDS[plan.board]) == plan.engine_config["clock_mhz"] == plan.board_clocks[plan.board]
    raw = json.loads((build / "plan.json").read_text())
    for bad in ({"zcu104": "fast"}, {"zcu104": -1}, ["zcu104"], {"zcu104": 1e9}):
        (build / "plan.json").write_text(json.dumps({**raw, "board_clocks": bad}))
        with pytest.raises(PlanError, match="board_clocks"):
            read_plan(build)
