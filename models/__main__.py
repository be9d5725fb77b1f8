"""`python -m models build NAME -o FILE [--size N] [--batch B] [--seed S]` and `python -m models list`."""
from __future__ import annotations

import sys

import click

from . import ZOO, build_to_file


@click.group()
def main() -> None:
    """Build the zoo's models as ONNX files with seeded weights."""


@main.command("list")
def list_models() -> None:
    for name, (_, size) in ZOO.items():
        click.echo(f"{name:18s} default size {size}")


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
