"""`python -m models build NAME -o FILE [--size N] [--batch B] [--seed S]` and `python -m models list`."""
from __future__ import annotations

import sys

import click
from onnx import helper

from models import ZOO, build, build_to_file


@click.group()
def main() -> None:
    """Build the zoo's models as ONNX files with seeded weights."""


@main.command("list")
def list_models() -> None:
    """Each model's input, parameters and conv GMAC at its default size (counted by building it, a few seconds)."""
    click.echo(f"{'model':18s}  {'input':34s}  {'parameters':>11s}  {'GMAC':>8s}")
    for name in ZOO:
        model, b = build(name)
        t = model.graph.input[0]
        dims = "x".join(str(d.dim_value) for d in t.type.tensor_type.shape.dim)
        dtype = helper.tensor_dtype_to_np_dtype(t.type.tensor_type.elem_type).name
        click.echo(f"{name:18s}  {f'{t.name} {dims} {dtype}':34s}  {b.params:>11,}  {b.conv_macs / 1e9:>8.4f}")


@main.command("build")
@click.argument("name", type=click.Choice(list(ZOO)))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="ONNX file to write")
@click.option("--size", type=int, default=None, help="input height and width (default: the model's own)")
@click.option("--batch", type=int, default=1, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
def build_cmd(name: str, output: str, size: int | None, batch: int, seed: int) -> None:
    try:
        b = build_to_file(name, output, size, batch, seed)
    except ValueError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    click.echo(f"{name}: {b.params:,} parameters, {b.conv_macs / 1e9:.2f} GMAC in conv layers -> {output}")


if __name__ == "__main__":
    main()
