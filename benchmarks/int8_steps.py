"""What each int8 step buys on real exports: the worst int8 cosine (outputs a cosine judges) and the detections'
F1 against float on the held-out frames (every frame of `frames/<name>/eval`, pooled), for plain int8, with bias
correction (the default), and with `--auto-fallback` to a cosine and an F1 target (the layers it moved to the CPU
and what they cost).

    python benchmarks/int8_steps.py [CORPUS_DIR] [--only NAME ...] [--min-cosine 0.99] [--min-f1 0.95]
        [--fallback-budget 0.05]

CORPUS_DIR (default build/corpus) is what scripts/export_corpus.sh writes. Prints a Markdown table.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.partition_quality import _corpus  # noqa: E402
from partitioner.build import PartitionConfig, run_partition  # noqa: E402
from partitioner.mixed_precision import meet_accuracy  # noqa: E402


def _figures(result) -> tuple[str, str]:
    acc = result.accuracy
    if acc is None:                     # every layer moved: nothing left in int8
        return "float", "float"
    cos = [o.cosine for o in acc.outputs if not o.ranked]
    f1 = acc.detections.f1 if acc.detections is not None else None
    return (f"{min(cos):.5f}" if cos else "n/a"), ("n/a" if f1 is None else f"{f1:.3f}")


def _rate(result) -> str:
    return "n/a" if result.modelled_rate is None else f"{result.modelled_rate:.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", type=Path, nargs="?", default=Path("build/corpus"))
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--min-cosine", type=float, default=0.99)
    ap.add_argument("--min-f1", type=float, default=0.95)
    ap.add_argument("--fallback-budget", type=float, default=0.05)
    args = ap.parse_args()
    print("| model | int8 cosine / F1 | + bias correction | --auto-fallback to cosine "
          f"{args.min_cosine}, F1 {args.min_f1} (budget {args.fallback_budget:.0%} of MACs) | layers moved | "
          "conv MACs on FPGA | modelled frames/s (ZCU104) |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, path, _, calib, feeds in _corpus(args.corpus, args.only):
            print(f"{name} ...", file=sys.stderr, flush=True)
            held_out = calib.parent / "eval" if calib is not None and (calib.parent / "eval").is_dir() else None
            cfg = PartitionConfig(model=path, out_dir=Path(tmp) / name, picture=False, calibrate_dir=calib,
                                  inputs=feeds or {}, accuracy_dir=held_out)
            plain = run_partition(replace(cfg, bias_correction=False), lambda _: None)
            fallback = meet_accuracy(cfg, args.min_cosine, args.min_f1, budget=args.fallback_budget)
            corrected = fallback.first or fallback.result
            moved = (f"{len(fallback.kept)}: {', '.join(fallback.kept[:4])}{', ...' if len(fallback.kept) > 4 else ''}"
                     if fallback.kept else "none needed" if fallback.first is None else "none within the budget")
            print(f"| {name} | {' / '.join(_figures(plain))} | {' / '.join(_figures(corrected))} | "
                  f"{' / '.join(_figures(fallback.result))} | {moved} | {corrected.fpga_mac_share:.1%} -> "
                  f"{fallback.result.fpga_mac_share:.1%} | {_rate(corrected)} -> {_rate(fallback.result)} |",
                  flush=True)


if __name__ == "__main__":
    main()
