"""A static timing estimate of the synthesised engine: every register-to-register path of yosys's flattened
netlist (`synth/netlist.json`) with the delays of `delay_model.py`, the estimated Fmax, and the worst paths by
the RTL's signal names, written to `fpga/synth/timing.json`.

It is an estimate before placement: nets get an average delay that grows with their fan-out, not a routed one.
Sequential primitives start and end paths (flip-flops; block RAM and UltraRAM at their clock; DSP48s at whichever
of their internal registers are used, so an unregistered DSP is part of the path through it); distributed RAM
and shift registers are combinational from their address to their output. Top-level ports count as registered
outside the engine (the AXI interconnect registers them).

An engine built with `--dsp-clock 2x` has a second clock, `ap_clk_2x`, twice `ap_clk` with aligned edges: a path
that starts or ends at a register of that clock has half a fabric period (its edges are half a period from the
next edge of either clock), so it counts twice its delay against the fabric clock and is marked "2x".
"""
from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from partitioner.codegen.netlist import Netlist, cell_param, instance_path
from partitioner.targets.delay_model import MARGIN, DelayModel

TIMING_FILE = "timing.json"
FLIP_FLOPS = {"FDRE", "FDSE", "FDCE", "FDPE", "FDRE_1", "FDSE_1"}
LUTS = {f"LUT{i}" for i in range(1, 7)}
MUXF = {"MUXF7", "MUXF8", "MUXF9"}
CARRIES = {"CARRY4", "CARRY8"}
LUTRAM_PREFIXES = ("RAM32", "RAM64", "RAM128", "RAM256", "RAM512", "SRL16", "SRLC16", "SRLC32")
BLOCK_RAMS = {"RAMB18E1", "RAMB36E1", "RAMB18E2", "RAMB36E2"}
ULTRA_RAMS = {"URAM288", "URAM288_BASE"}
DSPS = {"DSP48E1", "DSP48E2"}
BUFFERS = {"IBUF", "OBUF", "BUFG", "IOBUF", "OBUFT", "INV"}
CLOCK_PINS = ("C", "CLK", "CLKARDCLK", "CLKBWRCLK", "WCLK")
FAST_CLOCK_PORT = "ap_clk_2x"          # engine_top.sv's second clock (`--dsp-clock 2x`)


@dataclass
class TimingPath:
    start: str
    end: str
    delay_ns: float
    lut_levels: int = 0
    carry_bits: int = 0
    dsp: int = 0
    dsp_unregistered: int = 0     # DSPs the path passes through without stopping at an internal register
    ram: int = 0
    fanout_max: int = 0
    clock: str = "1x"             # "2x": the path starts or ends in the DSPs' double-speed clock (half a period)

    @property
    def period_ns(self) -> float:
        """The fabric clock period this path needs."""
        return self.delay_ns * (2 if self.clock == "2x" else 1)

    def row(self) -> dict:
        return {"from": self.start, "to": self.end, "lut_levels": self.lut_levels, "carry_bits": self.carry_bits,
                "dsp": self.dsp, "ram": self.ram, "delay_ns": round(self.delay_ns, 3),
                "dsp_unregistered": self.dsp_unregistered, "fanout_max": self.fanout_max, "clock": self.clock}


@dataclass
class TimingReport:
    clock_mhz: float
    model: str
    critical_ns: float
    worst_paths: list[TimingPath]
    dsp_cells: int = 0
    dsp_without_mreg_preg: int = 0
    dsp_cascaded: int = 0                    # DSPs adding another's P through PCIN (mac_cascade.sv's lane pairs)
    registers_used: dict = field(default_factory=dict)
    fast_critical_ns: float | None = None    # the worst path of the 2x clock (its own delay), with `--dsp-clock 2x`

    @property
    def estimated_fmax_mhz(self) -> float:
        return 1000.0 / self.critical_ns

    def to_json(self) -> dict:
        return {"clock_mhz": self.clock_mhz, "estimated_fmax_mhz": round(self.estimated_fmax_mhz, 1),
                "margin": f"+-{MARGIN:.0%} (delay model: partitioner/targets/delay_model.py)",
                "model": self.model, "critical_path_ns": round(self.critical_ns, 3),
                "dsp_cells": self.dsp_cells, "dsp_without_mreg_preg": self.dsp_without_mreg_preg,
                "dsp_cascaded": self.dsp_cascaded, "dsp_registers": self.registers_used,
                **({"dsp_clock": "2x", "fast_critical_path_ns": round(self.fast_critical_ns, 3),
                    "fast_estimated_fmax_mhz": round(1000.0 / self.fast_critical_ns, 1)}
                   if self.fast_critical_ns is not None else {}),
                "worst_paths": [p.row() for p in self.worst_paths]}


