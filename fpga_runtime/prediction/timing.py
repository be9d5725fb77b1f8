"""Timing of CPU work, CPU <-> FPGA transfers and program starts on a board; engine layers are timed by
cycle_model.py. Lives on the runtime side so `predict` can re-time a build for any board; the partitioner's
cost model uses the same functions. Assumptions:
- Every program start costs INVOKE_S (descriptor program start and completion interrupt).
- Tensors crossing CPU <-> FPGA are quantised/dequantised on the CPU (4 bytes per element at the CPU's
  element-wise rate) and cross DDR once as int8.
- CPU: float32 MACs at the board's `cpu_gmacs`, element-wise work (4 bytes per element) at `cpu_gbps`.
"""
from __future__ import annotations

from fpga_runtime.boards import Board
from fpga_runtime.prediction.shared_ddr import layer_s

INVOKE_S = 50e-6


def transfer_s(elements: int, board: Board) -> float:
    return elements * 4 / (board.cpu_gbps * 1e9) + elements / (board.ddr_sustained_gbps * 1e9)


def cpu_s(macs: int, elements: int, board: Board) -> float:
    return macs / (board.cpu_gmacs * 1e9) + 4 * elements / (board.cpu_gbps * 1e9)


def fpga_subgraph_s(layers: list[tuple[int, int]], clock_mhz: float, boundary_elements: int, board: Board,
                    ddr_bytes_s: float | None = None) -> float:
    """A whole FPGA subgraph: its layers (engine cycles, DDR bytes) at `ddr_bytes_s` (the unit's share of the
    DDR, shared_ddr.py; the board's sustained bandwidth without one), its CPU<->FPGA transfers, one start."""
    ddr = ddr_bytes_s or board.ddr_sustained_gbps * 1e9
    return (sum(layer_s(c / (clock_mhz * 1e6), b / ddr) for c, b in layers)
            + transfer_s(boundary_elements, board) + INVOKE_S)
