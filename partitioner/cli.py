"""The `partition` command."""
from __future__ import annotations

import sys
import traceback
from dataclasses import replace
from pathlib import Path

import click
import numpy as np

from fpga_runtime.abi import EngineConfig
from fpga_runtime.boards import BOARDS
from fpga_runtime.class_names import NamesError, read_names
from partitioner import __version__
from partitioner.build import PartitionConfig, TargetName, run_partition
from partitioner.engine.winograd import MAX_LOSS as WINOGRAD_MAX_LOSS
from partitioner.engine.winograd import MODES as WINOGRAD_MODES
from partitioner.errors import ModelError
from partitioner.evaluate.float_check import (
    CONDITIONING_FACTOR,
    DEFAULT_TOLERANCE,
    INFORMATION,
    OWN_ROUNDING,
    first_failure,
)
from partitioner.explore.clock import design_clock, overlay_clock
from partitioner.mixed_precision import Fallback, meet_accuracy
from partitioner.output.report import console_table


def _shape(value: str) -> tuple[str, tuple[int, ...]]:
    name, sep, dims = value.rpartition("=")
    try:
        shape = tuple(int(d) for d in dims.lower().split("x"))
    except ValueError:
        shape = ()
    if not sep or not name or not shape or any(d <= 0 for d in shape):
        raise click.BadParameter(f"{value!r}: expected NAME=1x3x416x416")
    return name, shape


def _npy(value: str) -> tuple[str, np.ndarray]:
    name, sep, path = value.partition("=")
    if not sep or not name:
        raise click.BadParameter(f"{value!r}: expected NAME=FILE.npy")
    try:
        return name, np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise click.BadParameter(f"{path}: cannot read a .npy array ({exc})") from None


def _triple(value: str | None, option: str) -> tuple[float, float, float] | None:
    if value is None:
        return None
    try:
        parts = tuple(float(v) for v in value.split(","))
    except ValueError:
        parts = ()
    if len(parts) != 3:
        raise click.BadParameter(f"{value!r}: expected three numbers R,G,B", param_hint=option)
    return parts


def _preprocess_overrides(preset, mean, std, scale, letterbox, bgr, layout=None) -> dict:
    """The pre-processing options given, checked before any step runs."""
    given = {"mean": _triple(mean, "--mean"), "std": _triple(std, "--std"), "scale": scale,
             "fit": None if letterbox is None else ("letterbox" if letterbox else "stretch"), "bgr": bgr or None,
             "layout": layout}
    given = {k: v for k, v in given.items() if v is not None}
    if given.get("std") and any(s == 0 for s in given["std"]):
        raise click.BadParameter("a standard deviation of 0", param_hint="--std")
    if preset == "none" and {"mean", "std", "scale"} & set(given):
        raise click.UsageError("--preprocess none passes the raw uint8 picture: --mean, --std and --scale do not "
                               "apply")
    return given


def _dsp_clock(value: str, board: str) -> int:
    multiple = int(value.rstrip("x"))
    if multiple == 2 and BOARDS[board].dsp_clock_2x_problem:
        raise click.BadParameter(BOARDS[board].dsp_clock_2x_problem, param_hint="--dsp-clock")
    return multiple


def _engine(shape: str | None, units: int | None, board: str, dsp_clock: int) -> EngineConfig | None:
    if shape is None:
        return None
    try:
        config = EngineConfig.from_shape(shape, compute_units=units or 1, clock_mhz=BOARDS[board].clock_mhz,
                                         dsp_clock=dsp_clock)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    if config.pe_rows not in (8, 16, 32, 64) or config.vec not in (8, 16, 32, 64):
        raise click.BadParameter(f"{shape!r}: PE rows and VEC must each be 8, 16, 32 or 64")
    if config.pixels not in (1, 2, 4, 8, 16):
        raise click.BadParameter(f"{shape!r}: pixels must be 1, 2, 4, 8 or 16")
    if config.dsp_clock_problem():
        raise click.BadParameter(f"{shape!r} with --dsp-clock 2x: {config.dsp_clock_problem()}")
    return replace(config, clock_mhz=design_clock(BOARDS[board], config)[0])


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="partition")
@click.argument("model", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--target", type=click.Choice([t.value for t in TargetName]), default="fpga", show_default=True)
@click.option("--board", type=click.Choice(list(BOARDS), case_sensitive=False), default="zcu104", show_default=True)
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="build folder [default: build/<model name>]")
@click.option("--input-shape", "shapes", multiple=True, help="pin a dynamic input: NAME=1x3x416x416")
@click.option("--verify", is_flag=True, help="run the partitioned and the original model and compare outputs")
@click.option("--input", "inputs", multiple=True, help="input for --verify: NAME=FILE.npy (default: seeded random)")
@click.option("--tolerance", type=float, default=DEFAULT_TOLERANCE, show_default=True,
              help="--verify: largest allowed max|a-b| / max|b| per float output")
