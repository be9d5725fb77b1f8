"""Analytic timing of engine layers and CPU work on a board (model "analytic-v1").

Lives on the runtime side so `predict` can re-time a build for any board; the partitioner's cost model
uses the same functions. Assumptions:
- FPGA: int8 MACs at MAC_EFFICIENCY of the peak `dsp * DSP_SHARE * macs_per_dsp * clock`, overlapped with
  DDR traffic: a layer costs max(compute, bytes / DDR bandwidth). Every program start costs INVOKE_S.
- Tensors crossing CPU <-> FPGA are quantised/dequantised on the CPU (4 bytes per element at the CPU's
  element-wise rate) and cross DDR once as int8.
- CPU: float32 MACs at the board's `cpu_gmacs`, element-wise work (4 bytes per element) at `cpu_gbps`.
"""
from __future__ import annotations

from .boards import Board

MAC_EFFICIENCY = 0.6
DSP_SHARE = 0.8
INVOKE_S = 50e-6


def fpga_macs_per_s(board: Board) -> float:
    return board.dsp * DSP_SHARE * board.int8_macs_per_dsp * board.clock_mhz * 1e6 * MAC_EFFICIENCY


def fpga_layer_s(macs: int, nbytes: int, board: Board) -> tuple[float, float]:
    """(compute seconds, memory seconds) of one engine layer; the layer takes the larger."""
    return macs / fpga_macs_per_s(board), nbytes / (board.ddr_gbps * 1e9)


def transfer_s(elements: int, board: Board) -> float:
    return elements * 4 / (board.cpu_gbps * 1e9) + elements / (board.ddr_gbps * 1e9)


def cpu_s(macs: int, elements: int, board: Board) -> float:
    return macs / (board.cpu_gmacs * 1e9) + 4 * elements / (board.cpu_gbps * 1e9)


def fpga_subgraph_s(layers: list[tuple[int, int]], boundary_elements: int, board: Board) -> float:
    """A whole FPGA subgraph: its layers (macs, bytes), its CPU<->FPGA transfers and one program start."""
    return sum(max(fpga_layer_s(m, b, board)) for m, b in layers) + transfer_s(boundary_elements, board) + INVOKE_S
