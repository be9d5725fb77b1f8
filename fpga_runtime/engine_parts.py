"""The RTL engine's optional parts and the layers that need them. A build leaves out the parts none of its layers
use (`EngineConfig.lane_products`, `EngineConfig.residual_stage`, `EngineConfig.activation_tables`: DSP48E2s and
LUTs, so a third unit or a wider array fits); an RTL backend refuses a layer whose part its engine was built
without, since that engine would compute it wrong without a word. The Winograd unit's own test is
`window_path.winograd_problem`."""
from __future__ import annotations

from dataclasses import replace

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


def trimmed(cfg: EngineConfig, descriptors: list[Descriptor]) -> EngineConfig:
    """`cfg` with only the optional parts these layers (a whole build's, on the engine sized for them) use."""
    return replace(cfg, lane_products=any(needs_lane_products(d, cfg) for d in descriptors),
                   residual_stage=any(needs_residual_stage(d) for d in descriptors),
                   activation_tables=any(needs_activation_tables(d) for d in descriptors))


def left_out(cfg: EngineConfig) -> str:
    """The optional parts `cfg` is built without, as the design tables name them ("-" for none)."""
    return ", ".join(name for name, built in (("lane products", cfg.lane_products),
                                              ("residual stage", cfg.residual_stage),
                                              ("activation tables", cfg.activation_tables)) if not built) or "-"


def missing_part(d: Descriptor, cfg: EngineConfig) -> str | None:
    """Why the RTL engine `cfg` cannot run the layer `d` (a part it was built without), or None."""
    if d.flags & Flag.WINOGRAD and d.op == Op.CONV and (problem := window_path.winograd_problem(d, cfg)):
        return problem
    if not cfg.lane_products and needs_lane_products(d, cfg):
        what = "an L2 norm" if d.op == Op.L2NORM else "a depthwise conv off the window path"
        return f"{what} needs the MAC stage's lane products, which this engine was built without"
    if not cfg.residual_stage and needs_residual_stage(d):
        return (f"{Op(d.op).name.lower() if d.op != Op.CONV else 'a fused residual'} needs the epilogue's "
                "second-operand stage, which this engine was built without")
    if not cfg.activation_tables and needs_activation_tables(d):
        return "a table activation needs the epilogue's activation tables, which this engine was built without"
    return None
