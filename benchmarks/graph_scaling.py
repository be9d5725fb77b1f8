"""Partition time and peak memory against graph size: chains of N 1x1 convs (with ReLU), and one conv read by N
graph outputs (Relu and Sigmoid in turn: many small CPU heads), each `partition` in a process of its own so its
peak resident memory is its own.

    .venv/bin/python benchmarks/graph_scaling.py [--convs 1000 5000 10000] [--outputs 1000 5000] [--timeout 1800]

Prints one row per N: wall time, peak RSS, the build's own step times (plan.json), FPGA subgraphs.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

BIN = Path(sys.executable).parent


def chain(n: int, channels: int = 8, size: int = 8) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    nodes, inits, x = [], [], "x"
    for i in range(n):
        w = numpy_helper.from_array((rng.normal(0, 1, (channels, channels, 1, 1)) / np.sqrt(channels))
                                    .astype(np.float32), f"w{i}")
        b = numpy_helper.from_array(rng.normal(0, 0.1, channels).astype(np.float32), f"b{i}")
        inits += [w, b]
        nodes.append(helper.make_node("Conv", [x, f"w{i}", f"b{i}"], [f"c{i}"], name=f"conv{i}"))
        nodes.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}"))
        x = f"r{i}"
    g = helper.make_graph(nodes, f"chain{n}", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                             [1, channels, size, size])],
                          [helper.make_tensor_value_info(x, TensorProto.FLOAT, None)], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def fan(n: int, channels: int = 8, size: int = 16) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.normal(0, 1, (16, channels, 3, 3)) / channels).astype(np.float32), "w")
    b = numpy_helper.from_array(np.zeros(16, np.float32), "b")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="stem", pads=[1, 1, 1, 1])]
    for i in range(n):
        op = "Relu" if i % 2 == 0 else "Sigmoid"
        nodes.append(helper.make_node(op, ["c"], [f"o{i}"], name=f"{op.lower()}{i}"))
    g = helper.make_graph(nodes, f"fan{n}", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                           [1, channels, size, size])],
                          [helper.make_tensor_value_info(f"o{i}", TensorProto.FLOAT, None) for i in range(n)], [w, b])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _wait(proc: subprocess.Popen, timeout: float) -> tuple[int | str, int]:
    """Exit code (or "timeout") and the child's own peak resident memory in KiB (wait4's rusage)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, usage.ru_maxrss
        time.sleep(0.2)
    proc.kill()
    _, _, usage = os.wait4(proc.pid, 0)
    return "timeout", usage.ru_maxrss


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--convs", type=int, nargs="+", default=[1000, 5000, 10000])
    ap.add_argument("--outputs", type=int, nargs="*", default=[1000, 5000])
    ap.add_argument("--timeout", type=float, default=1800)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        cases = [(f"{n} chained convs", chain, n) for n in args.convs]
        cases += [(f"1 conv, {n} outputs", fan, n) for n in args.outputs]
        for label, make, n in cases:
            path = Path(tmp) / f"{make.__name__}{n}.onnx"
            onnx.save(make(n), str(path))
            out = Path(tmp) / f"b{make.__name__}{n}"
            cmd = [str(BIN / "partition"), str(path), "-o", str(out), "--no-picture", "--no-accuracy"]
            t0 = time.perf_counter()
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            code, peak_kib = _wait(proc, args.timeout)
            wall = time.perf_counter() - t0
            steps = fpga = cpu = "-"
            if code == 0:
                plan = json.loads((out / "plan.json").read_text())
                steps = ", ".join(f"{s['name']} {s['seconds']:.1f}" for s in plan["steps"] if s["seconds"] >= 0.5)
                fpga = str(sum(s["device"] == "fpga" for s in plan["subgraphs"]))
                cpu = str(sum(s["device"] == "cpu" for s in plan["subgraphs"]))
            rows.append([label, str(code), f"{wall:.1f}", f"{peak_kib / 1024:.0f}", fpga, cpu, steps])
            print(f"{label}: exit {code}, {wall:.1f} s", file=sys.stderr, flush=True)
    header = ["graph", "exit", "wall s", "peak RSS MiB", "FPGA subgraphs", "CPU subgraphs", "steps over 0.5 s (s)"]
    print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
