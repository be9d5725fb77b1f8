"""A simulated Zynq board for PYNQ: the build's engine (Verilated RTL or C-simulated HLS) behind the overlay's
register map, DDR with a non-coherent CPU cache, and the processor's clock registers. Needs pynq installed."""
from fpga_runtime.sim_board.device import SimulatedBoard
from fpga_runtime.sim_board.memory import SimulatedBoardError

__all__ = ["SimulatedBoard", "SimulatedBoardError"]
