"""The RTL engine's optional parts and the layers that need them. A build leaves out the parts none of its layers
use (DSP48E2s and LUTs, so a third unit or a wider array fits); an RTL backend refuses a layer whose part its engine
was built without, since that engine would compute it wrong without a word. `PARTS` is the one list of them: the
`EngineConfig` field, the define of the RTL's engine_config.svh, the overlay IP's parameter and the name the design
tables print all come from it, so every reader (trimming, the design tables, the runtime's refusals, the Verilator
and PYNQ checks of a build folder, the IP packaging, the golden replay) iterates it. The Winograd unit is not one
of them (a layer chooses it, not a build): its test is `window_path.winograd_problem`."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from fpga_runtime import window_path
from fpga_runtime.abi import Act, Descriptor, EngineConfig, Flag, Op


def needs_lane_products(d: Descriptor, cfg: EngineConfig) -> bool:
    """The MAC stage's lane-by-lane products (mac_stage.sv): L2NORM's squares and factor, and a depthwise conv
    off the window path (the window path runs depthwise convs on the array)."""
    if d.op == Op.L2NORM:
        return True
    return d.op == Op.CONV and bool(d.flags & Flag.DEPTHWISE) and window_path.geometry(d, cfg) is None


def needs_residual_stage(d: Descriptor) -> bool:
    """The epilogue's second-operand stage (epilogue.sv): ADD's second term, SCALE's gate, a fused residual."""
    return d.op in (Op.ADD, Op.SCALE) or (d.op == Op.CONV and bool(d.flags & Flag.RESIDUAL))


def needs_activation_tables(d: Descriptor) -> bool:
    """The epilogue's 256-entry tables (epilogue.sv): an activation the requantiser cannot clamp (act1), or any after
    a residual (act2)."""
    return Act.LUT in (d.act1, d.act2)


@dataclass(frozen=True)
class Part:
    """One optional part: where each layer of the stack names it, which layers need it and how a refusal says so."""
    field: str                                         # EngineConfig's (engine.json's key)
    define: str                                        # engine_config.svh's, 1 or 0 (hls_templates/rtl)
    ip_parameter: str                                  # the engine IP's user parameter, in the overlay's .hwh
    name: str                                          # in the design tables' "parts left out"
    what: str                                          # the part, as a refusal names it
    needs: Callable[[Descriptor, EngineConfig], bool]
    user: Callable[[Descriptor], str]                  # the layer needing it, as a refusal names it


PARTS = (
    Part("lane_products", "ENGINE_LANE_PRODUCTS", "HAS_LANE_PRODUCTS", "lane products",
         "the MAC stage's lane products", needs_lane_products,
         lambda d: "an L2 norm" if d.op == Op.L2NORM else "a depthwise conv off the window path"),
    Part("residual_stage", "ENGINE_RESIDUAL", "HAS_RESIDUAL_STAGE", "residual stage",
         "the epilogue's second-operand stage", lambda d, cfg: needs_residual_stage(d),
         lambda d: Op(d.op).name.lower() if d.op != Op.CONV else "a fused residual"),
    Part("activation_tables", "ENGINE_TABLES", "HAS_ACTIVATION_TABLES", "activation tables",
         "the epilogue's activation tables", lambda d, cfg: needs_activation_tables(d),
         lambda d: "a table activation"),
)


def built(cfg: EngineConfig) -> dict[str, bool]:
    """{field: whether `cfg` has the part}, for every part."""
    return {p.field: bool(getattr(cfg, p.field)) for p in PARTS}


def ip_parameters(cfg: EngineConfig) -> dict[str, int]:
    """The engine IP's parameters that say which parts it was built with (the packaging writes them, the PYNQ
    backend checks the overlay's)."""
    return {p.ip_parameter: int(getattr(cfg, p.field)) for p in PARTS}


def from_defines(cfg: EngineConfig, defines: dict[str, str]) -> EngineConfig:
    """`cfg` with the parts an engine_config.svh's defines say (a part whose define is missing: built)."""
    return replace(cfg, **{p.field: defines.get(p.define, "1") == "1" for p in PARTS})


def disagreement(cfg: EngineConfig, defines: dict[str, str]) -> list[str]:
    """Each part whose define in an engine_config.svh is not what `cfg` (engine.json) says."""
    return [f"{p.define} {defines.get(p.define, 'missing')} (engine.json: {int(getattr(cfg, p.field))})"
            for p in PARTS if defines.get(p.define) != str(int(getattr(cfg, p.field)))]


def trimmed(cfg: EngineConfig, descriptors: list[Descriptor]) -> EngineConfig:
    """`cfg` with only the optional parts these layers (a whole build's, on the engine sized for them) use."""
    return replace(cfg, **{p.field: any(p.needs(d, cfg) for d in descriptors) for p in PARTS})


def left_out(cfg: EngineConfig) -> str:
    """The optional parts `cfg` is built without, as the design tables name them ("-" for none)."""
    return ", ".join(p.name for p in PARTS if not getattr(cfg, p.field)) or "-"


def missing_part(d: Descriptor, cfg: EngineConfig) -> str | None:
    """Why the RTL engine `cfg` cannot run the layer `d` (a part it was built without), or None."""
    if d.flags & Flag.WINOGRAD and d.op == Op.CONV and (problem := window_path.winograd_problem(d, cfg)):
        return problem
    for p in PARTS:
        if not getattr(cfg, p.field) and p.needs(d, cfg):
            return f"{p.user(d)} needs {p.what}, which this engine was built without"
    return None