@dataclass
class _Arrival:
    time: float
    prev: int | None         # the input bit the worst arrival came through
    cell: str | None         # the cell it went through (None at a startpoint)


class _Analysis:
    def __init__(self, net: Netlist, model: DelayModel):
        self.net, self.m = net, model
        self.arrival: dict[int, _Arrival] = {}
        self.fast_clock = self._fast_clock_bits()
        self.fast_bits = self._fast_reach() if self.fast_clock else set()

    # ---- the 2x clock -----------------------------------------------------------------------------------------
    def _fast_clock_bits(self) -> set[int]:
        """The 2x clock's net and the nets its buffers drive."""
        bits = set(self.net.port_bits.get(FAST_CLOCK_PORT, []))
        grew = bool(bits)
        while grew:
            grew = False
            for cname, cell in self.net.cells.items():
                if cell["type"] in BUFFERS and any(b in bits for _, b in self.net.inputs[cname]):
                    for _, ob in self.net.outputs[cname]:
                        if ob not in bits:
                            bits.add(ob)
                            grew = True
        return bits

    def fast_cell(self, cname: str) -> bool:
        return any(pin in CLOCK_PINS and b in self.fast_clock for pin, b in self.net.inputs[cname])

    def _fast_reach(self) -> set[int]:
        """The nets a register of the 2x clock reaches through combinational cells."""
        loads: dict[int, list[tuple[str, str]]] = defaultdict(list)
        for cname, ins in self.net.inputs.items():
            for pin, b in ins:
                loads[b].append((cname, pin))
        frontier = [b for cname, cell in self.net.cells.items() if self.fast_cell(cname)
                    for pin, b in self.net.outputs[cname] if self.start_time(cell, pin) is not None]
        reach = set(frontier)
        while frontier:
            b = frontier.pop()
            for cname, pin in loads[b]:
                cell = self.net.cells[cname]
                if self.cell_delay(cell, pin) is None:
                    continue
                for opin, ob in self.net.outputs[cname]:
                    if ob not in reach and self.start_time(cell, opin) is None:
                        reach.add(ob)
                        frontier.append(ob)
        return reach

    # ---- what each cell is ----------------------------------------------------------------------------------
    def kind(self, cell: dict) -> str:
        t = cell["type"]
        if t in FLIP_FLOPS:
            return "ff"
        if t in LUTS:
            return "lut"
        if t in MUXF:
            return "muxf"
        if t in CARRIES:
            return "carry"
        if t.startswith(LUTRAM_PREFIXES):
            return "lutram"
        if t in BLOCK_RAMS:
            return "bram"
        if t in ULTRA_RAMS:
            return "uram"
        if t in DSPS:
            return "dsp"
        if t in BUFFERS:
            return "buffer"
        return "other"

    @staticmethod
    def lutram_read(pin: str) -> bool:
        """A distributed RAM's or SRL's read address: combinational to its output (ADDRH is RAM32M16's write)."""
        return pin.startswith(("A", "DPRA", "ADDR")) and pin != "ADDRH"

    @staticmethod
    def dsp_pin(pin: str) -> str:
        """What a DSP48 input feeds: "alu" (C, PCIN, CARRYIN: after the multiplier), "control" (clock enables,
        resets, clock: they end paths at the DSP's registers) or "mult" (A, B, D and the mode inputs)."""
        if pin == "C" or pin.startswith(("PCIN", "CARRYIN", "CARRYCASCIN", "MULTSIGNIN")):
            return "alu"
        if pin == "CLK" or pin.startswith(("CE", "RST")):
            return "control"
        return "mult"

    def dsp_regs(self, cell: dict) -> tuple[bool, bool, bool]:
        """(inputs registered, MREG, PREG); the multiplier's A operand is registered in AREG, or in the pre-adder's
        ADREG where the multiplier takes the pre-adder's sum (AMULTSEL "AD")."""
        a = cell_param(cell, "AREG", 1) > 0 or self.preadds(cell) and cell_param(cell, "ADREG", 1) > 0
        return a and cell_param(cell, "BREG", 1) > 0, cell_param(cell, "MREG", 1) > 0, cell_param(cell, "PREG", 1) > 0

    @staticmethod
    def preadds(cell: dict) -> bool:
        return str(cell.get("parameters", {}).get("AMULTSEL", "A")).strip() == "AD"

    def preadder_end(self, cell: dict, pin: str) -> float | None:
        """Where an unregistered A or D input passes the pre-adder (AMULTSEL "AD"): the adder and the setup at
        ADREG, or without it the multiplier's stages too; None for the other inputs."""
        if not self.preadds(cell) or pin not in ("A", "D") or cell_param(cell, f"{pin}REG", 1) > 0:
            return None
        if cell_param(cell, "ADREG", 1) > 0:
            return self.m.dsp_alu + self.m.dsp_setup
        mreg = cell_param(cell, "MREG", 1) > 0
        return self.m.dsp_alu + self.m.dsp_mult + (0.0 if mreg else self.m.dsp_alu) + self.m.dsp_setup

    def route(self, bit: int, sink_cell: dict, sink_pin: str) -> float:
        """The net's delay to this load: dedicated connections inside a slice or a DSP column are short."""
        source = self.net.driver.get(bit)
        if source is not None:
            src_type = self.net.cells[source[0]]["type"]
            if sink_cell["type"] in CARRIES and (sink_pin in ("CI", "CIN") and src_type in CARRIES
                                                 or src_type in LUTS and sink_pin in ("S", "DI")):
                return self.m.local
            if sink_cell["type"] in MUXF and src_type in LUTS | MUXF:
                return self.m.local
            if sink_pin.startswith(("PCIN", "ACIN", "BCIN", "CARRYCASCIN", "MULTSIGNIN")):
                return self.m.local
        fanout = max(1, self.net.loads.get(bit, 1))
        return self.m.net + self.m.net_fanout * math.log2(fanout)

    # ---- arrivals ---------------------------------------------------------------------------------------------
    def start_time(self, cell: dict, pin: str) -> float | None:
        """Clock-to-out where a cell output starts a path, else None (combinational output)."""
        kind = self.kind(cell)
        if kind == "ff":
            return self.m.ff_cko
        if kind == "bram":
            reg = cell_param(cell, "DOA_REG", 0) if "A" in pin.replace("DOUTB", "") else cell_param(cell, "DOB_REG", 0)
            return self.m.bram_cko_reg if reg else self.m.bram_cko
        if kind == "uram":
            reg = cell_param(cell, "OREG_A" if pin.endswith("_A") else "OREG_B", 1)
            return self.m.uram_cko_reg if reg else self.m.uram_cko
        if kind == "dsp":
            _, mreg, preg = self.dsp_regs(cell)
            if preg:
                return self.m.dsp_cko + self.m.dsp_out
            if mreg:
                return self.m.dsp_cko + self.m.dsp_alu + self.m.dsp_out
            return None
        return None

    def cell_delay(self, cell: dict, pin_in: str) -> float | None:
        """Input-to-output delay of a combinational arc, or None where the input ends a path."""
        kind = self.kind(cell)
        if kind == "lut":
            return self.m.lut
        if kind == "muxf":
            return self.m.muxf
        if kind == "carry":
            return self.m.carry8
        if kind == "buffer" or kind == "other":
            return 0.0
        if kind == "lutram":
            return self.m.lut if self.lutram_read(pin_in) else None
        if kind == "dsp":
            ain, mreg, preg = self.dsp_regs(cell)
            role = self.dsp_pin(pin_in)
            if role == "alu" and not preg:
                return self.m.dsp_alu + self.m.dsp_out
            if role == "control" or ain or mreg or preg:
                return None
            return self.m.dsp_mult + self.m.dsp_alu + self.m.dsp_out
        return None

    def end_time(self, cell: dict, pin_in: str) -> float:
        """What an input that ends a path needs after its arrival: setup, plus the DSP's own stages up to the
        first internal register it reaches."""
        kind = self.kind(cell)
        if kind == "bram":
            return self.m.bram_setup
        if kind == "uram":
            return self.m.uram_setup
        if kind == "dsp":
            ain, mreg, _ = self.dsp_regs(cell)
            role = self.dsp_pin(pin_in)
            preadd = self.preadder_end(cell, pin_in)
            if preadd is not None:
                return preadd
            if role == "alu":
                return self.m.dsp_alu + self.m.dsp_setup
            if role == "control" or ain:
                return self.m.dsp_setup
            return self.m.dsp_mult + (0.0 if mreg else self.m.dsp_alu) + self.m.dsp_setup
        return self.m.ff_setup

    def arrive(self, bit: int) -> _Arrival:
        """Worst arrival at a bit, over its driver's inputs, computed without recursion."""
        stack = [bit]
        while stack:
            b = stack[-1]
            if b in self.arrival:
                stack.pop()
                continue
            source = self.net.driver.get(b)
            if source is None:
                self.arrival[b] = _Arrival(self.m.ff_cko if b in self.net.port_in else 0.0, None, None)
                stack.pop()
                continue
            cname, pin = source
            cell = self.net.cells[cname]
            start = self.start_time(cell, pin)
            arcs = [(p, ib, self.cell_delay(cell, p)) for p, ib in self.net.inputs[cname]]
            arcs = [(p, ib, d) for p, ib, d in arcs if d is not None]
            pending = [ib for _, ib, _ in arcs if ib not in self.arrival]
            if pending:
                stack.extend(pending)
                if len(stack) > 4_000_000:
                    raise RuntimeError("timing: the netlist has a combinational loop")
                continue
            best = _Arrival(start if start is not None else 0.0, None, cname if start is None else None)
            if self.kind(cell) == "lutram":
                best = _Arrival(self.m.lutram_cko, None, None)
            for p, ib, d in arcs:
                t = self.arrival[ib].time + self.route(ib, cell, p) + d
                if t > best.time:
                    best = _Arrival(t, ib, cname)
            self.arrival[b] = best
            stack.pop()
        return self.arrival[bit]

    # ---- endpoints --------------------------------------------------------------------------------------------
    def ends_path(self, cell: dict, pin: str) -> bool:
        """A data input of a sequential element: flip-flop D/CE/R, a RAM's write side, a registered DSP input.
        Clock pins end nothing; combinational inputs (and a LUT RAM's read address) lead on."""
        kind = self.kind(cell)
        if kind in ("buffer", "other") or pin in ("C", "CLK", "CLKARDCLK", "CLKBWRCLK", "WCLK") and kind != "dsp":
            return False
        if kind == "dsp":
            return pin != "CLK" and self.cell_delay(cell, pin) is None
        if kind == "lutram":
            return not self.lutram_read(pin)
        return self.cell_delay(cell, pin) is None

    def endpoints(self):
        """(required time, endpoint name, input bit, in the 2x clock) for every input that ends a path, and each
        output port."""
        for cname, cell in self.net.cells.items():
            fast = self.fast_cell(cname)
            for pin, b in self.net.inputs[cname]:
                if self.ends_path(cell, pin):
                    t = self.arrive(b).time + self.route(b, cell, pin) + self.end_time(cell, pin)
                    yield t, f"{self._cell_label(cname, cell, b)}.{pin}", b, fast or b in self.fast_bits
        for b, pname in self.net.port_out.items():
            yield self.arrive(b).time + self.m.net, pname, b, False

    def _cell_label(self, cname: str, cell: dict, bit: int) -> str:
        """An endpoint's name: the RTL name of the register's output; for a RAM or DSP its instance path and type
        (yosys names those cells after the RTL hierarchy, then its own counters)."""
        if cell["type"] in FLIP_FLOPS:
            q = next((b for p, b in self.net.outputs[cname] if p == "Q"), None)
            if q is not None and not self.net.name(q).startswith("$"):
                return self.net.name(q)
            return f"{instance_path(self.net.name(q) if q is not None else cname)}/{cell['type']}"
        return f"{instance_path(cname)}/{cell['type']}"

    def internal_paths(self):
        """Stages inside a primitive that no fabric path shows: a block RAM's own minimum period (its FMAX), and a
        DSP48's register-to-register stages (AREG -> MREG, AREG -> PREG without MREG, MREG -> PREG)."""
        for cname, cell in self.net.cells.items():
            kind = self.kind(cell)
            if kind == "bram":
                yield self.m.bram_min_period, f"{instance_path(cname)} (inside {cell['type']})", None, \
                    self.fast_cell(cname)
            elif kind == "dsp":
                ain, mreg, preg = self.dsp_regs(cell)
                stages = [1000.0 / self.m.dsp_fmax(mreg=True)] if ain and mreg else []
                stages += [1000.0 / self.m.dsp_fmax(mreg=False)] if ain and not mreg and preg else []
                stages += [self.m.dsp_cko + self.m.dsp_alu + self.m.dsp_setup] if mreg and preg else []
                if stages:
                    out = next((b for p, b in self.net.outputs[cname] if p.startswith("P")), None)
                    label = self.net.name(out) if out is not None else cname
                    yield max(stages), f"{label} (inside {cell['type']})", None, self.fast_cell(cname)

    def trace(self, end_time: float, end_name: str, bit: int | None) -> TimingPath:
        path = TimingPath(start=end_name, end=end_name, delay_ns=end_time)
        if bit is None:                          # a stage inside one primitive
            path.ram, path.dsp = (1, 0) if "inside RAMB" in end_name else (0, 1)
            return path
        seen_cells: list[str] = []
        b: int | None = bit
        start = bit
        while b is not None:
            arr = self.arrive(b)
            path.fanout_max = max(path.fanout_max, self.net.loads.get(b, 0))
            if arr.cell is not None:
                seen_cells.append(arr.cell)
            start = b
            b = arr.prev
        driver = self.net.driver.get(start)
        path.start = self.net.name(start)
        if path.start.startswith("$"):
            path.start = instance_path(path.start) + (f"/{self.net.cells[driver[0]]['type']}" if driver else "")
        for cname in seen_cells:
            kind = self.kind(self.net.cells[cname])
            path.lut_levels += kind in ("lut", "lutram")
            path.carry_bits += 8 if kind == "carry" and self.net.cells[cname]["type"] == "CARRY8" else \
                4 if kind == "carry" else 0
            if kind == "dsp":
                path.dsp += 1
                path.dsp_unregistered += 1
        if driver is not None:
            kind = self.kind(self.net.cells[driver[0]])
            path.dsp += kind == "dsp"
            path.ram += kind in ("bram", "uram")
        return path


