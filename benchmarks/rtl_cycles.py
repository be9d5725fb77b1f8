"""Clock cycles of the RTL engine under Verilator, layer by layer, against the cycle model.

For every distinct layer shape of each build (a `partition` output folder), the layer runs alone on the
build's own RTL with the build's weights and the board's memory timing. Prints per layer: RTL cycles, modelled
cycles and their error, MAC utilisation of the array (useful MACs / (cycles x PE rows x lanes)), the share of
cycles the array was busy, stall shares, DDR bytes against `cycle_model.layer_bytes`; then per model (each
shape weighted by how often it occurs) and the simulator's speed.

    python benchmarks/rtl_cycles.py build/yolov3-tiny build/yolov3 [--max-layer-cycles 5e7]
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fpga_runtime.abi import Flag, Op  # noqa: E402
from fpga_runtime.backends.verilator import board_timing  # noqa: E402
from fpga_runtime.boards import port_bytes  # noqa: E402
from fpga_runtime.cycle_model import LayerShape, layer_bytes, layer_cycles  # noqa: E402
from fpga_runtime.engine_image import ENGINE_DIR, EngineImage  # noqa: E402
from fpga_runtime.prediction.profile import layer_macs, op_name  # noqa: E402
from fpga_runtime.rtl_sim.engine import LayerCounters, RtlEngine  # noqa: E402
from fpga_runtime.rtl_sim.single_layer import layer_key, program_descriptors, standalone  # noqa: E402


def describe(d) -> str:
    if d.op != Op.CONV:
        return f"{op_name(d)} {d.out_h}x{d.out_w}x{d.out_c}"
    kind = "dw" if d.flags & Flag.DEPTHWISE else "conv"
    extra = "+res" if d.flags & Flag.RESIDUAL else ""
    extra += "+pool" if d.flags & Flag.POOL else ""
    extra += " interleaved" if d.out_interleaved else ""
    return f"{kind}{d.kh}x{d.kw}/{d.stride_h} {d.in_h}x{d.in_w}x{d.in_c}->{d.out_c}{extra}"


def measure(build: Path, max_layer_cycles: float) -> dict:
    folder = build / ENGINE_DIR
    image = EngineImage.load(folder)
    const = image.load_constants(folder)
    cfg = image.config
    counts: Counter = Counter()
    first = {}
    for p in image.programs.values():
        for d in program_descriptors(const, p.addr, p.layers):
            key = layer_key(d)
            counts[key] += 1
            first.setdefault(key, d)
    engine = RtlEngine(folder / "rtl", board_timing(image, 1))
    rows, sim_cycles, sim_seconds = [], 0, 0.0
    for key, d in sorted(first.items(), key=lambda kv: -layer_macs(kv[1])):
        model = layer_cycles(LayerShape.of(d, cfg), cfg, port_bytes(image.board))
        if model > max_layer_cycles:
            print(f"  skipped {describe(d)}: ~{model:,} cycles", file=sys.stderr)
            continue
        act, full, addr = standalone(d, const)
        t0 = time.perf_counter()
        result = engine.run(act, full, addr, 1, describe(d))
        sim_seconds += time.perf_counter() - t0
        sim_cycles += result.cycles
        c = result.counters
        rows.append(dict(layer=describe(d), count=counts[key], cycles=result.cycles, model=model,
                         util=layer_macs(d) / (result.cycles * cfg.array_macs),
                         busy=c["mac_busy"] / result.cycles, stall_in=c["stall_input"] / result.cycles,
                         stall_w=c["stall_weights"] / result.cycles, stall_out=c["stall_output"] / result.cycles,
                         drain=c["stall_epilogue"] / result.cycles,
                         ddr=LayerCounters(0, result.cycles, c).ddr_bytes,
                         ddr_model=layer_bytes(LayerShape.of(d, cfg), cfg), macs=layer_macs(d)))
        print(f"  {rows[-1]['layer']}: {result.cycles:,} cycles", file=sys.stderr, flush=True)
    engine.close()
    return {"build": build.name, "config": cfg, "rows": rows, "sim_cycles": sim_cycles, "sim_seconds": sim_seconds}


def report(m: dict) -> None:
    cfg = m["config"]
    print(f"\n## {m['build']}: engine {cfg.describe()}, {cfg.clock_mhz:g} MHz\n")
    print("| layer | x | RTL cycles | model | error | MAC util | array busy | input stall | weights | output stall "
          "| tail | DDR MB | model MB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in m["rows"]:
        print(f"| {r['layer']} | {r['count']} | {r['cycles']:,} | {r['model']:,} | {r['model'] / r['cycles'] - 1:+.1%} "
              f"| {r['util']:.1%} | {r['busy']:.1%} | {r['stall_in']:.1%} | {r['stall_w']:.1%} | {r['stall_out']:.1%} "
              f"| {r['drain']:.1%} | {r['ddr'] / 1e6:.2f} | {r['ddr_model'] / 1e6:.2f} |")
    total = sum(r["cycles"] * r["count"] for r in m["rows"])
    model = sum(r["model"] * r["count"] for r in m["rows"])
    conv = [r for r in m["rows"] if r["macs"]]
    macs = sum(r["macs"] * r["count"] for r in conv)
    conv_cycles = sum(r["cycles"] * r["count"] for r in conv)
    worst = max((abs(r["model"] / r["cycles"] - 1) for r in m["rows"]), default=0.0)
    print(
        f"\nmodel total: {total:,} RTL cycles ({total / (cfg.clock_mhz * 1e6) * 1e3:.2f} ms at {cfg.clock_mhz:g} MHz), "
        f"cycle model {model:,} ({model / total - 1:+.1%}); worst layer {worst:.1%}"
    )
    print(f"MAC utilisation over conv layers: {macs / (conv_cycles * cfg.array_macs):.1%}")
    same = sum(r["ddr_model"] == r["ddr"] for r in m["rows"])
    print(f"DDR bytes (cycle_model.layer_bytes against the RTL's byte counters): equal on {same} of {len(m['rows'])} "
          "layers")
    print(f"simulator: {m['sim_cycles']:,} cycles in {m['sim_seconds']:.1f} s "
          f"({m['sim_cycles'] / max(m['sim_seconds'], 1e-9) / 1e6:.2f} M cycles/s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("builds", nargs="+", type=Path)
    ap.add_argument("--max-layer-cycles", type=float, default=5e8, help="skip layers modelled above this")
    args = ap.parse_args()
    for build in args.builds:
        report(measure(build, args.max_layer_cycles))


if __name__ == "__main__":
    main()
