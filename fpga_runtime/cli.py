"""`fpga-run`: run a build folder on a backend, or predict its latency and throughput on a board.

Every user mistake (a folder that is not a build, a bad input file, a count of zero) is one line and exit 2;
a bug of ours is one line and exit 3 unless --debug; Ctrl-C is one line and exit 130.
"""
from __future__ import annotations

import functools
import json
import os
import signal
import sys
import threading
import time
import traceback
from pathlib import Path

import click
import numpy as np

from fpga_runtime import __version__, window_path
from fpga_runtime.abi import Flag
from fpga_runtime.backends import BACKENDS, BackendError
from fpga_runtime.boards import BOARDS
from fpga_runtime.boards import board as board_by_name
from fpga_runtime.checking.accuracy import compare, summarise
from fpga_runtime.checking.frames import original_outputs, random_frame
from fpga_runtime.checking.ladder import DEFAULT_RUNGS, RUNGS
from fpga_runtime.cli_frames import RunFrames, expand_sources, names_option, write_pictures
from fpga_runtime.engine_image import ENGINE_DIR, EngineImage
from fpga_runtime.plan import PlanError, check_feeds, original_model, read_plan
from fpga_runtime.prediction import cpu_costs
from fpga_runtime.prediction.profile import build_profile, profile_table, write_profile
from fpga_runtime.prediction.virtual_time import build_compute_units, predict, steady_frames
from fpga_runtime.preprocess import ImageError
from fpga_runtime.run.policy import CPU_WORKERS, IN_FLIGHT, default_in_flight
from fpga_runtime.run.scheduler import Scheduler, TaskError
from fpga_runtime.run.session import Session
from fpga_runtime.run.trace import Span, write_chrome_trace, write_gantt
from fpga_runtime.serve.command import serve_cmd

USER_ERRORS = (PlanError, BackendError, TaskError, ImageError, ValueError, OSError)
COUNT = click.IntRange(min=1)


def _exit_now(code: int) -> None:
    """Exit without waiting for engine work in flight: a C-simulated or Verilated layer cannot be interrupted,
    and the interpreter's exit would join its worker thread (a minute or more on csim). Only the command line
    does this; the Python API leaves the threads to its caller."""
    busy = [t for t in threading.enumerate() if t is not threading.main_thread() and t.is_alive() and not t.daemon]
    if not busy:
        sys.exit(code)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _interrupted(*_) -> None:
    click.echo("interrupted", err=True)
    _exit_now(130)


def _one_line_errors(command):
    """Known errors as `error: ...` (exit 2), anything else as `internal error: ...` (exit 3)."""
    @functools.wraps(command)
    def wrapper(*args, debug: bool = False, **kwargs):
        previous = None
        if threading.current_thread() is threading.main_thread():     # Ctrl-C ends the command at once, even
            previous = signal.signal(signal.SIGINT, _interrupted)      # while a backend's close would wait
        try:
            return command(*args, **kwargs)
        except KeyboardInterrupt:
            _interrupted()
        except USER_ERRORS as exc:
            if debug:
                traceback.print_exc()
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)
        except click.ClickException:
            raise
        except Exception as exc:
            if debug:
                raise
            click.echo(f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)", err=True)
            sys.exit(3)
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
    return click.option("--debug", is_flag=True, help="tracebacks instead of one-line errors")(wrapper)


def _board_choice() -> click.Choice:
    return click.Choice(list(BOARDS), case_sensitive=False)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="fpga-run")
def main() -> None:
    """Run partitioned models (`fpga-run run`) or predict them on a board (`fpga-run predict`)."""


@main.command()
@click.argument("build", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--backend", type=click.Choice(list(BACKENDS)), default="reference", show_default=True)
@click.option("--input", "inputs", multiple=True, help="NAME=FILE.npy (one frame)")
@click.option("--image", "--source", "images", multiple=True,
              help="an image file, a folder of them or a glob (quoted), one frame each, through the build's "
                   "pre-processing (repeatable)")
@click.option("--resize", type=click.Choice(["letterbox", "stretch"]), default="letterbox", show_default=True,
              help="how --image pictures of another size fit the input: YOLO letterboxes, SSD stretches")
@click.option("--frames", type=COUNT, default=1, show_default=True, help="seeded random frames without inputs")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="where outputs (.npy), accuracy and traces go [default: BUILD/run, or run2, run3, ... where "
                   "earlier runs are]")
