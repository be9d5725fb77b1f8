"""`csim` backend: the Vitis HLS engine (the installed templates with the build's checked parameter headers, see
rtl_sim/sources.py) compiled with g++ into a shared library and run through ctypes on the same memory image and
programs as the reference. Compiled once per source hash, cached."""
from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

from fpga_runtime.backends import BackendError, HostMemoryBackend
from fpga_runtime.engine_image import EngineImage
from fpga_runtime.rtl_sim.sources import trusted_sources

HLS_DIR = "hls"
CACHE = Path(os.environ.get("FPGA_CSIM_CACHE", Path.home() / ".cache" / "fpga-partitioner" / "csim"))
CXXFLAGS = ["-O2", "-std=c++14", "-fPIC", "-shared", "-Wno-unknown-pragmas"]


def ap_types_dir() -> Path:
    """The Apache-2.0 Xilinx arbitrary-precision headers shipped in the hls4ml wheel (not copied here)."""
    spec = importlib.util.find_spec("hls4ml")
    if spec is None or not spec.submodule_search_locations:
        raise BackendError("the csim backend needs the Xilinx ap_types headers from hls4ml: "
                           "pip install 'hls4ml==1.3.0' (or the project's [csim] extra)")
    path = Path(spec.submodule_search_locations[0]) / "templates" / "vivado" / "ap_types"
    if not (path / "ap_int.h").exists():
        raise BackendError(f"hls4ml is installed but {path} has no ap_int.h")
    return path


def compile_engine(hls: Path, quiet: bool = False) -> Path:
    sources = sorted(hls.glob("*.cpp")) + sorted(hls.glob("*.h"))
    if not sources:
        raise BackendError(f"{hls}: no HLS engine sources (partition the model again)")
    cxx = shutil.which(os.environ.get("CXX", "g++"))
    if cxx is None:
        raise BackendError("the csim backend needs a C++ compiler: apt-get install g++")
    digest = hashlib.sha256(b"".join(p.name.encode() + p.read_bytes() for p in sources)
                            + " ".join(CXXFLAGS).encode()).hexdigest()[:20]
    lib = CACHE / f"engine-{digest}.so"
    if lib.exists():
        return lib
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = lib.with_suffix(f".{os.getpid()}.tmp")
    cmd = [cxx, *CXXFLAGS, "-I", str(hls), "-I", str(ap_types_dir()), *map(str, sorted(hls.glob("*.cpp"))),
           "-o", str(tmp)]
    if not quiet:
        print(f"csim: compiling the HLS engine with {Path(cxx).name} ({len(sources)} files) ...", file=sys.stderr,
              flush=True)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BackendError(f"g++ failed on the HLS engine:\n{proc.stderr[-4000:]}")
    tmp.replace(lib)
    if not quiet:
        print(f"csim: compiled in {time.perf_counter() - t0:.1f} s -> {lib}", file=sys.stderr, flush=True)
    return lib


class CsimEngine:
    """The compiled engine library: runs one program on numpy memory regions."""

    def __init__(self, hls: Path, quiet: bool = False):
        self.lib = ctypes.CDLL(str(compile_engine(trusted_sources(hls, "hls"), quiet)))
        self.lib.engine_csim.restype = ctypes.c_int
        self.lib.engine_csim.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint64,
                                         ctypes.c_uint64, ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint64)]
        self.abi_version = self.lib.engine_abi_version()
        self.lock = threading.Lock()       # the C engine keeps its buffers in static storage

    def run(self, act: np.ndarray, const: np.ndarray, addr: int, layers: int) -> int:
        cycles = ctypes.c_uint64(0)
        with self.lock:
            rc = self.lib.engine_csim(const.ctypes.data, const.size, act.ctypes.data, act.size, addr, layers,
                                      ctypes.byref(cycles))
        if rc == -2:
            raise BackendError("the program has a layer this engine was not generated for (buffers too small)")
        if rc != 0:
            raise BackendError(f"engine_csim returned {rc}")
        return cycles.value


class CsimBackend(HostMemoryBackend):
    name = "csim"

    def __init__(self, image: EngineImage, folder: Path, compute_units: int | None = None, slots: int = 1):
        super().__init__(image, folder, compute_units, slots)          # the programs checked before compiling
        self.engine = CsimEngine(folder / HLS_DIR)
        if self.engine.abi_version != image.abi_version:
            raise BackendError("the compiled engine and the build speak different ABI versions")

    def run(self, act: np.ndarray, const: np.ndarray, program_addr: int, layers: int) -> int:
        return self.engine.run(act, const, program_addr, layers)
