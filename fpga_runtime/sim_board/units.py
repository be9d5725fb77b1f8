"""What sits behind the simulated board's AXI4-Lite address windows: engine compute units (the Verilated RTL,
or the C-simulated HLS engine behind a model of its ap_ctrl_hs registers) and plain register files (the AXI
interrupt controller, the processor's clock registers)."""
from __future__ import annotations

import threading
from pathlib import Path

from fpga_runtime.abi import CTRL_DONE, CTRL_IDLE, CTRL_START, Reg
from fpga_runtime.backends import BackendError
from fpga_runtime.sim_board.memory import SimulatedBoardError, SimulatedMemory


class RegisterFile:
    """Words that read back what was written (or their reset value)."""

    def __init__(self, reset: dict[int, int] | None = None):
        self.words = dict(reset or {})

    def read(self, offset: int) -> int:
        return self.words.get(offset, 0)

    def write(self, offset: int, value: int) -> None:
        self.words[offset] = value

    def close(self) -> None:
        pass


class RtlUnit:
    """One compute unit as Verilated RTL: the registers are the RTL's own AXI4-Lite slave. The engine advances
    while the host waits on it: every register access while it is busy first clocks it for up to `quantum`
    cycles (a poll of CTRL therefore sees ap_done at most `quantum` cycles late, in simulated time)."""

    def __init__(self, name: str, rtl: Path, memory: SimulatedMemory, timing, quiet: bool = True,
                 quantum: int = 100_000):
        from fpga_runtime.rtl_sim.engine import RtlEngine
        self.name = name
        self.engine = RtlEngine(rtl, timing, quiet=quiet)
        if not hasattr(self.engine.lib, "sim_run"):
            self.engine.close()
            raise SimulatedBoardError(f"{rtl}: an RTL engine from an older version, without the idle output the "
                                      "simulated board clocks it by: partition the model again")
        self.memory = memory
        self.quantum = quantum
        self.lock = threading.Lock()
        self.cycles = 0

    def _advance(self) -> None:
        if not self.engine.idle():
            self.cycles += self.engine.advance(self.quantum)
            addr = self.engine.fault()
            if addr is not None:
                raise SimulatedBoardError(f"{self.name}: the engine accessed {addr:#x}, outside every buffer "
                                          "allocated on the board (a wrong base address or program)")

    def read(self, offset: int) -> int:
        with self.lock:
            self._advance()
            return self.engine.read_reg(offset)

    def write(self, offset: int, value: int) -> None:
        with self.lock:
            self._advance()
            if offset == Reg.CTRL and value & CTRL_START:
                self.engine.map_regions(self.memory.regions())
            self.engine.write_reg(offset, value)

    def close(self) -> None:
        self.engine.close()


class CsimUnit:
    """One compute unit as the C-simulated HLS engine, behind a model of the ABI's ap_ctrl_hs registers: a write
    of ap_start runs the whole program at once, so the first poll sees ap_done."""

    def __init__(self, name: str, engine, memory: SimulatedMemory):
        self.name = name
        self.engine = engine
        self.memory = memory
        self.regs = RegisterFile()
        self.done = False
        self.isr = 0
        self.status = 0
        self.cycles = 0
        self.lock = threading.Lock()

    def _word64(self, lo: int) -> int:
        return self.regs.read(lo) | self.regs.read(lo + 4) << 32

    def _run(self) -> None:
        program, act, const = (self._word64(r) for r in (Reg.PROGRAM_LO, Reg.ACT_BASE_LO, Reg.CONST_BASE_LO))
        const_buf, const_at = self.memory.find(const)
        act_buf, act_at = self.memory.find(act)
        if not const <= program < const_buf.base + const_buf.ddr.size:
            raise SimulatedBoardError(f"{self.name}: program address {program:#x} is outside the constant region "
                                      f"at {const:#x}")
        try:
            self.cycles = self.engine.run(act_buf.ddr[act_at:], const_buf.ddr[const_at:], program - const,
                                          self.regs.read(Reg.LAYER_COUNT))
            self.status = 0
        except BackendError:
            self.status = 1          # refused, as the RTL reports it
        self.done = True
        if self.regs.read(Reg.IER) & 1:
            self.isr |= 1

    def read(self, offset: int) -> int:
        with self.lock:
            if offset == Reg.CTRL:
                value = CTRL_IDLE | (CTRL_DONE if self.done else 0)
                self.done = False
                return value
            if offset == Reg.ISR:
                return self.isr
            if offset in (Reg.CYCLES_LO, Reg.CYCLES_HI):
                return (self.cycles >> (32 if offset == Reg.CYCLES_HI else 0)) & 0xFFFFFFFF
            if offset == Reg.STATUS:
                return self.status
            return self.regs.read(offset)

    def write(self, offset: int, value: int) -> None:
        with self.lock:
            if offset == Reg.CTRL and value & CTRL_START:
                self._run()
            elif offset == Reg.ISR:
                self.isr ^= value & 3
            else:
                self.regs.write(offset, value)

    def close(self) -> None:
        pass