def estimate_timing(netlist: dict, model: DelayModel, clock_mhz: float, top: str = "engine_top",
                    worst: int = 10) -> TimingReport:
    """Every path's estimated delay; the worst `worst` of them (one per endpoint signal) and the Fmax."""
    net = Netlist(netlist, top)
    analysis = _Analysis(net, model)
    ends = list(analysis.endpoints()) + list(analysis.internal_paths())
    if not ends:
        raise ValueError(f"timing: no register-to-register path in module {top}")
    ends.sort(key=lambda e: -(e[0] + model.uncertainty) * (2 if e[3] else 1))
    paths: list[TimingPath] = []
    signals: set[str] = set()
    for t, name, bit, fast in ends:
        signal = re.sub(r"\[\d+\]", "", name if bit is None else name.rsplit(".", 1)[0])
        if signal in signals:
            continue
        signals.add(signal)
        path = analysis.trace(t + model.uncertainty, name, bit)
        path.clock = "2x" if fast else "1x"
        paths.append(path)
        if len(paths) == worst:
            break
    fast_ends = [t for t, _, _, fast in ends if fast]
    dsps = [c for c in net.cells.values() if c["type"] in DSPS]
    regs = defaultdict(int)
    for c in dsps:
        ain, mreg, preg = analysis.dsp_regs(c)
        regs[f"A/B {'reg' if ain else 'comb'}, M {'reg' if mreg else 'comb'}, P {'reg' if preg else 'comb'}"] += 1
    return TimingReport(clock_mhz=clock_mhz, model=model.name, critical_ns=paths[0].period_ns, worst_paths=paths,
                        fast_critical_ns=max(fast_ends) + model.uncertainty if fast_ends else None,
                        dsp_cells=len(dsps), dsp_without_mreg_preg=sum(1 for c in dsps
                                                                       if not all(analysis.dsp_regs(c)[1:])),
                        dsp_cascaded=sum(1 for c in dsps
                                         if any(isinstance(b, int) for b in c["connections"].get("PCIN", []))),
                        registers_used=dict(regs))


def write_timing(report: TimingReport, folder: Path) -> Path:
    path = folder / TIMING_FILE
    path.write_text(json.dumps(report.to_json(), indent=1) + "\n")
    return path


