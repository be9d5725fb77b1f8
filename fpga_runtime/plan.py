"""The partition plan (`plan.json`): schema, reader and writer. See docs/plan-format.md.

The runtime reads only this file and the ONNX files it names, so a board needs nothing from `partitioner`.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

PLAN_VERSION = 1
PLAN_FILE = "plan.json"


class PlanError(Exception):
    """A plan that cannot be used: wrong version, missing file, inconsistent references."""


@dataclass
class TensorSpec:
    name: str                         # the tensor's name in the ONNX files (the user's original name)
    shape: list[int | str | None] | None
    dtype: str


@dataclass
class Layer:
    """One fused node of an FPGA subgraph: what the engine runs as one layer descriptor."""
    name: str                         # safe identifier, used in generated code
    kind: str                         # FusedConv, MaxPool, Add, Resize, Concat
    describe: str
    covers: list[str]                 # original ONNX node names
    macs: int
    bytes: int = 0                    # int8 activation and weight bytes the layer moves
    cycles: int = 0                   # engine cycles (cycle_model.py) for the build's engine parameters


@dataclass
class SubgraphSpec:
    name: str
    device: str                       # "cpu" | "fpga"
    role: str                         # "pre" | "compute" | "post"
    nodes: list[str]                  # original ONNX node names covered
    inputs: list[TensorSpec]
    outputs: list[TensorSpec]
    depends_on: list[str]
    parallel_group: int | None
    onnx: str                         # relative to the plan's folder
    estimate: dict[str, Any] | None
    concurrent_with: list[str] = field(default_factory=list)
    layers: list[Layer] = field(default_factory=list)


@dataclass
class Plan:
    version: int
    target: str
    board: str
    model: dict[str, Any]
    inputs: list[TensorSpec]
    outputs: list[TensorSpec]
    subgraphs: list[SubgraphSpec]
    folded: list[str] = field(default_factory=list)      # ONNX nodes evaluated at import time
    fallbacks: list[dict[str, str]] = field(default_factory=list)
    decisions: list[dict[str, Any]] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)
    engine: str | None = None                            # compiled FPGA programs and memory image
    engine_config: dict[str, Any] | None = None          # abi.EngineConfig of the build
    build_id: str | None = None                          # the same in engine.json: parts of one build belong together
    unit_resources: dict[str, dict] | None = None        # one engine unit's estimated DSP/BRAM36/URAM/LUT/FF per board
    resource_budget: dict[str, float] | None = None      # share of each resource the engines may use
    preprocess: dict[str, Any] | None = None             # how a picture becomes the input (preprocess.Preprocess)
    class_names: list[str] | None = None                 # a detector's class names, by class id (model metadata)
    files: dict[str, str] | None = None                  # every data file of the build -> its SHA-256 (DATA_FILES)
    board_clocks: dict[str, float] | None = None         # the engine's clock per board: default, or its Fmax if lower
    root: Path = Path(".")

    @property
    def original_takes_numpy(self) -> bool:
        """False for a bfloat16 original: numpy and onnxruntime's Python API have no bfloat16 arrays to feed it."""
        return self.model.get("precision") != "bfloat16"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("root")
        return d

    def write(self, folder: str | Path) -> Path:
        path = Path(folder) / PLAN_FILE
        path.write_text(json.dumps(self.to_dict(), indent=1) + "\n")
        return path

    def subgraph(self, name: str) -> SubgraphSpec:
        for s in self.subgraphs:
            if s.name == name:
                return s
        raise PlanError(f"no subgraph named {name!r}")

    def fpga_chain(self) -> list[str]:
        """The longest dependency chain of FPGA subgraphs (CPU subgraphs pass through): the engine programs a
        frame runs one after another. Parallel heads and branches beside it do not lengthen it."""
        best: dict[str, list[str]] = {}
        for sg in self.subgraphs:                       # plan order is a topological order
            before = max((best[d] for d in sg.depends_on), key=len, default=[])
            best[sg.name] = before + [sg.name] if sg.device == "fpga" else before
        return max(best.values(), key=len, default=[])

    def onnx_path(self, sg: SubgraphSpec) -> Path:
        return confined(self.root, sg.onnx, f"subgraph {sg.name!r}'s file")


