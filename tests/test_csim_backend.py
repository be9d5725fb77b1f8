"""The C-simulated HLS engine: every golden case bit-exact with the reference, whole models through Session
equal to the reference backend, warning-free compilation, hostile names kept out of the generated files."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from fpga_runtime.csim_backend import CsimEngine, ap_types_dir
from fpga_runtime.session import Session
from golden_replay import CASE_FILES, Case
from partitioner.build import PartitionConfig, run_partition
from partitioner.codegen import write_hls
from partitioner.verify import make_inputs

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")


@pytest.fixture(scope="module")
def golden_engine(tmp_path_factory):
    cases = [Case(p) for p in CASE_FILES]
    descriptors = [d for c in cases for d in c.descriptors()]
    folder = write_hls(tmp_path_factory.mktemp("hls"), "golden", cases[0].config, descriptors)
    return CsimEngine(folder, quiet=True), cases


def test_every_golden_case_bit_exact(golden_engine):
    engine, cases = golden_engine
    for case in cases:
        got = case.replay(engine.run)
        assert np.array_equal(got, case.act_out), case.name


def test_generated_engine_compiles_without_warnings(golden_engine, tmp_path):
    hls = write_hls(tmp_path, "warnings", golden_engine[1][0].config, golden_engine[1][0].descriptors())
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
        feeds = make_inputs(ref.plan, 5)
        for a, b in zip(ref.run(None, feeds), sim.run(None, feeds)):
            assert np.array_equal(a, b)
        assert all(s.cycles > 0 for s in sim.stats)


def test_hostile_names_never_reach_generated_code(tmp_path):
    import onnx
    from onnx import helper, numpy_helper
    from graphs import Net
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
        s.run(None, make_inputs(s.plan, 0))


def test_cycle_model_equals_the_engine_count(golden_engine):
    from fpga_runtime.cycle_model import LayerShape, layer_cycles
    engine, cases = golden_engine
    for case in cases:
        act = case.act_in.copy()
        for addr, layers in case.programs:
            cycles = engine.run(act, case.const, addr, layers)
            from fpga_runtime.abi import DESCRIPTOR_SIZE, HEADER_SIZE, unpack_program
            ds = unpack_program(case.const[addr:addr + HEADER_SIZE + layers * DESCRIPTOR_SIZE].tobytes())
            assert cycles == sum(layer_cycles(LayerShape.of(d), case.config) for d in ds), case.name