@click.option("--compute-units", type=COUNT, default=None, help="engine instances to use [default: the build's]")
@click.option("--cpu-workers", type=COUNT, default=CPU_WORKERS, show_default=True)
@click.option("--in-flight", type=COUNT, default=None,
              help=f"frames pipelined at once [default: compute units + 1, at least {IN_FLIGHT}]")
@click.option("--conf", type=click.FloatRange(0, 1), default=0.25, show_default=True,
              help="the least score a drawn detection has (raw YOLO heads, torchvision's outputs)")
@click.option("--iou", type=click.FloatRange(0, 1), default=0.7, show_default=True,
              help="raw YOLO heads: class-wise NMS overlap")
@click.option("--max-det", type=COUNT, default=300, show_default=True, help="raw YOLO heads: detections per image")
@click.option("--names", "names_spec", default=None, metavar="coco|coco91|FILE",
              help="class names for drawn labels: COCO's 80 (ultralytics, Darknet), coco91 (torchvision's ids), "
                   "or a file (one per line, JSON, or a data YAML's "
                   "names:) [default: the build's, from the model's metadata or partition --names]")
@click.option("--refuse-nonfinite", is_flag=True, help="refuse inputs holding NaN or infinite values (exit 2)")
@click.option("--sequential", is_flag=True, help="one subgraph at a time, no pipelining")
@click.option("--no-accuracy", is_flag=True, help="skip the comparison with the float original")
@click.option("--model", "model_opt", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="the float original to compare with [default: the one plan.json records]; used only when its "
                   "SHA-256 is the one partition recorded")
@click.option("--profile", is_flag=True, help="verilator: clock cycles, stalls and bytes of every layer (profile.json)")
@click.option("--simulate", type=click.Choice(["verilator", "csim"]), default=None,
              help="pynq: a simulated board (PYNQ's driver path on the RTL or the C-simulated engine)")
@click.option("--overlay", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="pynq: the bitstream to load, its .hwh beside it [default: BUILD/fpga/overlay/build/]")
@_one_line_errors
def run(build: Path, backend: str, inputs, images, resize: str, frames: int, seed: int, out_dir: Path | None,
        compute_units: int | None, cpu_workers: int, in_flight: int | None, conf: float, iou: float,
        max_det: int, names_spec: str | None, refuse_nonfinite: bool, sequential: bool, no_accuracy: bool,
        model_opt: Path | None, profile: bool, simulate: str | None, overlay: Path | None) -> None:
    """Run BUILD (a `partition` output folder, or a `deploy` bundle) on a backend."""
    images = expand_sources(images)
    class_names = names_option(names_spec)
    if profile and backend != "verilator":
        raise click.BadParameter("--profile measures RTL clock cycles: use it with --backend verilator",
                                 param_hint="--profile")
    if (simulate or overlay) and backend != "pynq":
        raise click.BadParameter("--simulate and --overlay are options of --backend pynq", param_hint="--backend")
    plan = read_plan(build)
    model, no_model = (None, "") if no_accuracy else original_model(plan, model_opt)
    if model_opt is not None and model is None:
        raise click.BadParameter(no_model, param_hint="--model")
    in_flight = in_flight or default_in_flight(compute_units or build_compute_units(plan))
    with Session(build, backend, compute_units, slots=1 if sequential else in_flight, simulate=simulate,
                 overlay=overlay, refuse_nonfinite=refuse_nonfinite) as session:
        given = RunFrames(session, inputs, images, frames, seed, resize)
        if given.note:
            click.echo(f"note: {given.note}", err=True)
        if given.synthetic:
            click.echo(f"no inputs given: {len(given.feeds)} seeded random frame(s)", err=True)
        progress = _Progress(len(given.feeds))
        if sequential:
            outputs, spans, wall = _sequential(session, given.feeds, progress)
            mode = "one subgraph at a time"
        else:
            scheduler = Scheduler(session, cpu_workers, compute_units, in_flight, keep_spans=None)
            outputs = []
            for out in scheduler.stream(given.feeds):
                outputs.append(out)
                progress.done(len(outputs))
            spans, wall = scheduler.stats.spans, scheduler.stats.wall_s
            session.nonfinite_inputs += scheduler.stats.nonfinite
            mode = f"concurrent, {scheduler.units} compute unit(s), {cpu_workers} CPU worker(s), {in_flight} in flight"
        layers = build_profile(session.image, session.backend.const, session.backend.runs) \
            if profile and session.backend else None
    if session.nonfinite_inputs:
        click.echo(f"warning: the inputs held {session.nonfinite_inputs} NaN or infinite value(s): the engine ran NaN "
                   "as 0 and infinities saturated (--refuse-nonfinite refuses such inputs)", err=True)
    where = f"{backend} (simulated board, {simulate})" if simulate else backend
    click.echo(f"{len(outputs)} frame(s) in {wall:.3f} s ({len(outputs) / wall:.2f} frames/s) on {where}, {mode}")
    out_dir = out_dir or _fresh_run_folder(build)
    out_dir.mkdir(parents=True, exist_ok=True)
    if layers is not None:
        write_profile(layers, out_dir / "profile.json")
        cfg = session.image.config
        click.echo(profile_table(layers, cfg.array_macs, limit=40))
        click.echo(f"profile: {out_dir / 'profile.json'}")
    for k, out in enumerate(outputs):
        for name, value in out.items():
            np.save(out_dir / f"frame{k}_{name.replace('/', '_')}.npy", value)
    write_chrome_trace(spans, out_dir / "trace.json", f"{build.name} on {backend} ({mode})")
    write_gantt(spans, out_dir / "gantt.png", f"{build.name} on {backend} ({mode})")
    click.echo(f"trace: {out_dir / 'trace.json'}  gantt: {out_dir / 'gantt.png'}")
    if given.fits:
        write_pictures(given, outputs, images, out_dir, class_names or session.plan.class_names,
                        (conf, iou, max_det), spans)
    if no_accuracy:
        pass
    elif model is None:
        click.echo(f"accuracy check skipped: {no_model} (--model names another copy)", err=True)
    else:
        _accuracy(build, backend, model, given.feeds, outputs, out_dir)
    click.echo(f"outputs: {out_dir}")