def _tensors(items: list[dict]) -> list[TensorSpec]:
    return [TensorSpec(**t) for t in items]


def read_plan(folder_or_file: str | Path) -> Plan:
    path = Path(folder_or_file)
    if path.suffix == ".onnx" and path.is_file():
        raise PlanError(f"{path} is an ONNX model, not a build folder: run `partition {path}` and pass the "
                        "folder it writes")
    if path.is_dir():
        path = path / PLAN_FILE
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        raise PlanError(f"{path}: no plan here (run `partition` first)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise PlanError(f"{path}: not a plan (not valid JSON: {exc})") from None
    except OSError as exc:
        raise PlanError(f"{path}: cannot read the plan: {exc.strerror or exc}") from None
    if not isinstance(raw, dict):
        raise PlanError(f"{path}: not a plan (a JSON {type(raw).__name__}, not an object)")
    if raw.get("version") != PLAN_VERSION:
        raise PlanError(f"{path}: plan version {raw.get('version')!r}, this runtime reads version {PLAN_VERSION}")
    try:
        subgraphs = []
        for s in raw["subgraphs"]:
            s = dict(s)
            s["inputs"], s["outputs"] = _tensors(s["inputs"]), _tensors(s["outputs"])
            s["layers"] = [Layer(**layer) for layer in s.get("layers", [])]
            subgraphs.append(SubgraphSpec(**s))
        if not isinstance(raw["model"], dict):
            raise TypeError(f"'model' is a {type(raw['model']).__name__}, not an object")
        plan = Plan(raw["version"], raw["target"], raw["board"], raw["model"], _tensors(raw["inputs"]),
                    _tensors(raw["outputs"]), subgraphs, raw.get("folded", []), raw.get("fallbacks", []),
                    raw.get("decisions", []), raw.get("steps", []), raw.get("engine"), raw.get("engine_config"),
                    raw.get("build_id"), raw.get("unit_resources"), raw.get("resource_budget"),
                    raw.get("preprocess"), raw.get("class_names"), _files(raw.get("files")),
                    _board_clocks(raw.get("board_clocks")), root=path.parent)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise PlanError(f"{path}: malformed plan ({type(exc).__name__}: {exc}); partition the model again") from None
    _check_order(plan)
    _check_parts(plan)
    return plan


def _board_clocks(raw) -> dict[str, float] | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or not all(isinstance(k, str) and isinstance(v, (int, float))
                                            and not isinstance(v, bool) and 0 < v <= 1000 for k, v in raw.items()):
        raise ValueError("'board_clocks' must map board names to clocks in MHz (0 to 1000)")
    return {k: float(v) for k, v in raw.items()}


def _files(raw) -> dict[str, str] | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or not all(isinstance(k, str) and isinstance(v, str) and len(v) == 64
                                            for k, v in raw.items()):
        raise ValueError("'files' is not an object of relative paths and SHA-256 digests")
    return raw


def _check_parts(plan: Plan) -> None:
    """The files the plan names are inside its folder, exist and come from the same `partition` run as the plan."""
    missing = [s.onnx for s in plan.subgraphs if not plan.onnx_path(s).is_file()]
    if missing:
        raise PlanError(f"{plan.root}: the plan names {missing}, which are missing: an incomplete build "
                        "(run `partition` again)")
    if plan.engine is None:
        return
    try:
        engine_id = json.loads(confined(plan.root, plan.engine, "the engine image").read_text()).get("build_id")
    except (OSError, json.JSONDecodeError, UnicodeDecodeError, AttributeError) as exc:
        raise PlanError(f"{plan.root / plan.engine}: unreadable engine image ({exc}); run `partition` again") from None
    if engine_id != plan.build_id:
        raise PlanError(f"{plan.root}: {PLAN_FILE} and {plan.engine} come from different `partition` runs "
                        f"(build {plan.build_id} vs {engine_id}); run `partition` again")


def _check_order(plan: Plan) -> None:
    available = {t.name for t in plan.inputs}
    seen: set[str] = set()
    for sg in plan.subgraphs:
        missing = [d for d in sg.depends_on if d not in seen]
        if missing:
            raise PlanError(f"subgraph {sg.name!r} depends on {missing}, which do not run before it")
        absent = [t.name for t in sg.inputs if t.name not in available]
        if absent:
            raise PlanError(f"subgraph {sg.name!r} reads {absent}, which nothing before it produces")
        available.update(t.name for t in sg.outputs)
        seen.add(sg.name)
    missing_out = [t.name for t in plan.outputs if t.name not in available]
    if missing_out:
        raise PlanError(f"model outputs {missing_out} are produced by no subgraph")


def check_fits(plan: Plan, board: str, units: int) -> None:
    """Refuse to predict a board the build's engine does not fit (resources as `partition` estimated them), or
    cannot run at all (DSPs at twice the clock where no DSP48E2 or no aligned second clock is)."""
    from fpga_runtime.boards import BOARDS
    if (plan.engine_config or {}).get("dsp_clock") == 2 and BOARDS[board].dsp_clock_2x_problem:
        raise PlanError(f"the build's engine runs its DSPs at twice its clock (--dsp-clock 2x), which {board} cannot "
                        "(a Zynq UltraScale+ board can); partition the model for this board")
    per_unit = (plan.unit_resources or {}).get(board)
    if not per_unit or plan.resource_budget is None:
        return
    from fpga_runtime.abi import EngineConfig
    from fpga_runtime.boards import RESOURCE_NAMES, mixed_units, over_budget, weight_mixes
    # a unit with its weights in block RAM and, on parts with UltraRAM, in it: the units may mix the two
    uram = per_unit.get("uram_weights", {}) if isinstance(per_unit, dict) else None
    if not isinstance(uram, dict):
        raise PlanError(f"plan.json unit_resources[{board!r}]: not one unit's {', '.join(RESOURCE_NAMES)}")
    in_bram = {k: per_unit.get(k) for k in RESOURCE_NAMES}
    in_uram = {k: uram.get(k, v) for k, v in in_bram.items()}
    if any(not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0 for v in [*in_bram.values(),
                                                                                     *in_uram.values()]):
        raise PlanError(f"plan.json unit_resources[{board!r}]: not one unit's {', '.join(RESOURCE_NAMES)} as "
                        "numbers")
    mixes = weight_mixes(BOARDS[board], units) if uram else (0,)
    over = min((over_budget(BOARDS[board], mixed_units(in_bram, in_uram, units, u), plan.resource_budget)
                for u in mixes), key=len)
    if over:
        design = EngineConfig(**plan.engine_config).describe(units) if plan.engine_config else f"{units} unit(s)"
        raise PlanError(f"engine {design} does not fit {board}: needs {'; '.join(over)}")


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def small_text(path: Path, limit: int, encoding: str = "utf-8") -> str:
    """A text file a user or a build gives (a names list, a generated header), read only when it is at most
    `limit` bytes: OSError or ValueError (UnicodeDecodeError among them) otherwise."""
    size = Path(path).stat().st_size
    if size > limit:
        raise ValueError(f"{size:,} bytes, more than the {limit:,} such a file has")
    return Path(path).read_text(encoding=encoding)


def check_feeds(plan: Plan, feeds: dict, refuse_nonfinite: bool = False) -> int:
    """Feeds name exactly the model's inputs, with their static shapes and dtypes. Returns how many NaN or
    infinite values the float inputs hold (refused with `refuse_nonfinite`): int8 has neither, so the engine sees
    NaN as the zero point and an infinity saturated, which a caller should hear of."""
    names = [t.name for t in plan.inputs]
    unknown = [k for k in feeds if k not in names]
    missing = [n for n in names if n not in feeds]
    if unknown or missing:
        raise PlanError(f"the model's inputs are {names}" + (f"; unknown: {unknown}" if unknown else "")
                        + (f"; missing: {missing}" if missing else ""))
    for t in plan.inputs:
        value = feeds[t.name]
        shape = list(getattr(value, "shape", ()))
        static = t.shape is not None and all(isinstance(d, int) for d in t.shape)
        if static and shape != t.shape:
            raise PlanError(f"input {t.name!r}: shape {shape}, the model takes {t.shape} ({t.dtype})")
        if str(getattr(value, "dtype", "")) != t.dtype:
            raise PlanError(f"input {t.name!r}: dtype {getattr(value, 'dtype', type(value).__name__)}, "
                            f"the model takes {t.dtype}")
    nonfinite = 0
    for t in plan.inputs:
        value = feeds[t.name]
        if value.dtype.kind == "f":
            bad = int(value.size - np.count_nonzero(np.isfinite(value)))
            if bad and refuse_nonfinite:
                raise PlanError(f"input {t.name!r}: {bad} NaN or infinite value(s) of {value.size}")
            nonfinite += bad
    return nonfinite


# the build's data, hashed into plan.json by `partition` and checked before a Session uses them; the engine sources
# (fpga/hls, fpga/rtl) are not data: the simulators compile the installed templates (rtl_sim/sources.py)
DATA_FILES = ("subgraphs/*", "fpga/engine.json", "fpga/memory.bin")


def confined(root: Path, rel, what: str) -> Path:
    """`root / rel` resolved, refused unless it stays inside `root` once every symlink is followed: a build
    names files of its own folder only."""
    if not isinstance(rel, str) or not rel or "\0" in rel or Path(rel).is_absolute():
        raise PlanError(f"{root}: {what} {rel!r} is not a relative path inside the build folder")
    base = Path(root).resolve()
    target = (base / rel).resolve()
    if target != base and base not in target.parents:
        raise PlanError(f"{root}: {what} {rel!r} leads outside the build folder (to {target}); a build names only "
                        "its own files")
    return target


def data_files(root: Path) -> dict[str, str]:
    """Every data file of a build folder (DATA_FILES) -> its SHA-256, as `partition` records them."""
    root = Path(root)
    found = sorted({p for pattern in DATA_FILES for p in root.glob(pattern) if p.is_file() and not p.is_symlink()})
    return {p.relative_to(root).as_posix(): file_sha256(p) for p in found}


def digest_mismatches(root: Path, files: dict[str, str], what: str) -> list[tuple[str, str]]:
    """(path, "missing" | "differs") for each of `files` (relative path -> SHA-256) that is not, inside `root`,
    the file recorded: the one check of a build's record and of a bundle's manifest."""
    bad = []
    for rel, digest in files.items():
        path = confined(root, rel, what)
        if not path.is_file():
            bad.append((rel, "missing"))
        elif file_sha256(path) != digest:
            bad.append((rel, "differs"))
    return bad


def verify_files(plan: Plan) -> None:
    """Each data file the plan records is inside the build, present, and has the SHA-256 `partition` recorded:
    a corrupted copy, a truncated download or a changed file is refused before any engine touches memory."""
    if plan.files is None:
        return                                    # a build from before the digests: confinement still holds
    for rel, how in digest_mismatches(plan.root, plan.files, "the recorded file")[:1]:
        if how == "missing":
            raise PlanError(f"{plan.root}: {rel} is missing (the build recorded it; copy the whole folder)")
        raise PlanError(f"{plan.root}: {rel} is not the file `partition` wrote (its SHA-256 differs: corrupted, "
                        "truncated or changed); copy it again or partition the model again")


def original_model(plan: Plan, given: Path | None = None) -> tuple[Path | None, str]:
    """The float original to compare a run with, and why there is none: the model `partition` read (or `given`),
    used only when it is a regular .onnx file whose SHA-256 is the one recorded. A plan can name any path, and the
    runtime must not parse a file a build from someone else chose; nor compare with a model changed since."""
    if not plan.original_takes_numpy:
        return None, "the original is a bfloat16 model, which onnxruntime's Python API cannot be fed"
    recorded = plan.model.get("sha256")
    where = given if given is not None else plan.model.get("path")
    if not isinstance(where, (str, Path)) or not str(where) or "\0" in str(where):
        return None, "the plan records no original model"
    path = Path(where)
    path = path if path.is_absolute() else plan.root / path
    if path.suffix != ".onnx" or not path.is_file():
        return None, f"the original model {path} is gone (or is no .onnx file)"
    if not isinstance(recorded, str) or file_sha256(path) != recorded:
        return None, (f"{path} is not the model this build was partitioned from (its SHA-256 differs from the one "
                      "plan.json records)")
    return path, ""
