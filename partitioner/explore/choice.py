"""What a build runs on: the engine design and branch split the exploration chooses for a model and board, or
the split a design fixed by hand serves best; refusals where none fits or reaches the asked rate."""
from __future__ import annotations

from fpga_runtime.abi import EngineConfig
from fpga_runtime.boards import Board
from partitioner.errors import ModelError
from partitioner.explore.design_space import UNITS, Exploration, check_fixed, describe, explore
from partitioner.explore.draft import branch_splits, full_offload_draft
from partitioner.ir.graph import Graph


def choose_design(graph: Graph, board: Board, *, keep_on_cpu: tuple[str, ...] = (), offload_all: bool = False,
                  compute_units: int | None = None, target_fps: float | None = None, objective: str = "throughput",
                  clock_mhz: float | None = None, in_flight: int | None = None, dsp_clock: int = 1,
                  winograd: str = "off") -> Exploration:
    """The design and split for this model and board; a board no design fits (with units fixed), or a rate no
    design reaches, is an error."""
    nodes, splits = branch_splits(graph, board, keep_on_cpu, split_all=offload_all)
    units = (compute_units,) if compute_units else UNITS
    exploration = explore(graph, nodes, splits[0].fpga_subgraphs, board, target_fps, units, objective,
                          clock_mhz=clock_mhz, splits=splits, in_flight=in_flight, dsp_clock=dsp_clock,
                          winograd=winograd)
    if exploration.chosen is None and (compute_units or target_fps):
        raise ModelError(exploration.note + (f" (with --compute-units {compute_units})" if compute_units else ""))
    if target_fps is not None and exploration.chosen is not None and exploration.chosen.rate < target_fps:
        best = exploration.chosen
        raise ModelError(f"--target-fps {target_fps:g}: no engine design reaches it on {board.name}; the fastest "
                         f"that fits, {describe(best)}, gives {best.rate:.1f} fps (modelled)")
    return exploration


def fixed_engine_splits(graph: Graph, board: Board, engine: EngineConfig, *, keep_on_cpu: tuple[str, ...] = (),
                        objective: str = "throughput", in_flight: int | None = None,
                        winograd: str = "off") -> Exploration | None:
    """For an engine fixed by hand, the branch split its units serve best (`choose_design` weighs the splits
    together with the design)."""
    nodes, splits = branch_splits(graph, board, keep_on_cpu)
    if not nodes:
        return None
    return explore(graph, nodes, splits[0].fpga_subgraphs, board, objective=objective, splits=splits,
                   fixed=engine, in_flight=in_flight, winograd=winograd)


def check_fixed_engine(graph: Graph, board: Board, engine: EngineConfig) -> None:
    """An engine fixed by hand that the board cannot hold is an error naming the resource."""
    nodes, subgraphs, _ = full_offload_draft(graph, board)
    if nodes:
        why = check_fixed(graph, nodes, subgraphs, engine, board)
        if why:
            raise ModelError(why)
