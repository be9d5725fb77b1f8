"""`pynq` backend: the build's overlay on a Zynq board through PYNQ, or the same driver on a simulated board.

The overlay loads with `pynq.Overlay` (bitstream and .hwh); its engine compute units are the IP of the engine's
VLNV in `ip_dict`, driven by `EngineDriver` through their `register_map` (ap_ctrl_hs, docs/kernel-abi.md).
Memory comes from `pynq.allocate`: one constant region and one activation region per frame in flight,
physically contiguous, flushed before the engine reads and invalidated before the CPU reads. A tensor passed
between two FPGA subgraphs never leaves the board's memory.

With `simulate="verilator"` or `"csim"` the active PYNQ device is a `SimulatedBoard`; nothing else changes.
The driver waits by polling CTRL. The overlay routes the engines' interrupts through an AXI interrupt
controller for PYNQ's `Interrupt`, but asyncio waits from the scheduler's worker threads would share that one
controller across event loops, so polling (every 20 us to 1 ms) is the one tested path.
"""
from __future__ import annotations

import shutil
import tempfile
import time
import warnings
from collections import deque
from pathlib import Path

import numpy as np

try:
    import pynq
    from pynq import DefaultIP
except ImportError as exc:          # load_backend turns this into a one-line error
    raise ImportError(f"{exc} (the pynq backend needs PYNQ: on a board it comes with the image; elsewhere "
                      "pip install pynq==4.0.0)") from None

from fpga_runtime import engine_parts
from fpga_runtime.abi import ADDRESS_BITS, CTRL_DONE, CTRL_START, ENGINE_VLNV, PERF_COUNTERS, Reg
from fpga_runtime.backends import STATS_WINDOW, Backend, BackendError, ThreadedUnits, timed
from fpga_runtime.engine_image import EngineImage, Program, TensorView

OVERLAY_DIR = "overlay"
REQUIRED_REGISTERS = ["CTRL", "IP_ISR", "program_1", "program_2", "layer_count", "act_1", "act_2", "consts_1",
                      "consts_2", "cycles_1", "cycles_2"]
STAND_IN = "sim-overlay-"
BOARD_TIMEOUT_S = 60.0
SIM_TIMEOUT_S = 3600.0


class EngineDriver(DefaultIP):
    """One engine compute unit, bound by VLNV when the overlay loads. It reads and writes the registers at their
    docs/kernel-abi.md offsets rather than through `register_map`, whose names come from the metadata: a Zynq
    .hwh names 64-bit arguments' halves (`program_1`, `program_2`) and lists every register, an Alveo .xclbin
    names whole arguments (`program`) and lists no read-only register."""

    bindto = [ENGINE_VLNV]

    def _write64(self, offset: int, value: int) -> None:
        self.write(offset, value & 0xFFFFFFFF)
        self.write(offset + 4, value >> 32)

    def _read64(self, offset: int) -> int:
        return int(self.read(offset)) | int(self.read(offset + 4)) << 32

    def launch(self, program_addr: int, layers: int, act_addr: int, const_addr: int) -> None:
        self._write64(Reg.PROGRAM_LO, program_addr)
        self.write(Reg.LAYER_COUNT, layers)
        self._write64(Reg.ACT_BASE_LO, act_addr)
        self._write64(Reg.CONST_BASE_LO, const_addr)
        self.write(Reg.GIE, 1)
        self.write(Reg.IER, 1)
        self.write(Reg.CTRL, CTRL_START)

    def wait_done(self, timeout_s: float, what: str) -> None:
        """Poll ap_done (reading CTRL clears it), then acknowledge the interrupt status."""
        deadline = time.monotonic() + timeout_s
        pause = 20e-6
        while not int(self.read(Reg.CTRL)) & CTRL_DONE:
            if time.monotonic() > deadline:
                raise BackendError(f"{what}: the engine did not finish within {timeout_s:g} s (ap_done never rose)")
            time.sleep(pause)
            pause = min(2 * pause, 1e-3)
        isr = int(self.read(Reg.ISR))
        if isr:
            self.write(Reg.ISR, isr)

    @property
    def cycles(self) -> int:
        return self._read64(Reg.CYCLES_LO)

    @property
    def refused_layer(self) -> int | None:
        """The layer a program was refused at (RTL engines report it), or None."""
        if "status" not in self._registers or not int(self.read(Reg.STATUS)) & 1:
            return None
        return int(self.read(Reg.ERROR_LAYER))

    def counters(self) -> dict[str, int]:
        """The RTL engine's performance counters, where the overlay's register map has them."""
        if f"{PERF_COUNTERS[0]}_1" not in self._registers:
            return {}
        return {name: self._read64(Reg.COUNTERS + 8 * i) for i, name in enumerate(PERF_COUNTERS)}