class _Progress:
    """One stderr line per finished frame once a run has taken a second: long runs (csim, verilator, many
    frames) show where they are and how long is left; quick ones stay quiet."""

    QUIET_S = 1.0

    def __init__(self, total: int):
        self.total = total
        self.t0 = time.perf_counter()

    def done(self, k: int) -> None:
        elapsed = time.perf_counter() - self.t0
        if self.total > 1 and elapsed >= self.QUIET_S:
            left = elapsed / k * (self.total - k)
            click.echo(f"frame {k}/{self.total} done, {elapsed:.1f} s" + (f", about {left:.0f} s left"
                                                                          if k < self.total else ""), err=True)


def _sequential(session: Session, feeds: list[dict], progress: _Progress) -> tuple[list[dict], list[Span], float]:
    """Frames one after the other, each subgraph in plan order: the baseline the concurrent run is compared to."""
    spans: list[Span] = []
    outputs = []
    t0 = time.perf_counter()
    for k, f in enumerate(feeds):
        session.nonfinite_inputs += check_feeds(session.plan, f, session.refuse_nonfinite)
        values = dict(f)
        for sg in session.plan.subgraphs:
            start = time.perf_counter() - t0
            values.update(session.run_subgraph(sg, values))
            spans.append(Span(sg.name, k, "fpga-cu0" if sg.device == "fpga" else "cpu-0", start,
                              time.perf_counter() - t0))
        outputs.append({n: values[n] for n in session.output_names})
        progress.done(len(outputs))
    return outputs, spans, time.perf_counter() - t0


def _fresh_run_folder(build: Path) -> Path:
    """BUILD/run, or the first of run2, run3, ... not there yet: a run never mixes its files with an earlier's."""
    k = 1
    while (build / ("run" if k == 1 else f"run{k}")).exists():
        k += 1
    return build / ("run" if k == 1 else f"run{k}")


