"""Compute units clocked together on one DDR: the RTL against which the shared-DDR model
(prediction/shared_ddr.py) is checked (benchmarks/shared_ddr.py). The `verilator` backend runs its units on
threads, each with a fixed share of the bandwidth; here each has its equal share and what it leaves unused goes to
the others cycle by cycle (the harness's spill pool), so a unit in a compute-bound layer leaves bandwidth to a
neighbour in a memory-bound one, as the round robin of the board's DDR controller does."""
from __future__ import annotations

import ctypes
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from fpga_runtime.engine_image import EngineImage
from fpga_runtime.prediction.shared_ddr import layer_s, unit_bandwidth
from fpga_runtime.rtl_sim.engine import MemoryTiming, RtlEngine, SimulationError

UNLIMITED = 1e9          # bytes per cycle: a DDR that never holds a unit back (its port still does)


@dataclass
class StreamRun:
    finished: list[list[int]]       # per unit, the cycle each of its frames ended (all units still running)

    def steady_frames_per_cycle(self, skip: int = 1) -> float:
        """Frames per cycle of all units together, from each unit's frames after its first `skip` (the ramp,
        where the units' offsets still leave the DDR to fewer of them)."""
        if skip < 1 or any(len(ends) <= skip for ends in self.finished):
            raise ValueError(f"every unit needs more than skip={skip} >= 1 frames")
        return sum((len(ends) - skip) / (ends[-1] - ends[skip - 1]) for ends in self.finished)


def stream_together(rtl: Path, timing: MemoryTiming, units: int, programs: list[tuple[int, int]],
                    const: np.ndarray, acts: list[np.ndarray], frames: int, offsets: list[int],
                    max_cycles: int = 2_000_000_000) -> StreamRun:
    """`units` units on one DDR of `timing.ddr_bytes_per_cycle` (the whole board's), each running `frames` frames
    back to back (a frame: the `programs`, (address, layers), in order) in its own activation region, unit i
    starting at cycle `offsets[i]`; units run on until every one has finished `frames`. A program's register
    writes and reads clock only its unit (tens of cycles, as the driver's do)."""
    if len(acts) != units or len(offsets) != units:
        raise ValueError("one activation region and one start offset per unit")
    per_step = replace(timing, ddr_bytes_per_cycle=timing.ddr_bytes_per_cycle / units)
    engines = [RtlEngine(rtl, per_step, quiet=i > 0) for i in range(units)]
    lib = engines[0].lib
    if not hasattr(lib, "sim_run_together"):
        raise SimulationError(f"{rtl}: its simulation harness cannot clock units together (partition again)")
    for e in engines:
        lib.sim_share_ddr(e.handle, engines[0].handle)
    handles = (ctypes.c_void_p * units)(*[e.handle for e in engines])
    step = [0] * units                     # programs each unit has finished, over all its frames
    started = [False] * units
    finished: list[list[int]] = [[] for _ in range(units)]
    now = 0

    def begin(i: int) -> None:
        addr, layers = programs[step[i] % len(programs)]
        engines[i].start(acts[i], const, addr, layers)

    # a unit past its frames keeps running, so that the others' last frames still share the DDR with it
    while any(len(ends) < frames for ends in finished):
        for i in range(units):
            if not started[i] and now >= offsets[i]:
                begin(i)
                started[i] = True
        waiting = [offsets[i] - now for i in range(units) if not started[i]]
        budget = min(waiting) if waiting else max_cycles
        now += lib.sim_run_together(handles, units, budget)
        hit = [i for i in range(units) if engines[i].interrupt()]
        if not hit and not waiting:
            raise SimulationError(f"units clocked together: none finished within {max_cycles:,} cycles")
        for i in hit:
            engines[i].finish(f"unit {i}", programs[step[i] % len(programs)][1])
            step[i] += 1
            if step[i] % len(programs) == 0:
                finished[i].append(now)
            begin(i)
    for e in engines:
        e.close()
    return StreamRun(finished)


@dataclass
class SharingCheck:
    """Frames per cycle of `units` units on one DDR of `ddr_bytes_per_cycle`: the RTL's, the shared-DDR model's
    from the RTL's own per-layer cycles and bytes of a lone unit, and the two bounds the model lies between."""
    units: int
    ddr_bytes_per_cycle: float
    frame_bytes: int
    lone_frame_cycles: int           # one unit with the whole DDR to itself (measured)
    rtl: float
    model: float
    static_split: float              # each unit held to 1/units of the DDR at all times
    whole_ddr: float                 # each unit with the whole DDR, capped by the DDR's bandwidth

    @property
    def error(self) -> float:
        return self.model / self.rtl - 1


def _lone_layers(rtl: Path, timing: MemoryTiming, programs, const, act) -> tuple[list[int], list[int], int]:
    """(cycles, DDR bytes) of each layer of one frame, and the frame's cycles, on one unit alone."""
    engine = RtlEngine(rtl, timing, quiet=True)
    cycles, nbytes, frame = [], [], 0
    for addr, layers in programs:
        run = engine.run(act, const, addr, layers)
        frame += run.cycles
        for layer in run.layers:
            cycles.append(layer.cycles)
            nbytes.append(layer.ddr_bytes)
    engine.close()
    return cycles, nbytes, frame


def check_sharing(folder: Path, units: int, ddr_bytes_per_cycle: float, timing: MemoryTiming, frames: int = 3,
                  seed: int = 0) -> SharingCheck:
    """An engine folder's programs (one frame) on `units` units clocked together on one DDR, each `frames`
    frames back to back, started a lone frame / units apart (a stream of frames reaching the units in turn);
    against the shared-DDR model fed with one lone unit's per-layer RTL cycles (no DDR limit) and bytes."""
    image = EngineImage.load(folder)
    const = image.load_constants(folder)
    programs = [(p.addr, p.layers) for p in image.programs.values()]
    rng = np.random.default_rng(seed)
    acts = []
    for _ in range(units):
        act = image.fresh_activations()
        act[:] = rng.integers(0, 256, act.size, dtype=np.uint8)
        acts.append(act)
    rtl = folder / "rtl"
    cycles, nbytes, free_frame = _lone_layers(rtl, replace(timing, ddr_bytes_per_cycle=UNLIMITED), programs, const,
                                              acts[0].copy())
    lone = _lone_layers(rtl, replace(timing, ddr_bytes_per_cycle=ddr_bytes_per_cycle), programs, const,
                        acts[0].copy())[2]
    fixed = free_frame - sum(cycles)           # program starts and the gaps between layers
    total = sum(nbytes)

    def frame_at(bandwidth: float) -> float:
        return fixed + float(layer_s(cycles, np.asarray(nbytes, dtype=float) / bandwidth).sum())

    share = unit_bandwidth(cycles, nbytes, units, ddr_bytes_per_cycle, fixed)
    run = stream_together(rtl, replace(timing, ddr_bytes_per_cycle=ddr_bytes_per_cycle), units, programs, const,
                          acts, frames, [i * lone // units for i in range(units)])
    return SharingCheck(units, ddr_bytes_per_cycle, total, lone, run.steady_frames_per_cycle(),
                        units / frame_at(share), units / frame_at(ddr_bytes_per_cycle / units),
                        min(units / frame_at(ddr_bytes_per_cycle), ddr_bytes_per_cycle / max(total, 1)))