def overlay_files(folder: Path, overlay: Path | None, simulate: str | None) -> Path:
    """The bitstream to load; its .hwh lies beside it. On a simulated board without Vivado's files the generated
    metadata goes beside a stand-in bitstream in a temporary folder."""
    if overlay is not None:
        overlay = Path(overlay)
        if overlay.suffix != ".bit" or not overlay.is_file():
            raise BackendError(f"--overlay {overlay}: not a .bit file")
        if not overlay.with_suffix(".hwh").is_file():
            raise BackendError(f"{overlay}: no {overlay.with_suffix('.hwh').name} beside it (Vivado exports it with "
                               "the bitstream; PYNQ reads the IP, addresses and registers from it)")
        return overlay
    generated = sorted((folder / OVERLAY_DIR).glob("*.hwh"))
    if not generated:
        raise BackendError(f"{folder / OVERLAY_DIR}: no overlay metadata (.hwh); partition the model again for a Zynq "
                           "board (--board)")
    built = folder / OVERLAY_DIR / "build" / generated[0].with_suffix(".bit").name
    if built.is_file() and built.with_suffix(".hwh").is_file():
        return built
    if not simulate:
        raise BackendError(f"no bitstream at {built} (and its .hwh): run `make -C {folder} bitstream` where Vivado is "
                           "installed and copy overlay/build/ to the board, or pass --overlay PATH.bit")
    stand_in = Path(tempfile.mkdtemp(prefix=STAND_IN)) / built.name
    stand_in.write_text("simulated board: no bitstream, the fabric is simulated\n")
    shutil.copyfile(generated[0], stand_in.with_suffix(".hwh"))
    return stand_in