def _accuracy(build: Path, backend: str, model: Path, feeds: list[dict], outputs: list[dict], out_dir: Path) -> None:
    reports = [compare(original_outputs(model, f), o) for f, o in zip(feeds, outputs)]
    (out_dir / "accuracy.json").write_text(json.dumps([r.as_dict() for r in reports], indent=1) + "\n")
    lines = [f"# int8 accuracy of {build.name} on {backend}", ""]
    for k, r in enumerate(reports):
        lines += [f"## frame {k}", ""] + r.markdown() + [""]
    (out_dir / "accuracy.md").write_text("\n".join(lines))
    summary = summarise(reports)
    scope = "" if len(reports) == 1 else f" (worst of {len(reports)} frames; per frame in accuracy.md)"
    click.echo(f"int8 accuracy against the float original{scope}:")
    for o in summary.outputs:
        click.echo(f"  {o.name}: SNR {o.snr_db:.1f} dB, cosine {o.cosine:.5f}, max abs error {o.max_abs:.4g}")
    if summary.detections:
        pooled = "" if len(reports) == 1 else ", pooled over the frames"
        click.echo(f"  detections{pooled}: {summary.detections.summary()}")


@main.command("deploy")
@click.argument("build", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("-o", "--output", "out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="the bundle folder to write (then copy it to the board)")
@click.option("--with-model", is_flag=True, help="include the original ONNX model (accuracy checks on the board)")
@click.option("--force", is_flag=True, help="write into a folder that is not empty")
@_one_line_errors
def deploy_cmd(build: Path, out: Path, with_model: bool, force: bool) -> None:
    """Write a self-contained folder that runs BUILD on the board: `./run.sh` there = fpga-run run --backend pynq."""
    from fpga_runtime.deploy import deploy
    manifest = deploy(build, out, with_model, force)
    click.echo(f"bundle: {out} ({len(manifest['files'])} files with their SHA-256, the runtime's included; overlay "
               f"{manifest['overlay']})")
    click.echo(f"on the board: pip3 install -r requirements-board.txt && ./run.sh   (see {out / 'README.md'})")


@main.command("check")
@click.argument("build", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--backends", default=",".join(DEFAULT_RUNGS), show_default=True,
              help=f"comma-separated, from: {', '.join(RUNGS)}")
@click.option("--frames", type=COUNT, default=1, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--compute-units", type=COUNT, default=None, help="[default: the build's]")
@click.option("--model", "model_opt", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="the float original to compare with [default: the one plan.json records]; used only when its "
                   "SHA-256 is the one partition recorded")
@_one_line_errors
def check_cmd(build: Path, backends: str, frames: int, seed: int, compute_units: int | None,
              model_opt: Path | None) -> None:
    """The verification ladder: the same frames through every backend and onnxruntime float; exit 0 only where
    every integer backend is bit-exact with the reference."""
    from fpga_runtime.checking.ladder import check, table
    plan = read_plan(build)
    feeds = [random_frame(plan, seed + i) for i in range(frames)]
    model, no_model = original_model(plan, model_opt)
    if model_opt is not None and model is None:
        raise click.BadParameter(no_model, param_hint="--model")
    rungs, float_row, agree = check(build, [b.strip() for b in backends.split(",") if b.strip()], feeds,
                                    model, compute_units,
                                    progress=lambda m: click.echo(m, err=True))
    click.echo(table(rungs, float_row))
    if float_row is None:
        click.echo(f"(no float row: {no_model})")
    click.echo("all integer backends agree" if agree else "the integer backends DISAGREE (or one did not run)")
    sys.exit(0 if agree else 1)


@main.command("predict")
@click.argument("build", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--board", type=_board_choice(), default=None, help="[default: the build's]")
@click.option("--compute-units", "units", type=COUNT, multiple=True,
              help="engine instances; repeat for a sweep [default: the build's]")
@click.option("--cpu-workers", type=COUNT, default=CPU_WORKERS, show_default=True)
@click.option("--frames", type=COUNT, default=1, show_default=True)
@click.option("--in-flight", type=COUNT, default=None,
              help=f"[default: compute units + 1, at least {IN_FLIGHT}]")
@click.option("--trace", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Chrome trace of the last prediction")
@click.option("--gantt", type=click.Path(dir_okay=False, path_type=Path), default=None)
@_one_line_errors
def predict_cmd(build: Path, board: str | None, units: tuple[int, ...], cpu_workers: int, frames: int,
                in_flight: int | None, trace: Path | None, gantt: Path | None) -> None:
    """Predict latency and throughput of BUILD on a board in virtual time (durations from the cycle model and
    timing.py): the steady rate of a long stream (report.md's frames/s) and the makespan of --frames frames.
    The defaults are those of `fpga-run run`."""
    predictions = [predict(build, n, board, cpu_workers, frames, in_flight) for n in (units or (None,))]
    header = ["board", "CUs", "steady frames/s", "frames", "makespan ms", "critical path ms", "lower bound ms",
              "gap %", "sequential ms", "speedup", "frames/s of these frames", "limited by", "utilisation"]
    click.echo("| " + " | ".join(header) + " |")
    click.echo("|" + "|".join("---" for _ in header) + "|")
    for p in predictions:
        util = ", ".join(f"{k} {v:.0%}" for k, v in p.utilisation.items())
        click.echo(f"| {p.board} | {p.compute_units} | {p.steady_fps:.1f} | {frames} | {p.makespan_s * 1e3:.3f} | "
                   f"{p.critical_path_s * 1e3:.3f} | {p.lower_bound_s * 1e3:.3f} | {p.gap_to_bound * 100:.1f} | "
                   f"{p.sequential_s * 1e3:.3f} | {p.speedup:.2f} | {p.fps:.1f} | "
                   f"{'CPU stages' if p.limited_by == 'cpu' else 'FPGA'} | {util} |")
    runs = sorted({steady_frames(p.compute_units) for p in predictions})
    said = ", ".join(f"{b - a} frames between the ends of a {a}- and a {b}-frame run" for a, b in runs)
    click.echo(f"steady frames/s: a long stream ({said}, ramp-up and drain left out), the figure "
               "report.md gives as frames/s (fpga-run); the makespan columns are those of --frames "
               f"{frames}{' (one frame: its latency)' if frames == 1 else ''}. Engine clock "
               f"{', '.join(sorted({f'{p.clock_mhz:g} MHz on {p.board}' for p in predictions}))} (the build's "
               "clock on its own board; on another, the lower of that board's default fabric clock and the engine's "
               "estimated Fmax there, as plan.json's board_clocks records it)")
    engine_dir = build / ENGINE_DIR
    if (engine_dir / "engine.json").exists():
        image = EngineImage.load(engine_dir)
        wino = [d for *_, d in image.flagged_layers(image.load_constants(engine_dir), Flag.WINOGRAD)
                if window_path.winograd_problem(d, image.config)]
        if wino:
            click.echo(f"{len(wino)} Winograd layer(s) (partition --winograd) the RTL engine cannot take (no window "
                       "path): their durations are the cycle model's projection, not checked against Verilator")
    last = predictions[-1]
    if trace:
        write_chrome_trace(last.spans, trace, f"{build.name} predicted on {last.board}")
    if gantt:
        write_gantt(last.spans, gantt, f"{build.name} predicted on {last.board}, {last.compute_units} CU")


@main.command("measure-cpu")
@click.argument("build", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--board", type=_board_choice(), default=None,
              help="the board this machine is [default: the build's]")
@click.option("--repeats", type=COUNT, default=20, show_default=True)
@_one_line_errors
def measure_cpu_cmd(build: Path, board: str | None, repeats: int) -> None:
    """Time onnxruntime's ops on this machine (run it on the board; it needs the onnx package there too) and
    write BUILD/cpu_costs.json, which `predict` then uses for the CPU subgraphs on that board instead of the
    shipped table scaled to it."""
    plan = read_plan(build)
    table = cpu_costs.measure(repeats=repeats, board=board or plan.board, progress=click.echo)
    (build / cpu_costs.TABLE_NAME).write_text(json.dumps(table.to_json(), indent=1) + "\n")
    cpu = [s for s in plan.subgraphs if s.device == "cpu" and "ops" in (s.estimate or {})]
    b = board_by_name(board or plan.board)
    shipped = cpu_costs.load()
    click.echo(f"{build / cpu_costs.TABLE_NAME}: {table.machine}, element-wise {table.gbps:.1f} GB/s")
    click.echo("| CPU subgraph | measured here ms | shipped table scaled to the board ms |")
    click.echo("|---|---|---|")
    for sg in cpu:
        click.echo(f"| {sg.name} | {table.subgraph_s(sg.estimate['ops'], b) * 1e3:.3f} | "
                   f"{shipped.subgraph_s(sg.estimate['ops'], b) * 1e3:.3f} |")


main.add_command(serve_cmd)

if __name__ == "__main__":
    main()
