"""Layering: the runtime runs on a board without the partitioner, so it must never import it."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _imports(package: str) -> set[str]:
    found = set()
    for path in (ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module.split(".")[0])
    return found


def test_runtime_never_imports_partitioner_or_models():
    assert not {"partitioner", "models"} & _imports("fpga_runtime")


def test_partitioner_does_not_import_models():
    assert "models" not in _imports("partitioner")


# What each partitioner stage may import of the others (errors everywhere): a stage reads the IR and what comes
# before it in the pipeline. Two reach forward, on purpose: the FPGA target asks the engine's layout planner
# for conflicts, and the cost model, exploration and targets read descriptor geometry (engine.geometry). Code
# generation's timing estimate reads the target's delay model (targets.delay_model), as the exploration does.
STAGE_IMPORTS = {
    "ir": set(),
    "frontend": {"ir"},
    "passes": {"ir"},
    "targets": {"ir", "engine.layout"},
    "placement": {"ir", "targets", "engine.geometry"},
    "explore": {"ir", "targets", "placement", "engine.geometry"},
    "engine": {"ir", "placement", "engine"},
    "codegen": {"ir", "engine", "codegen", "targets.delay_model"},
    "evaluate": {"ir", "engine", "evaluate"},
    "output": {"ir", "placement", "explore", "engine", "evaluate", "output"},
}


def _stage_imports(stage: str) -> set[str]:
    """Modules of other partitioner stages that `stage`'s files import, as 'stage' or 'stage.module'."""
    found = set()
    for path in (ROOT / "partitioner" / stage).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("partitioner."):
                parts = node.module.split(".")[1:]
                if parts[0] not in (stage, "errors"):
                    found.add(".".join(parts[:2]))
    return found


def test_every_partitioner_stage_is_a_subpackage_with_its_import_rule():
    packages = {p.parent.name for p in (ROOT / "partitioner").glob("*/__init__.py")}
    assert packages == set(STAGE_IMPORTS) | {"golden"}


@pytest.mark.parametrize("stage", sorted(STAGE_IMPORTS))
def test_a_stage_imports_only_what_comes_before_it(stage):
    allowed = STAGE_IMPORTS[stage]
    bad = {m for m in _stage_imports(stage) if m not in allowed and m.split(".")[0] not in allowed}
    assert not bad, f"partitioner/{stage} imports {sorted(bad)}"


def test_no_stage_imports_the_build_or_the_command_line():
    for stage in STAGE_IMPORTS:
        assert not {m for m in _stage_imports(stage) if m.split(".")[0] in ("build", "cli")}, stage


def test_what_the_partitioner_imports_of_the_runtime_stands_alone():
    """The runtime's top-level modules (ABI, plan, engine image, boards, cycle model, window path, reference
    engine, onnxruntime chain) import none of its run/prediction/checking/backends subpackages."""
    commands = ("__init__", "__main__", "cli", "cli_frames", "deploy")
    top = [p for p in (ROOT / "fpga_runtime").glob("*.py") if p.stem not in commands]
    for path in top:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("fpga_runtime."):
                sub = node.module.split(".")[1]
                assert (ROOT / "fpga_runtime" / f"{sub}.py").exists(), f"{path.name} imports {node.module}"


def test_the_scheduler_does_not_import_the_session():
    assert "fpga_runtime.run.session" not in {
        n.module for n in ast.walk(ast.parse((ROOT / "fpga_runtime" / "run" / "scheduler.py").read_text()))
        if isinstance(n, ast.ImportFrom)}


def test_one_ordered_rtl_file_list_names_every_engine_module_once():
    from fpga_runtime.rtl_sim.build import rtl_sources
    from hls_templates import RTL
    listed = rtl_sources(RTL)
    assert listed[0] == "engine_pkg.sv" and listed[-1] == "engine_top.sv"
    assert len(listed) == len(set(listed))
    assert set(listed) == {p.name for p in RTL.glob("*.sv")}
