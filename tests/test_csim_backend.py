"""The C-simulated HLS engine: every golden case bit-exact with the reference, whole models through Session
equal to the reference backend, warning-free compilation, hostile names kept out of the generated files."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import pytest
from golden_replay import CASE_FILES, Case
from graphs import Net
from onnx import helper, numpy_helper

from fpga_runtime import window_path
from fpga_runtime.abi import EngineConfig, Flag, Op
from fpga_runtime.backends.csim import CsimEngine, ap_types_dir
from fpga_runtime.checking.frames import random_frame
from fpga_runtime.run.session import Session
from partitioner.build import PartitionConfig, run_partition
from partitioner.codegen.sources import write_engine_sources
from partitioner.golden.cases import CASES

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")


@pytest.fixture(scope="module")
def golden_engine(tmp_path_factory):
    cases = [Case(p) for p in CASE_FILES]
    descriptors = [d for c in cases for d in c.descriptors()]
    folder = write_engine_sources(tmp_path_factory.mktemp("hls"), "golden", cases[0].full_config, descriptors)
    return CsimEngine(folder, quiet=True), cases


def test_every_golden_case_bit_exact(golden_engine):
    engine, cases = golden_engine
    for case in cases:
        got = case.replay(engine.run)
        assert np.array_equal(got, case.act_out), case.name


@pytest.mark.parametrize("pixels,window_words", [(4, 0), (2, 64), (3, 0)])
def test_window_path_bit_exact(golden_engine, tmp_path, pixels, window_words):
    """The HLS window path (P output pixels per array step from a window of input rows) on every golden case;
    a 64-word window sends the wider layers back to the per-tap path; 3 pixels, not a power of two, put a
    position in bank (position mod 3). The step count shows which path ran."""
    engine, cases = golden_engine
    config = replace(cases[0].full_config, pixels=pixels, window_words=window_words)
    hls = write_engine_sources(tmp_path, "window", config, [d for c in cases for d in c.descriptors()])
    windowed = CsimEngine(hls, quiet=True)
    built = replace(config, window_words=int(re.search(r"ENGINE_WINDOW_WORDS (\d+)",
                                                       (hls / "engine_config.h").read_text()).group(1)))
    windowed_layers = 0
    for case in cases:
        counts, per_tap = [], []
        got = case.replay(lambda *args: counts.append(windowed.run(*args)))
        assert np.array_equal(got, case.act_out), case.name
        case.replay(lambda *args: per_tap.append(engine.run(*args)))
        # the Python twin of the RTL's decision (less its residual-queue limit, which the HLS engine has not)
        # names the layers on the window path; each saves the steps of all but one pixel in P
        saved = 0
        for d in case.descriptors():
            if d.op == Op.CONV and not d.flags & Flag.DEPTHWISE and \
                    window_path.geometry(replace(d, flags=d.flags & ~Flag.RESIDUAL), built) is not None:
                windowed_layers += 1
                saved += d.batch * (d.out_c // built.pe_rows) * d.conv_h * (d.conv_w - -(-d.conv_w // pixels)) \
                    * d.kh * d.kw * (d.in_c // built.vec)
        assert sum(counts) == sum(per_tap) - saved, case.name
    assert windowed_layers > 20
    if window_words == 64:      # residual_wide's 112-pixel rows do not fit: the per-tap path
        wide = next(c for c in cases if c.name == "residual_wide")
        assert any(d.op == Op.CONV and window_path.eligible(d, built) and window_path.geometry(d, built) is None
                   for d in wide.descriptors())


def test_generated_engine_compiles_without_warnings(golden_engine, tmp_path):
    hls = write_engine_sources(tmp_path, "warnings", golden_engine[1][0].config, golden_engine[1][0].descriptors())
    proc = subprocess.run(["g++", "-std=c++14", "-fsyntax-only", "-Wall", "-Wextra", "-Wno-unknown-pragmas",
                           "-I", str(hls), "-isystem", str(ap_types_dir()), str(hls / "engine.cpp"),
                           str(hls / "csim_main.cpp")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    ours = [line for line in proc.stderr.splitlines() if "warning" in line and str(hls) in line]
    assert ours == []


@pytest.mark.parametrize("name,size", [("yolov3-tiny", 96), ("ssd-mobilenet-v1", 96)])
def test_whole_models_equal_reference(tmp_path, zoo, name, size):
    out = tmp_path / name
    run_partition(PartitionConfig(model=zoo(name, size), out_dir=out, picture=False, accuracy=False))
    with Session(out, backend="reference") as ref, Session(out, backend="csim") as sim:
        feeds = random_frame(ref.plan, 5)
        for a, b in zip(ref.run(None, feeds), sim.run(None, feeds)):
            assert np.array_equal(a, b)
        assert all(s.cycles > 0 for s in sim.stats)


def test_hostile_names_never_reach_generated_code(tmp_path):
    n = Net()
    evil = 'x"; system("rm -rf /"); /* */ $HOME'
    n.inits.append(numpy_helper.from_array(np.full((4, 4, 1, 1), 0.1, np.float32), "w"))
    n.nodes.append(helper.make_node("Conv", ["x", "w"], [evil], name=evil, kernel_shape=[1, 1]))
    model = n.model([evil])
    model.graph.name = evil
    onnx.save(model, str(tmp_path / "m.onnx"))
    run_partition(PartitionConfig(model=tmp_path / "m.onnx", out_dir=tmp_path / "b", picture=False,
                                  offload_everything=True, accuracy=False))
    for f in (tmp_path / "b" / "fpga" / "hls").iterdir():
        text = f.read_text()
        assert "rm -rf" not in text and "$HOME" not in text and 'x"' not in text
    with Session(tmp_path / "b", backend="csim") as s:
        s.run(None, random_frame(s.plan, 0))


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_generated_build_scripts(tmp_path, zoo):
    """A build for a non-default engine: the Makefile's g++ testbench and its Verilator replay pass on golden
    vectors made for that engine (the Vivado scripts are run against stubs in test_engine_ip.py)."""
    root = Path(__file__).resolve().parent.parent
    out = tmp_path / "b"
    run_partition(PartitionConfig(model=zoo("two-branch"), out_dir=out, picture=False, accuracy=False,
                                  offload_everything=True, engine=EngineConfig(vec=8, pe_rows=16, clock_mhz=250)))
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.run(["make", "-C", str(out / "fpga"), "csim-gcc", f"PYTHON={sys.executable}"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert f"{len(CASES)} passed, 0 failed" in proc.stdout
    proc = subprocess.run(["make", "-C", str(out / "fpga"), "verilator", f"PYTHON={sys.executable}"],
                          capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    # the RTL replays every case but those needing a part the build left out (engine_parts.py), named
    config = json.loads((out / "fpga" / "engine.json").read_text())["config"]
    skips = [line for line in proc.stdout.splitlines() if ": skipped (" in line]
    assert all("built without" in line for line in skips)
    assert bool(skips) == (not config["lane_products"] or not config["residual_stage"])
    assert f"{len(CASES) - len(skips)} passed, 0 failed, {len(skips)} skipped" in proc.stdout
    proc = subprocess.run(["make", "-C", str(out / "fpga"), "lint", f"PYTHON={sys.executable}"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "verilator -Wall: clean" in proc.stdout and "slang: clean" in proc.stdout
    assert "yosys read_verilog: clean" in proc.stdout
