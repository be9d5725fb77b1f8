"""Lint the generated engine as strictly as the tools downstream read it: Verilator `--lint-only -Wall` with the
waivers (and their reasons) in `rtl/lint_waivers.vlt`; slang (pyslang), which elaborates by IEEE 1800 as
written and so refuses what Verilator and yosys let through but Vivado may not; and yosys's own reader, which
parses less of SystemVerilog than either (no package import in a module header, for one).

    python -m partitioner.codegen.rtl_lint <build>/fpga/rtl      (make lint)
"""
from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from fpga_runtime.rtl_sim.build import rtl_sources, verilator_root

TOP = "engine_top"
WAIVERS = "lint_waivers.vlt"


@dataclass(frozen=True)
class LintResult:
    tool: str
    findings: list[str]

    @property
    def clean(self) -> bool:
        return not self.findings


def verilator_lint(rtl: Path) -> LintResult:
    """Every warning `-Wall` reports that the waiver file does not cover."""
    rtl = rtl.resolve()
    root = verilator_root()
    files = [str(rtl / WAIVERS)] + [str(rtl / f) for f in rtl_sources(rtl)]
    proc = subprocess.run([str(root / "bin" / "verilator"), "--lint-only", "-Wall", f"-I{rtl}", "--top-module", TOP,
                           *files], capture_output=True, text=True, cwd=rtl,
                          env={"VERILATOR_ROOT": str(root), "PATH": f"{root / 'bin'}:/usr/bin:/bin"})
    findings = [line for line in proc.stderr.splitlines() if line.startswith(("%Warning", "%Error"))]
    if proc.returncode != 0 and not findings:
        findings = [proc.stderr.strip()[-2000:] or f"verilator exited {proc.returncode}"]
    return LintResult("verilator -Wall", findings)


def slang_elaborate(rtl: Path):
    """The engine elaborated by slang: (compilation, driver), or None without pyslang."""
    rtl = rtl.resolve()
    try:
        import pyslang
    except ImportError:
        return None
    driver = pyslang.driver.Driver()
    driver.addStandardArgs()
    files = " ".join(str(rtl / f) for f in rtl_sources(rtl))
    if not driver.parseCommandLine(f"slang --top {TOP} -I {rtl} {files}"):
        raise RuntimeError(f"slang refused its command line for {rtl}")
    if not (driver.processOptions() and driver.parseAllSources()):
        raise RuntimeError(f"slang could not read the sources in {rtl}")
    return driver.createCompilation(), driver


def slang_lint(rtl: Path) -> LintResult:
    """Every error and every warning slang enables by default (its pedantic groups stay off, as in `slang`)."""
    elaborated = slang_elaborate(rtl)
    if elaborated is None:
        return LintResult("slang", ["pyslang is not installed (pip install -e '.[rtl]')"])
    compilation, driver = elaborated
    engine = driver.diagEngine
    quiet = {"Ignored", "Note"}
    findings = []
    for d in compilation.getAllDiagnostics():
        severity = str(engine.getSeverity(d.code, d.location)).rsplit(".", 1)[-1]
        if severity not in quiet:
            where = Path(str(driver.sourceManager.getFileName(d.location))).name
            line = driver.sourceManager.getLineNumber(d.location)
            findings.append(f"{severity.lower()}: {where}:{line}: {engine.formatMessage(d)}")
    return LintResult("slang", findings)


def yosys_read(rtl: Path) -> LintResult:
    """yosys reads and elaborates the engine (`read_verilog -sv`, `hierarchy -check`), as `make synth` will: with
    `SYNTHESIS` defined (yosys's default), so the DSP48E2 that mac_pair instantiates is checked against the cell's
    ports as yosys knows them; then `proc; check -assert`, which refuses a register two processes drive (Verilator
    and slang let two always_ff blocks that agree in simulation through; synthesis gets conflicting drivers)."""
    from partitioner.codegen.synth import yosys_command
    from partitioner.errors import ModelError
    rtl = rtl.resolve()
    try:
        cmd = yosys_command()
    except ModelError as exc:
        return LintResult("yosys read_verilog", [str(exc)])
    sources = " ".join(f"{rtl.name}/{f}" for f in rtl_sources(rtl))
    script = (f"read_verilog -lib +/xilinx/cells_xtra.v; read_verilog -sv -I{rtl.name} {sources}; "
              f"hierarchy -check -top {TOP}; proc; check -assert")
    proc = subprocess.run(cmd + ["-q", "-p", script],
                          capture_output=True, text=True, cwd=rtl.parent)
    findings = [line for line in (proc.stdout + proc.stderr).splitlines()
                if "ERROR" in line or "conflicting drivers" in line]
    if proc.returncode != 0 and not findings:
        findings = [(proc.stdout + proc.stderr).strip()[-2000:] or f"yosys exited {proc.returncode}"]
    return LintResult("yosys read_verilog", findings)


def top_ports(rtl: Path) -> dict[str, tuple[str, int]]:
    """`engine_top`'s ports as slang elaborates them with the build's parameters: name -> (in|out, bits)."""
    elaborated = slang_elaborate(rtl)
    if elaborated is None:
        raise RuntimeError("reading the elaborated ports needs pyslang (pip install -e '.[rtl]')")
    top = elaborated[0].getRoot().topInstances[0]
    return {p.name: (str(p.direction).rsplit(".", 1)[-1].lower(), p.type.bitWidth) for p in top.body.portList}


def main(argv: list[str]) -> int:
    rtl = Path(argv[0] if argv else "rtl")
    dirty = False
    for result in (verilator_lint(rtl), slang_lint(rtl), yosys_read(rtl)):
        print(f"{result.tool}: {'clean' if result.clean else f'{len(result.findings)} finding(s)'}")
        for line in result.findings:
            print(f"  {line}")
        dirty |= not result.clean
    return 1 if dirty else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