@click.option("--calibrate", "calibrate_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="folder of .npy frames or images for int8 calibration (default: seeded random, testing only)")
@click.option("--accuracy-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="held-out .npy frames or images the int8 report, --min-cosine and --min-f1 are measured on "
                   "[default: the --input frame, else the first calibration frames]")
@click.option("--calibration-frames", type=click.IntRange(min=1), default=4, show_default=True,
              help="seeded random frames when no --calibrate folder is given")
@click.option("--calibration-method", type=click.Choice(["max", "percentile", "mse"]), default="mse",
              show_default=True, help="how a tensor's int8 range is chosen from the calibration frames")
@click.option("--calibration-table", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="reuse the int8 ranges of an earlier build (its fpga/calibration.json) instead of calibrating")
@click.option("--compute-units", type=click.IntRange(min=1), default=None,
              help="engine instances in the overlay [default: chosen by the design-space exploration]")
@click.option("--engine", "engine_shape", default=None, metavar="[PIXELSx]ROWSxVEC",
              help="fix the engine's array (e.g. 16x16, or 4x16x16: 4 output pixels per step) instead of exploring")
@click.option("--target-fps", type=click.FloatRange(min=0, min_open=True), default=None,
              help="choose the smallest engine that reaches this rate (an error where none does)")
@click.option("--objective", type=click.Choice(["throughput", "latency", "fpga"]), default="throughput",
              show_default=True,
              help="what the exploration maximises: whole frames per second under fpga-run's defaults (frames "
                   "in flight, CPU workers), one frame's latency, or (fpga) frames per second of the FPGA layers "
                   "alone, whole frames breaking ties")
@click.option("--in-flight", type=click.IntRange(min=1), default=None,
              help="frames in flight the throughput objective assumes, as `fpga-run run --in-flight` [default: "
                   "fpga-run's, one per compute unit and one more]; with fewer frames than units, parallel "
                   "branches may pay")
@click.option("--no-accuracy", is_flag=True, help="skip the int8 accuracy report")
@click.option("--min-cosine", type=click.FloatRange(-1.0, 1.0), default=None,
              help="fail (exit 1) when an output's int8 cosine against float is below this; names the first layer "
                   "(outputs of detections ordered by score are judged by --min-f1 instead)")
@click.option("--min-f1", type=click.FloatRange(0.0, 1.0), default=None,
              help="fail (exit 1) when the int8 detections' F1 against float (boxes matched at IoU >= 0.5, same "
                   "class; map pixels for probability maps) is below this")
@click.option("--auto-fallback", is_flag=True,
              help="with --min-cosine/--min-f1: keep the fewest most sensitive layers in float on the CPU until "
                   "the targets are met (says which, and what it costs)")
@click.option("--fallback-budget", type=click.FloatRange(0.0, 1.0, min_open=True), default=None,
              help="--auto-fallback: the largest share of the FPGA's conv MACs the layers kept in float may take "
                   "(e.g. 0.05); the ranking skips layers that would pass it [default: no limit]")
@click.option("--sensitivity", is_flag=True,
              help="rank the engine's tensors by what int8 rounding of each alone costs the outputs (report.md)")
@click.option("--no-bias-correction", is_flag=True,
              help="keep the convs' float biases as they are instead of removing the mean error int8 rounding of "
                   "their weights adds (measured from the calibration frames' channel means)")
@click.option("--winograd", type=click.Choice(list(WINOGRAD_MODES)), default="off", show_default=True,
              help="3x3 stride-1 convs as integer Winograd F(2x2, 3x3) layers: all of them, none, or (auto) those "
                   "the cycle model says are faster and whose int8 cosine, measured on the calibration frames, "
                   "drops at most --winograd-max-loss below direct int8. Every backend runs them: the RTL engine on "
                   "its window path's Winograd unit (engines of 2 pixels or more; fused residuals and pools included), "
                   "the reference and csim on any engine")
@click.option("--winograd-max-loss", type=click.FloatRange(0.0, 1.0), default=WINOGRAD_MAX_LOSS, show_default=True,
              help="--winograd auto: the cosine a layer may lose against direct int8")
@click.option("--keep-on-cpu", "keep_on_cpu", multiple=True, metavar="NODE",
              help="keep this ONNX node's layer in float on the CPU (repeatable; --sensitivity suggests which)")
@click.option("--save-steps", is_flag=True,
              help="keep what every step made in <output>/steps/ (the graph after each fusion pass, JSON of the rest)")
@click.option("--no-picture", is_flag=True, help="skip the Graphviz picture")
@click.option("--synth", is_flag=True, help="synthesise the RTL engine with yosys (fpga/synth/resources.json)")
@click.option("--clock-mhz", type=click.FloatRange(min=1, max=1000), default=None,
              help="the engine clock every time and rate assumes and the overlay is built for [default: the "
                   "board's fabric clock, or the engine's estimated Fmax where lower]; on a Zynq the fastest clock "
                   "the overlay's MMCM makes not above it (2-3 MHz steps); above the estimate it is warned about "
                   "(give it when Vivado's routed timing says the design meets it)")
@click.option("--dsp-clock", type=click.Choice(["1x", "2x"]), default="1x", show_default=True,
              help="the MAC array's DSP48E2s at the engine clock or twice it (the DPU's double-pumped DSPs: half the "
                   "DSPs for the same array; UltraScale+; the overlay makes the second clock). Exploring, every "
                   "candidate takes it")
@click.option("--engine-impl", type=click.Choice(["rtl", "hls"]), default="rtl", show_default=True,
              help="the engine `make bitstream` puts on the board: rtl, the SystemVerilog engine that Verilator "
                   "simulates and yosys synthesises (packaged as IP by `make ip`), or hls, the Vitis HLS engine "
                   "(`make hls`; not simulated, profiled or timed here)")
@click.option("--offload-all", is_flag=True, help="offload every supported region, even where the cost model says no")
@click.option("--preprocess", type=click.Choice(["yolo", "imagenet", "unit", "none"]), default=None,
              help="how a picture becomes the input, for --calibrate DIR and fpga-run run --image "
                   "[default: found from the model, and said]")
@click.option("--mean", type=str, default=None, help="R,G,B subtracted after --scale (e.g. 0.485,0.456,0.406)")
@click.option("--std", type=str, default=None, help="R,G,B divided by after the mean")
@click.option("--scale", "pixel_scale", type=float, default=None, help="pixels times this first (e.g. 0.00392)")
@click.option("--letterbox/--stretch", "letterbox", default=None, help="keep the aspect ratio (grey bars) or not")
@click.option("--bgr", is_flag=True, default=None, help="the model takes B, G, R channel order")
@click.option("--layout", type=click.Choice(["nchw", "nhwc"]), default=None,
              help="where the input's 3 channels are [default: found from its shape]")
@click.option("--names", "names_spec", default=None, metavar="coco|coco91|FILE",
              help="class names recorded in the plan for drawn labels: COCO's 80 (ultralytics, Darknet), coco91 "
                   "(torchvision's ids), or a file (one per line, JSON, "
                   "or a data YAML's names:) [default: the model's metadata, where ultralytics writes them]")
@click.option("--allow-cpu-only", is_flag=True,
              help="exit 0 even where a model with conv layers gets no FPGA subgraph (the reason is printed)")
@click.option("--debug", is_flag=True, help="show tracebacks")
def main(model: Path, target: str, board: str, out_dir: Path | None, shapes: tuple[str, ...], verify: bool,
         inputs: tuple[str, ...], tolerance: float, calibrate_dir: Path | None, accuracy_dir: Path | None,
         calibration_frames: int,
         calibration_method: str, calibration_table: Path | None,
         compute_units: int | None, engine_shape: str | None, target_fps: float | None, objective: str,
         in_flight: int | None, no_accuracy: bool,
         min_cosine: float | None, min_f1: float | None, auto_fallback: bool, fallback_budget: float | None,
         sensitivity: bool,
         no_bias_correction: bool, winograd: str, winograd_max_loss: float, keep_on_cpu: tuple[str, ...],
         save_steps: bool, no_picture: bool, synth: bool, clock_mhz: float | None, dsp_clock: str, engine_impl: str,
         offload_all: bool, preprocess: str | None,
         mean: str | None, std: str | None, pixel_scale: float | None, letterbox: bool | None, bgr: bool | None,
         layout: str | None,
         names_spec: str | None, allow_cpu_only: bool, debug: bool) -> None:
    """Partition an ONNX MODEL into CPU and FPGA subgraphs and write plan, subgraphs and report."""
    try:
        names = read_names(names_spec) if names_spec else None
    except NamesError as exc:
        raise click.BadParameter(str(exc), param_hint="--names") from None
    cfg = PartitionConfig(
        model=model, out_dir=out_dir or Path("build") / model.stem, target=TargetName(target), board=board,
        input_shapes=dict(_shape(s) for s in shapes), verify=verify, inputs=dict(_npy(i) for i in inputs),
        tolerance=tolerance, save_steps=save_steps, picture=not no_picture, offload_everything=offload_all,
        calibrate_dir=calibrate_dir, accuracy_dir=accuracy_dir, calibration_frames=calibration_frames,
        calibration_table=calibration_table,
        calibration_method=calibration_method, accuracy=not no_accuracy, synth=synth, engine_impl=engine_impl,
        clock_mhz=clock_mhz,
        dsp_clock=_dsp_clock(dsp_clock, board),
        engine=_engine(engine_shape, compute_units, board, _dsp_clock(dsp_clock, board)), target_fps=target_fps,
        compute_units=compute_units,
        objective=objective, in_flight=in_flight, sensitivity=sensitivity, keep_on_cpu=keep_on_cpu,
        preprocess=preprocess,
        bias_correction=not no_bias_correction, winograd=winograd, winograd_max_loss=winograd_max_loss,
        preprocess_overrides=_preprocess_overrides(preprocess, mean, std, pixel_scale, letterbox, bgr, layout),
        class_names=names)
    click.echo(f"partition {model} --target {target} --board {board} -> {cfg.out_dir}")
    if cfg.dsp_clock == 2 and engine_impl == "hls":
        raise click.UsageError("--dsp-clock 2x is the RTL engine's (mac_quad.sv); the HLS engine runs its DSPs at "
                               "the engine clock: use --engine-impl rtl")
    if clock_mhz is not None:
        try:
            overlay_clock(BOARDS[board], clock_mhz, cfg.dsp_clock)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--clock-mhz") from None
    if auto_fallback and min_cosine is None and min_f1 is None:
        raise click.UsageError("--auto-fallback needs a target: --min-cosine and/or --min-f1")
    if fallback_budget is not None and not auto_fallback:
        raise click.UsageError("--fallback-budget limits --auto-fallback: give both")
    if auto_fallback and no_accuracy:
        raise click.UsageError("--auto-fallback measures int8 accuracy: it cannot go with --no-accuracy")
    fallback = None
    try:
        if auto_fallback:
            fallback = meet_accuracy(cfg, min_cosine, min_f1, click.echo, fallback_budget)
            result = fallback.result
        else:
            result = run_partition(cfg, click.echo)
    except ModelError as exc:
        if debug:
            traceback.print_exc()
        click.echo(f"error: {exc.message()}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        click.echo(f"interrupted: nothing written; {cfg.out_dir} is as it was", err=True)
        sys.exit(130)
    except OSError as exc:            # the machine's, not the model's: a full disk, a read-only folder, permissions
        if debug:
            traceback.print_exc()
        where = f" {exc.filename}" if exc.filename else ""
        click.echo(f"error: cannot read or write{where}: {exc.strerror or exc}; nothing written, {cfg.out_dir} is "
                   "as it was", err=True)
        sys.exit(2)
    except Exception as exc:  # a bug of ours: one line unless --debug
        if debug:
            raise
        click.echo(f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)", err=True)
        sys.exit(3)
    for w in result.warnings:
        click.echo(f"warning: {w}", err=True)
    click.echo("")
    click.echo(console_table(result.plan))
    click.echo(f"\nplan: {cfg.out_dir / 'plan.json'}   report: {cfg.out_dir / 'report.md'}")
    if result.accuracy is not None:
        on = f", on {result.accuracy.frame}" if result.accuracy.frame else ""
        click.echo(f"\nint8 accuracy (reference backend vs float original{on}):")
        for o in result.accuracy.outputs:
            click.echo(f"  {o.name}: SNR {o.snr_db:.1f} dB, cosine {o.cosine:.5f}, max abs error {o.max_abs:.4g}"
                       + (f" ({o.note})" if o.note else ""))
        if result.accuracy.detections:
            d = result.accuracy.detections
            click.echo(f"  detections: {d.summary()}")
    if result.sensitivity:
        worst = result.sensitivity[:5]
        click.echo("  most sensitive tensors (only this one in int8, the rest float): "
                   + ", ".join(f"{w.tensor} {w.cosine:.4f}" for w in worst))
    if fallback is not None and fallback.first is not None:
        click.echo(_fallback_summary(fallback))
    if min_cosine is not None and (low := result.below(min_cosine)) is not None:
        click.echo(f"error: int8 output {low[0]!r} has cosine below {min_cosine} against float; the first FPGA "
                   f"layer below it is {low[1]!r} (report.md lists every layer"
                   + ("" if auto_fallback else "; --auto-fallback keeps the most sensitive layers in float") + ")",
                   err=True)
        sys.exit(1)
    if min_f1 is not None:
        d = result.accuracy.detections if result.accuracy is not None else None
        if d is None or d.f1 is None:
            click.echo("warning: --min-f1: no detections in this model's outputs to judge", err=True)
        elif d.f1 < min_f1:
            click.echo(f"error: int8 detections' F1 {d.f1:.3f} against float is below {min_f1} ({d.summary()})",
                       err=True)
            sys.exit(1)
    if result.checks is not None:
        alone = [c for c in result.checks if c.subgraph and c.subgraph not in INFORMATION]
        if alone:
            worst = max(alone, key=lambda c: c.max_abs / c.bound if c.bound else 0.0)
            failed = [c for c in alone if not c.ok]
            click.echo(f"verify subgraphs: {len({c.subgraph for c in alone})} checked alone on the original's own "
                       f"tensors at {len(alone)} boundaries, worst {worst.subgraph} at {worst.name!r}: max abs "
                       f"{worst.max_abs:.3g} of bound {worst.bound:.3g} -> {'FAIL' if failed else 'ok'}")
            for c in failed[:10]:
                click.echo(f"verify {c.subgraph} {c.name}: max abs {c.max_abs:.3g}, bound {c.bound:.3g} -> FAIL")
        for c in result.checks:
            if c.subgraph == OWN_ROUNDING:
                click.echo(f"verify {c.name}: the original's own {result.plan.model.get('precision', 'float16')} "
                           f"rounding moves it {c.max_abs:.3g} (max rel {c.max_rel:.3g}) from float32 (information)")
            elif c.subgraph in INFORMATION:
                click.echo(f"verify {c.name}: the original's own activation Q/DQ pairs, which the engine takes as its "
                           f"int8 scales, move it {c.max_abs:.3g} (max rel {c.max_rel:.3g}) from the float graph the "
                           "partition computes and --verify checks (information; the int8 report measures the engine "
                           "against the QDQ original)")
            elif not c.subgraph:
                status = "ok" if c.ok else "FAIL"
                own = f" (onnxruntime's own optimisations move it {c.own_gap:.3g})" if c.own_gap else ""
                click.echo(f"verify {c.name}: max abs {c.max_abs:.3g}, max rel {c.max_rel:.3g}{own} -> {status}")
        if not result.verified:
            click.echo(f"error: the partitioned model differs from the original: {first_failure(result.checks)} "
                       f"(tolerance {tolerance} of each tensor's largest value, times the subgraphs in series at a "
                       f"model output, or {CONDITIONING_FACTOR:g}x what onnxruntime's own graph optimisations "
                       "change)", err=True)
            sys.exit(1)
    if cfg.target is TargetName.FPGA and (why := result.why_no_fpga()) is not None:
        click.echo(f"{'warning' if allow_cpu_only else 'error'}: no FPGA subgraph: {why}"
                   + ("" if allow_cpu_only else f" (the CPU-only build is in {cfg.out_dir}; --allow-cpu-only "
                                                "accepts it)"), err=True)
        if not allow_cpu_only:
            sys.exit(1)


def _fallback_summary(fallback: Fallback) -> str:
    """Which layers went to the CPU for accuracy, and what they cost in conv MACs and frames per second."""
    first, now = fallback.first, fallback.result
    rate = lambda r: "n/a" if r.modelled_rate is None else f"{r.modelled_rate:.1f} fps"     # noqa: E731
    return (f"auto-fallback: {len(fallback.kept)} layer(s) kept in float on the CPU ({', '.join(fallback.kept)}) "
            f"for tensor(s) {', '.join(fallback.tensors)}; {len(fallback.tries)} build(s) tried; conv MACs on the "
            f"FPGA {first.fpga_mac_share:.1%} -> {now.fpga_mac_share:.1%}; modelled rate {rate(first)} -> "
            f"{rate(now)}")


if __name__ == "__main__":
    main()