class PynqBackend(Backend):
    name = "pynq"
    rtl = True

    def __init__(self, image: EngineImage, folder: Path, compute_units: int | None = None, slots: int = 1,
                 simulate: str | None = None, overlay: Path | None = None, timeout_s: float | None = None,
                 sim_timing=None):
        super().__init__(image, folder, compute_units, slots)
        self.simulate = simulate
        self.timeout_s = timeout_s or (SIM_TIMEOUT_S if simulate else BOARD_TIMEOUT_S)
        bitfile = overlay_files(folder, overlay, simulate)
        self._stand_in = bitfile.parent if bitfile.parent.name.startswith(STAND_IN) else None
        self.device = self._device(simulate, sim_timing)
        try:
            with warnings.catch_warnings():
                if simulate:     # no UIO interrupt line on a workstation: PYNQ says so for every engine
                    warnings.filterwarnings("ignore", message="Interrupt .* not created")
                self.overlay = pynq.Overlay(str(bitfile), device=self.device)
                names = self._engines()
                self.cus: list[EngineDriver] = [getattr(self.overlay, n) for n in names[:self.units]]
        except (OSError, RuntimeError, ValueError, KeyError) as exc:
            raise BackendError(f"{bitfile}: the overlay does not load ({exc})") from None
        self.const = self._allocate(self.constants)
        self.constants = None                   # the board's copy is the one the engines read
        self.acts = [self._allocate(np.zeros(image.act_bytes, np.uint8)) for _ in range(slots)]
        self.pool = ThreadedUnits(self.units)
        self.counters: deque[dict[str, int]] = deque(maxlen=STATS_WINDOW)   # the most recent runs'

    def _device(self, simulate: str | None, timing):
        if simulate:
            from fpga_runtime.sim_board import SimulatedBoard
            if simulate == "verilator":      # the simulated engine is the build's RTL: its parts are engine.json's
                from fpga_runtime.rtl_sim.build import parts_disagreement
                disagreement = parts_disagreement(self.folder / "rtl", self.image.config)
                if disagreement:
                    raise BackendError(f"{disagreement}; partition the model again")
            try:
                device = SimulatedBoard(self.folder, simulate, self.image.board, timing)
            except ValueError as exc:
                raise BackendError(str(exc)) from None
            pynq.Device.active_device = device
            return device
        try:
            return pynq.Device.active_device
        except RuntimeError:
            raise BackendError("PYNQ finds no device: run on a board with a PYNQ image, or simulate one with "
                               "--simulate verilator|csim") from None

    def _engines(self) -> list[str]:
        ips = self.overlay.ip_dict
        names = sorted((n for n, ip in ips.items() if ip.get("type") == ENGINE_VLNV),
                       key=lambda n: ips[n]["phys_addr"])
        if len(names) < self.units:
            raise BackendError(
                f"the overlay has {len(names)} engine IP(s) ({ENGINE_VLNV}), the run needs {self.units}: "
                "load the overlay of this build"
            )
        cfg = self.image.config
        for n in names:
            params = ips[n].get("parameters", {})
            # the optional parts too (engine_parts.py): the runtime refuses layers by engine.json's
            want = {"VEC": cfg.vec, "PE_ROWS": cfg.pe_rows, "ABI_VERSION": self.image.abi_version,
                    **engine_parts.ip_parameters(cfg)}
            built = {k: int(params[k]) for k in want if k in params}
            wrong = {k: v for k, v in built.items() if v != want[k]}
            if wrong:
                raise BackendError(f"{n} in the overlay was built with {wrong}, this build needs "
                                   f"{ {k: want[k] for k in wrong} }: load the overlay of this build")
            missing = [r for r in REQUIRED_REGISTERS if r not in ips[n].get("registers", {})]
            if missing:
                raise BackendError(f"{n}: the overlay metadata has no register(s) {', '.join(missing)}")
        return names

    def _allocate(self, content: np.ndarray):
        buf = pynq.allocate((content.size,), np.uint8, target=self.device)
        end = int(buf.device_address) + content.size
        if end > 1 << ADDRESS_BITS:
            raise BackendError(f"a {content.size:,}-byte buffer at {int(buf.device_address):#x} ends past the engine's "
                               f"{ADDRESS_BITS}-bit address space ({end:#x}): this memory map is not one the engine "
                               "was built for")
        buf[:] = content
        buf.flush()
        return buf

    @staticmethod
    def _span(buf, view: TensorView):
        return buf[view.addr:view.addr + view.nbytes]

    def write(self, view: TensorView, x: np.ndarray, slot: int = 0) -> None:
        view.write(self.acts[slot], x)
        self._span(self.acts[slot], view).flush()

    def read(self, view: TensorView, slot: int = 0) -> np.ndarray:
        self._span(self.acts[slot], view).invalidate()
        return view.read(np.asarray(self.acts[slot]))

    def start(self, program: Program, unit: int = 0, slot: int = 0):
        return self.pool.submit(unit, timed, program, unit, self._run, unit, program, slot)

    def _run(self, unit: int, program: Program, slot: int) -> int:
        cu = self.cus[unit]
        base = self.const.device_address
        try:
            cu.launch(base + program.addr, program.layers, self.acts[slot].device_address, base)
            cu.wait_done(self.timeout_s, f"program {program.subgraph} on {cu._fullpath}")
        except RuntimeError as exc:            # a simulated board's bus error
            raise BackendError(f"program {program.subgraph}: {exc}") from None
        layer = cu.refused_layer
        if layer is not None:
            raise BackendError(f"program {program.subgraph}: the engine refused layer {layer} (it was not generated "
                               "for this layer's size: partition the model again)")
        self.counters.append(cu.counters())
        return cu.cycles

    def close(self) -> None:
        self.pool.close()
        if self.simulate:
            self.device.close()
        if self._stand_in is not None:
            shutil.rmtree(self._stand_in, ignore_errors=True)
