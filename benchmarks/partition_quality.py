"""How well `partition` does on real exports: FPGA fragments, conv MACs on the FPGA, CPU compute nodes by
reason, int8 accuracy against float onnxruntime beside onnxruntime's own `quantize_static`, and time.

    python benchmarks/partition_quality.py [CORPUS_DIR] [--zoo] [--board zcu104] [--only NAME ...]
                                           [--method max|percentile|mse] [--no-ort] [--winograd off,auto,all]

CORPUS_DIR (default build/corpus) is what `scripts/export_corpus.sh` writes: ONNX exports of ultralytics,
torchvision and PaddleOCR-style detectors with calibration and held-out frames. `--zoo` adds this project's
own zoo models. Each model is partitioned with its calibration frames and `--verify`; the held-out frame
measures int8 against float (a zoo model, which has no frames of its own: a seeded random frame). `--winograd`
partitions each model once per mode given (`partition --winograd`), a row each. Prints Markdown tables.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import onnx  # noqa: E402
import onnx.version_converter  # noqa: E402
import onnxruntime as ort  # noqa: E402
from _zoo import SIZES  # noqa: E402

import models  # noqa: E402
from fpga_runtime import Session  # noqa: E402
from fpga_runtime.checking.accuracy import compare, output_accuracy  # noqa: E402
from fpga_runtime.checking.frames import original_outputs, random_frame  # noqa: E402
from partitioner.build import PartitionConfig, run_partition  # noqa: E402
from partitioner.errors import ModelError  # noqa: E402


def _segments(plan) -> tuple[int, int]:
    """(sequential FPGA segments: the FPGA subgraphs on the longest dependency chain, parallel groups)."""
    groups = {s.parallel_group for s in plan.subgraphs if s.device == "fpga" and s.parallel_group is not None}
    return len(plan.fpga_chain()), len(groups)


def _reasons(plan) -> Counter:
    out: Counter = Counter()
    for f in plan.fallbacks:
        reason = f["reason"].split(":")[0] if not f["reason"].startswith("not worth") else "not worth offloading"
        out[f"{f['op'].split()[0]}: {reason}"[:70]] += 1
    return out


class _Reader:
    def __init__(self, name: str, frames: list[np.ndarray]):
        self.it = iter({name: f} for f in frames)

    def get_next(self):
        return next(self.it, None)


def ort_qdq_cosines(model: Path, input_name: str, calibrate: list[np.ndarray], feeds: dict, folder: Path):
    """Cosine per float output, and detections agreement, of onnxruntime's quantize_static (QDQ, per-channel,
    symmetric, MinMax) on the same
    frames, run with its graph optimisations off (the QDQ semantics, not a CPU-specific integer kernel)."""
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process
    logging.getLogger().setLevel(logging.ERROR)
    pre, qdq = folder / "pre.onnx", folder / "qdq.onnx"
    loaded = onnx.load(str(model))
    opset = next(o.version for o in loaded.opset_import if o.domain in ("", "ai.onnx"))
    if opset < 13:                                # per-channel DequantizeLinear (axis) needs opset 13
        model = folder / "opset13.onnx"
        onnx.save(onnx.version_converter.convert_version(loaded, 13), str(model))
    try:
        quant_pre_process(str(model), str(pre), skip_symbolic_shape=True)
    except Exception:                             # noqa: BLE001 - pre-processing is optional
        pre = model
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    for source in dict.fromkeys([pre, model]):   # onnxruntime's pre-processing sometimes breaks a model
        quantize_static(str(source), str(qdq), _Reader(input_name, calibrate), quant_format=QuantFormat.QDQ,
                        activation_type=QuantType.QInt8, weight_type=QuantType.QInt8, per_channel=True,
                        extra_options={"ActivationSymmetric": True, "WeightSymmetric": True})
        try:
            sess = ort.InferenceSession(str(qdq), options, providers=["CPUExecutionProvider"])
            break
        except Exception:                         # noqa: BLE001 - try the model as exported
            if source == model:
                raise
    got = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    want = original_outputs(model, feeds)
    cosines = {k: output_accuracy(k, v, got[k]).cosine for k, v in want.items()
               if v.dtype.kind == "f" and v.shape == got[k].shape}
    return cosines, compare(want, got).detections


def measure(name: str, model: Path, input_name: str, calibrate_dir: Path | None, eval_frame: dict | None,
            board: str, folder: Path, method: str = "max", with_ort: bool = True, winograd: str = "off") -> dict:
    row: dict = {"model": name if winograd == "off" else f"{name} (winograd {winograd})"}
    t0 = time.perf_counter()
    try:
        result = run_partition(PartitionConfig(model=model, out_dir=folder / "build", board=board, verify=True,
                                               picture=False, calibrate_dir=calibrate_dir,
                                               inputs=eval_frame or {}, calibration_method=method,
                                               winograd=winograd))
    except ModelError as exc:
        row.update(status=f"dies: {exc.message()[:80]}")
        return row
    row["seconds"] = time.perf_counter() - t0
    plan = result.plan
    fpga_macs = sum((s.estimate or {}).get("macs", 0) for s in plan.subgraphs if s.device == "fpga")
    all_macs = sum((s.estimate or {}).get("macs", 0) for s in plan.subgraphs)
    segments, groups = _segments(plan)
    row.update(status="verified" if result.verified else "VERIFY FAILED", segments=segments, groups=groups,
               fpga_subgraphs=sum(s.device == "fpga" for s in plan.subgraphs),
               mac_share=fpga_macs / all_macs if all_macs else 0.0, reasons=_reasons(plan),
               gmac=all_macs / 1e9)
    feeds = eval_frame or random_frame(plan, 11)
    if result.accuracy is not None:
        with Session(folder / "build") as s:
            got = dict(zip(s.output_names, s.run(None, feeds)))
        want = original_outputs(model, feeds)
        row["int8"] = {k: output_accuracy(k, v, got[k]) for k, v in want.items()
                       if v.dtype.kind == "f" and v.shape == got[k].shape}
        row["agreement"] = compare(want, got).detections
        if calibrate_dir is not None and with_ort:
            frames = [np.load(p) for p in sorted(calibrate_dir.glob("*.npy"))]
            try:
                row["ort"], row["ort_agreement"] = ort_qdq_cosines(model, input_name, frames, feeds, folder)
            except Exception as exc:          # noqa: BLE001 - report, do not stop the table
                row["ort_error"] = f"{type(exc).__name__}: {str(exc)[:60]}"
    return row


def _corpus(folder: Path, only: list[str] | None) -> list[tuple[str, Path, str, Path | None, dict | None]]:
    record = json.loads((folder / "corpus.json").read_text()) if (folder / "corpus.json").exists() else {}
    out = []
    for name, info in record.items():
        if only and name not in only:
            continue
        frames = folder / "frames" / name
        held_out = sorted((frames / "eval").glob("*.npy"))
        out.append((name, folder / info["file"], info["input"], frames / "calibrate",
                    {info["input"]: np.load(held_out[0])} if held_out else None))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", type=Path, nargs="?", default=Path("build/corpus"))
    ap.add_argument("--zoo", action="store_true", help="add the zoo's detection models (random calibration)")
    ap.add_argument("--zoo-models", default="yolov3-tiny,ssd-mobilenet-v1", help="which, with --zoo")
    ap.add_argument("--board", default="zcu104")
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--method", default="mse", choices=["max", "percentile", "mse"],
                    help="int8 calibration method (partition --calibration-method)")
    ap.add_argument("--no-ort", action="store_true", help="skip onnxruntime's quantize_static column")
    ap.add_argument("--winograd", default="off", help="partition --winograd modes, comma-separated (off,auto,all)")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        cases = _corpus(args.corpus, args.only)
        if args.zoo:
            for name in args.zoo_models.split(","):
                size = SIZES[name]
                path = Path(tmp) / f"{name}.onnx"
                models.build_to_file(name, path, size)
                cases.append((f"zoo {name}", path, "images", None, None))
        for name, path, input_name, calib, feeds in cases:
            for mode in args.winograd.split(","):
                print(f"{name} (winograd {mode}) ...", file=sys.stderr, flush=True)
                work = Path(tmp) / f"{name.replace(' ', '_')}_{mode}"
                work.mkdir()
                rows.append(measure(name, path, input_name, calib, feeds, args.board, work, args.method,
                                    not args.no_ort, mode))
    print("| model | status | GMAC | conv MACs on FPGA | FPGA subgraphs | sequential segments | parallel groups | "
          "partition s |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "segments" not in r:
            print(f"| {r['model']} | {r['status']} | | | | | | |")
            continue
        print(f"| {r['model']} | {r['status']} | {r['gmac']:.2f} | {r['mac_share']:.1%} | {r['fpga_subgraphs']} | "
              f"{r['segments']} | {r['groups']} | {r['seconds']:.1f} |")
    print()
    print("| model | output | int8 SNR dB | int8 cosine | onnxruntime QDQ cosine | CPU compute nodes by reason |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        reasons = "; ".join(f"{k} x{v}" for k, v in (r.get("reasons") or Counter()).most_common(6))
        for k, acc in (r.get("int8") or {}).items():
            ort_cos = r.get("ort", {}).get(k)
            print(f"| {r['model']} | {k} | {acc.snr_db:.1f} | {acc.cosine:.4f} | "
                  f"{'' if ort_cos is None else f'{ort_cos:.4f}'}{r.get('ort_error', '')} | {reasons} |")
            reasons = ""
        if not r.get("int8") and "segments" in r:
            print(f"| {r['model']} | | | | | {reasons} |")
    print()
    print("Detections of int8 against float on the held-out frame (`fpga_runtime/checking/detections.py`: boxes "
          "matched at IoU >= 0.5 with the same class, those scoring >= 0.25 where float has any, else the best 100 "
          "after class-wise NMS; probability maps: pixels above 0.3):")
    print()
    print("| model | compared | int8 precision | int8 recall | int8 F1 | onnxruntime QDQ precision | "
          "onnxruntime QDQ recall | onnxruntime QDQ F1 |")
    print("|---|---|---|---|---|---|---|---|")
    fmt = lambda v: "n/a" if v is None else f"{v:.3f}"                       # noqa: E731
    for r in rows:
        a, o = r.get("agreement"), r.get("ort_agreement")
        if a is None:
            continue
        print(f"| {r['model']} | {a.float_detections} float: {a.unit} | {fmt(a.precision)} | {fmt(a.recall)} | "
              f"{fmt(a.f1)} | {fmt(o.precision if o else None)} | {fmt(o.recall if o else None)} | "
              f"{fmt(o.f1 if o else None)} |")


if __name__ == "__main__":
    main()
