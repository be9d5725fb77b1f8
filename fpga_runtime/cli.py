"""`fpga-run`: run a build folder on a backend, or predict its latency and throughput on a board."""
from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path

import click
import numpy as np

from .accuracy import compare
from .backends import BACKENDS, BackendError
from .boards import BOARDS
from .frames import original_outputs, random_frame
from .plan import PlanError
from .predict import predict
from .scheduler import Scheduler, TaskError
from .session import Session
from .trace import write_chrome_trace, write_gantt


def _load_image(path: str, shape: list[int]) -> np.ndarray:
    try:
        from PIL import Image
    except ImportError:
        raise click.UsageError("--image needs Pillow (pip install pillow)") from None
    img = Image.open(path).convert("RGB").resize((shape[2], shape[1]))
    return np.broadcast_to(np.asarray(img, np.uint8)[None], shape).copy()


def _frames(session: Session, inputs: tuple[str, ...], images: tuple[str, ...], count: int, seed: int):
    plan = session.plan
    given = {}
    for item in inputs:
        name, sep, path = item.partition("=")
        if not sep:
            raise click.BadParameter(f"{item!r}: expected NAME=FILE.npy")
        given[name] = np.load(path, allow_pickle=False)
    if images:
        if len(plan.inputs) != 1 or plan.inputs[0].dtype != "uint8":
            raise click.UsageError("--image feeds models whose single input is a uint8 [N, H, W, 3] frame")
        spec = plan.inputs[0]
        return [{spec.name: _load_image(p, spec.shape)} for p in images], False
    if given and len(given) == len(plan.inputs):
        return [given], False
    return [random_frame(plan, seed + i, given) for i in range(count)], True


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """Run partitioned models (`fpga-run run`) or predict them on a board (`fpga-run predict`)."""


@main.command()
@click.argument("build", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--backend", type=click.Choice(list(BACKENDS)), default="reference", show_default=True)
@click.option("--input", "inputs", multiple=True, help="NAME=FILE.npy (one frame)")
@click.option("--image", "images", multiple=True, help="image file, one frame each (uint8 NHWC models)")
@click.option("--frames", type=int, default=1, show_default=True, help="seeded random frames without inputs")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="where outputs (.npy), accuracy and traces go [default: BUILD/run]")
@click.option("--compute-units", type=int, default=None, help="engine instances to use [default: the build's]")
@click.option("--cpu-workers", type=int, default=2, show_default=True)
@click.option("--in-flight", type=int, default=2, show_default=True, help="frames pipelined at once")
@click.option("--sequential", is_flag=True, help="one subgraph at a time, no pipelining")
@click.option("--no-accuracy", is_flag=True, help="skip the comparison with the float original")
@click.option("--debug", is_flag=True)
def run(build: Path, backend: str, inputs, images, frames: int, seed: int, out_dir: Path | None,
        compute_units: int | None, cpu_workers: int, in_flight: int, sequential: bool, no_accuracy: bool,
        debug: bool) -> None:
    """Run BUILD (a `partition` output folder) on a backend."""
    out_dir = out_dir or build / "run"
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        with Session(build, backend, compute_units, slots=1 if sequential else in_flight) as session:
            feeds, synthetic = _frames(session, inputs, images, frames, seed)
            if synthetic:
                click.echo(f"no inputs given: {len(feeds)} seeded random frame(s)", err=True)
            if sequential:
                outputs = [dict(zip(session.output_names, session.run(None, f))) for f in feeds]
                spans = []
            else:
                scheduler = Scheduler(session, cpu_workers, compute_units, in_flight)
                outputs = scheduler.run(feeds)
                spans = scheduler.stats.spans
                click.echo(f"{len(feeds)} frame(s) in {scheduler.stats.wall_s:.3f} s "
                           f"({len(feeds) / scheduler.stats.wall_s:.2f} frames/s) on {backend}")
            model = Path(session.plan.model["path"])
    except (PlanError, BackendError, TaskError, ValueError) as exc:
        if debug:
            traceback.print_exc()
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    for k, out in enumerate(outputs):
        for name, value in out.items():
            np.save(out_dir / f"frame{k}_{name.replace('/', '_')}.npy", value)
    if spans:
        write_chrome_trace(spans, out_dir / "trace.json")
        write_gantt(spans, out_dir / "gantt.png", f"{build.name} on {backend}")
        click.echo(f"trace: {out_dir / 'trace.json'}  gantt: {out_dir / 'gantt.png'}")
    if not no_accuracy and model.is_file():
        reports = [compare(original_outputs(model, f), o) for f, o in zip(feeds, outputs)]
        (out_dir / "accuracy.json").write_text(json.dumps([r.as_dict() for r in reports], indent=1) + "\n")
        lines = [f"# int8 accuracy of {build.name} on {backend}", ""]
        for k, r in enumerate(reports):
            lines += [f"## frame {k}", ""] + r.markdown() + [""]
        (out_dir / "accuracy.md").write_text("\n".join(lines))
        for o in reports[0].outputs:
            click.echo(f"{o.name}: SNR {o.snr_db:.1f} dB, cosine {o.cosine:.5f}, max abs error {o.max_abs:.4g}")
        if reports[0].detections:
            d = reports[0].detections
            click.echo(f"detections: precision {d.precision:.3f}, recall {d.recall:.3f}")
    click.echo(f"outputs: {out_dir}")


@main.command("predict")
@click.argument("build", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--board", type=click.Choice(list(BOARDS)), default=None, help="[default: the build's]")
@click.option("--compute-units", "units", type=int, multiple=True, default=(1, 2, 3), show_default=True)
@click.option("--cpu-workers", type=int, default=1, show_default=True)
@click.option("--frames", type=int, default=1, show_default=True)
@click.option("--in-flight", type=int, default=2, show_default=True)
@click.option("--trace", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Chrome trace of the last prediction")
@click.option("--gantt", type=click.Path(dir_okay=False, path_type=Path), default=None)
def predict_cmd(build: Path, board: str | None, units: tuple[int, ...], cpu_workers: int, frames: int,
                in_flight: int, trace: Path | None, gantt: Path | None) -> None:
    """Predict latency and throughput of BUILD on a board in virtual time (durations from the cycle model and timing.py)."""
    header = ["board", "CUs", "frames", "makespan ms", "critical path ms", "lower bound ms", "gap %",
              "sequential ms", "speedup", "fps", "utilisation"]
    click.echo("| " + " | ".join(header) + " |")
    click.echo("|" + "|".join("---" for _ in header) + "|")
    p = None
    for n in units:
        p = predict(build, n, board, cpu_workers, frames, in_flight)
        util = ", ".join(f"{k} {v:.0%}" for k, v in p.utilisation.items())
        click.echo(f"| {p.board} | {n} | {frames} | {p.makespan_s * 1e3:.3f} | {p.critical_path_s * 1e3:.3f} | "
                   f"{p.lower_bound_s * 1e3:.3f} | {p.gap_to_bound * 100:.1f} | {p.sequential_s * 1e3:.3f} | "
                   f"{p.speedup:.2f} | {p.fps:.1f} | {util} |")
    if p is not None and trace:
        write_chrome_trace(p.spans, trace, f"{build.name} predicted on {p.board}")
    if p is not None and gantt:
        write_gantt(p.spans, gantt, f"{build.name} predicted on {p.board}, {p.compute_units} CU")


if __name__ == "__main__":
    main()
