"""What `fpga-run run` takes in (frames from --input, --image/--source or seeded random data; --names) and the
pictures it writes (detections drawn and said, one line per picture)."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import click
import numpy as np

from fpga_runtime.checking.detections import MAP_THRESHOLD, probability_map
from fpga_runtime.checking.frames import random_frame
from fpga_runtime.checking.images import PictureDetections, draw_detections, draw_map, write_detections
from fpga_runtime.class_names import NamesError, read_names
from fpga_runtime.plan import check_feeds
from fpga_runtime.preprocess import PICTURE_SUFFIXES, ImageError, load_picture, picture_input
from fpga_runtime.run.session import Session


class RunFrames:
    """The frames of a run: from --input, --image or seeded random data."""

    def __init__(self, session: Session, inputs: tuple[str, ...], images: tuple[str, ...], count: int, seed: int,
                 resize: str):
        plan = session.plan
        self.fits: list = []
        self.pictures: list = []
        self.input_size = (0, 0)           # width, height of the model's picture input
        self.note = ""
        given = {}
        for item in inputs:
            name, sep, path = item.partition("=")
            if not sep or not name:
                raise click.BadParameter(f"{item!r}: expected NAME=FILE.npy", param_hint="--input")
            if name not in session.input_names:
                raise click.BadParameter(f"{name!r} is not an input of the model; its inputs are "
                                         f"{session.input_names}", param_hint="--input")
            try:
                given[name] = np.load(path, allow_pickle=False)
            except (OSError, ValueError) as exc:
                raise click.BadParameter(f"{path}: cannot read a .npy array ({exc})", param_hint="--input") from None
        if images:
            if given:
                raise click.UsageError("give --input or --image, not both")
            try:
                spec, pre = picture_input(plan, resize)
            except ImageError as exc:
                raise click.UsageError(f"--image: {exc}") from None
            in_h, in_w = pre.image_size(spec.shape)
            self.input_size = (in_w, in_h)
            self.feeds = []
            for path in images:
                frame, fit, picture = load_picture(path, spec, pre)
                self.feeds.append({spec.name: frame})
                self.fits.append(fit)
                self.pictures.append(picture)
                click.echo(f"{path}: {fit.describe(in_w, in_h)}", err=True)
            self.synthetic = False
            return
        if given and len(given) == len(plan.inputs):
            check_feeds(plan, given)
            self.feeds, self.synthetic = [given], False
            if count > 1:
                self.note = "--frames applies to random frames only: one frame from --input"
            return
        self.feeds = [random_frame(plan, seed + i, given) for i in range(count)]
        self.synthetic = True


def expand_sources(sources: tuple[str, ...]) -> tuple[str, ...]:
    """Files as given; a folder's pictures and a glob's matches in name order."""
    import glob
    out: list[str] = []
    for source in sources:
        path = Path(source)
        if path.is_dir():
            found = sorted(str(p) for p in path.iterdir() if p.suffix.lower() in PICTURE_SUFFIXES)
        elif any(ch in source for ch in "*?["):
            found = sorted(p for p in glob.glob(source) if Path(p).suffix.lower() in PICTURE_SUFFIXES)
        else:
            found = [source]
        if not found:
            raise click.BadParameter(f"{source}: no pictures ({', '.join(sorted(PICTURE_SUFFIXES))})",
                                     param_hint="--image/--source")
        out += found
    return tuple(out)


def names_option(spec: str | None) -> list[str] | None:
    if spec is None:
        return None
    try:
        return read_names(spec)
    except NamesError as exc:
        raise click.BadParameter(str(exc), param_hint="--names") from None


def write_pictures(given: RunFrames, outputs: list[dict], images: tuple[str, ...], out_dir: Path,
                   class_names: list[str] | None, thresholds: tuple[float, float, int], spans) -> None:
    """Each picture's detections drawn with class names, written as JSON and said in one line ("3 person,
    1 bus, 41 ms"): NMS outputs (the zoo's, torchvision's) as they are, at least --conf where they carry scores;
    a raw YOLO head decoded as ultralytics' predict does."""
    reader = PictureDetections(outputs[0])
    if not reader.found:
        pmap = probability_map(outputs[0])
        if pmap is not None:
            _write_maps(given, outputs, images, out_dir, pmap, spans)
        return
    for k, (out, fit, picture, path) in enumerate(zip(outputs, given.fits, given.pictures, images)):
        found = reader.of(out, fit, class_names, *thresholds)
        stem = Path(path).stem
        write_detections(found, fit, out_dir / f"frame{k}_{stem}_detections.json")
        drawn = draw_detections(picture, found, out_dir / f"frame{k}_{stem}_detections.png")
        counts = Counter(d["name"] for d in found)
        said = ", ".join(f"{n} {name}" for name, n in counts.most_common()) or "no detections"
        click.echo(f"{path}: {said}{_took(spans, k)} -> {drawn}")


def _write_maps(given: RunFrames, outputs: list[dict], images: tuple[str, ...], out_dir: Path, pmap: str,
                spans) -> None:
    """A probability map (text, segmentation) tinted over each picture where it passes DBNet's threshold."""
    for k, (out, fit, picture, path) in enumerate(zip(outputs, given.fits, given.pictures, images)):
        drawn, share = draw_map(picture, out[pmap][0, 0], fit, given.input_size, MAP_THRESHOLD,
                                out_dir / f"frame{k}_{Path(path).stem}_{pmap.replace('/', '_')}.png")
        click.echo(f"{path}: {share:.1%} of the picture above {MAP_THRESHOLD} in {pmap!r}{_took(spans, k)} "
                   f"-> {drawn}")


def _took(spans, k: int) -> str:
    mine = [s for s in spans if s.frame == k]
    return f", {(max(s.end_s for s in mine) - min(s.start_s for s in mine)) * 1e3:.0f} ms" if mine else ""
