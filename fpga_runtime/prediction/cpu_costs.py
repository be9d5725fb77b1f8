"""CPU time of the work that stays on the CPU, from measured per-op costs.

A cost table gives, per ONNX op type, seconds per node, per activation element (inputs and outputs that are not
constants) and per MAC, fitted to onnxruntime timing single-op models at two sizes on one machine (`measure`),
less the cost of a session run itself (`session_s`, timed on a one-Identity model). A subgraph's time is one
session run plus the sum over its ops. The table shipped with the runtime (`data/cpu_costs.json`) was
measured on the development machine; `fpga-run measure-cpu` measures one on the machine it runs on, the board
itself, and `predict` prefers a table in the build folder (`cpu_costs.json`) measured on the board it predicts.
A table measured elsewhere is scaled to a board, which is the one assumption left: per-element and per-MAC
costs by the ratio of element-wise throughputs (the table's own `gbps`, measured, over the board catalog's
`cpu_gbps`), per-node and per-session costs (dispatch: scalar code) by the ratio of clock x work per clock
(the measuring machine's clock over the board's `cpu_ghz` x `cpu_ipc`).
"""
from __future__ import annotations

import json
import platform
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fpga_runtime.boards import Board

TABLE_NAME = "cpu_costs.json"
SHIPPED = Path(__file__).resolve().parent.parent / "data" / TABLE_NAME
SIZES = (1 << 10, 1 << 18)         # activation elements of the two single-op models an op is timed at


@dataclass(frozen=True)
class OpCost:
    call_s: float
    element_s: float
    mac_s: float = 0.0

    def seconds(self, elements: int, macs: int) -> float:
        return self.call_s + self.element_s * elements + self.mac_s * macs


@dataclass(frozen=True)
class CostTable:
    ops: dict[str, OpCost]
    default: OpCost               # an op the table has not timed: the median element-wise op
    gbps: float                   # element-wise throughput of the machine measured (4-byte elements)
    machine: str
    board: str | None = None      # the board it was measured on, where it was
    session_s: float = 0.0        # one InferenceSession.run, beyond its nodes
    ghz: float = 3.0              # the measuring machine's clock

    def scale_for(self, board: Board) -> float:
        """Per-element and per-MAC costs: the board's over this machine's."""
        return 1.0 if self.board == board.name else self.gbps / board.cpu_gbps

    def fixed_scale_for(self, board: Board) -> float:
        """Per-node and per-session costs: the board's over this machine's."""
        return 1.0 if self.board == board.name else self.ghz / (board.cpu_ghz * board.cpu_ipc)

    def op_s(self, op: str, elements: int, macs: int, board: Board) -> float:
        cost = self.ops.get(op, self.default)
        return (cost.call_s * self.fixed_scale_for(board)
                + (cost.element_s * elements + cost.mac_s * macs) * self.scale_for(board))

    def subgraph_s(self, ops: list, board: Board, session: bool = True) -> float:
        """`ops`: (op type, elements, MACs) of each node, as the plan records them; with the session run they
        take, or (`session` False) what they add to one that runs anyway."""
        own = self.session_s * self.fixed_scale_for(board) if session else 0.0
        return own + sum(self.op_s(op, int(e), int(m), board) for op, e, m in ops)

    def to_json(self) -> dict:
        return {"machine": self.machine, "board": self.board, "gbps": self.gbps, "session_s": self.session_s,
                "ghz": self.ghz,
                "default": [self.default.call_s, self.default.element_s, self.default.mac_s],
                "ops": {k: [c.call_s, c.element_s, c.mac_s] for k, c in sorted(self.ops.items())}}

    @classmethod
    def from_json(cls, data: dict) -> "CostTable":
        return cls({k: OpCost(*v) for k, v in data["ops"].items()}, OpCost(*data["default"]), float(data["gbps"]),
                   data.get("machine", "?"), data.get("board"), float(data.get("session_s", 0.0)),
                   float(data.get("ghz", 3.0)))


def load(build_dir: str | Path | None = None) -> CostTable:
    """The build's own table (measured on its board) where there is one, else the shipped one."""
    if build_dir is not None and (Path(build_dir) / TABLE_NAME).exists():
        return CostTable.from_json(json.loads((Path(build_dir) / TABLE_NAME).read_text()))
    return CostTable.from_json(json.loads(SHIPPED.read_text()))


# ---- measurement --------------------------------------------------------------------------------------------

def _single_op(op: str, n: int):
    """A one-node model of `op` over about `n` activation elements (inputs and outputs), its feeds and MACs."""
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    side = max(4, int(round((n / 2 / 16) ** 0.5)))
    x = rng.standard_normal((1, 16, side, side)).astype(np.float32)
    inputs, inits, attrs, extra, macs = ["x"], [], {}, {}, 0

    def const(name, value):
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    if op == "Identity":
        x = x[:, :1, :2, :2].copy()
    elif op in ("Add", "Mul", "Sub", "Div"):
        inputs.append("y")
        extra["y"] = rng.standard_normal(x.shape).astype(np.float32) + 2.0
    elif op == "Clip":
        inputs += [const("lo", np.float32(0)), const("hi", np.float32(6))]
    elif op == "Concat":
        inputs.append("y")
        extra["y"] = x.copy()
        attrs["axis"] = 1
    elif op == "Reshape":
        inputs.append(const("shape", np.array([1, -1], np.int64)))
    elif op == "Transpose":
        attrs["perm"] = [0, 2, 3, 1]
    elif op == "Slice":
        inputs += [const("starts", np.array([0], np.int64)), const("ends", np.array([8], np.int64)),
                   const("axes", np.array([1], np.int64))]
    elif op == "Cast":
        attrs["to"] = TensorProto.UINT8
    elif op == "Softmax":              # over the classes of each box, as detectors use it
        x = rng.standard_normal((1, max(1, n // 2 // 96), 96)).astype(np.float32)
        attrs["axis"] = -1
    elif op in ("ReduceMax", "ReduceSum"):
        attrs["axes"], attrs["keepdims"] = [1], 1
    elif op == "ArgMax":
        attrs["axis"], attrs["keepdims"] = 1, 1
    elif op == "Gather":
        inputs.append(const("idx", np.arange(0, side, 2, dtype=np.int64)))
        attrs["axis"] = 2
    elif op == "Resize":
        inputs += [const("roi", np.zeros(0, np.float32)), const("scales", np.array([1, 1, 2, 2], np.float32))]
        attrs["mode"] = "nearest"
    elif op == "MaxPool":
        attrs.update(kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1])
    elif op == "Conv":
        w = rng.standard_normal((16, 16, 3, 3)).astype(np.float32) * 0.1
        inputs.append(const("w", w))
        attrs["pads"] = [1, 1, 1, 1]
        macs = 16 * 16 * 9 * side * side
    elif op == "TopK":
        x = rng.standard_normal((1, n // 2)).astype(np.float32)
        inputs.append(const("k", np.array([max(1, n // 200)], np.int64)))
    elif op == "NonMaxSuppression":
        boxes = max(8, n // 8)
        corner = rng.uniform(0, 400, (1, boxes, 2)).astype(np.float32)
        x = np.concatenate([corner, corner + rng.uniform(8, 64, (1, boxes, 2)).astype(np.float32)], 2)
        extra["scores"] = rng.uniform(0, 1, (1, 1, boxes)).astype(np.float32)
        inputs += ["scores", const("max_out", np.array([100], np.int64)), const("iou", np.array([0.45], np.float32)),
                   const("score", np.array([0.25], np.float32))]
    outputs = ["out", "idx"] if op == "TopK" else ["out"]
    value_infos = [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape) for k, v in
                   [("x", x)] + list(extra.items())]
    node = helper.make_node(op, inputs, outputs, **attrs)
    types = {"Cast": [TensorProto.UINT8], "ArgMax": [TensorProto.INT64], "NonMaxSuppression": [TensorProto.INT64],
             "TopK": [TensorProto.FLOAT, TensorProto.INT64]}.get(op, [TensorProto.FLOAT])
    graph = helper.make_graph([node], op, value_infos,
                              [helper.make_tensor_value_info(o, t, None) for o, t in zip(outputs, types)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    feeds = {"x": x, **extra}
    return model, feeds, macs


MEASURED_OPS = ("Add", "Mul", "Sub", "Div", "Sigmoid", "Exp", "Relu", "Clip", "Tanh", "Concat", "Reshape",
                "Transpose", "Slice", "Cast", "Softmax", "ReduceMax", "ArgMax", "Gather", "Resize", "MaxPool",
                "Conv", "TopK", "NonMaxSuppression")


def _time(session, feeds, repeats: int) -> tuple[float, int]:
    """Seconds per run (the fastest of `repeats`: other work only ever adds time), and the run's activation
    elements (feeds and results)."""
    out = session.run(None, feeds)
    elements = sum(v.size for v in feeds.values()) + sum(np.asarray(o).size for o in out)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        session.run(None, feeds)
        times.append(time.perf_counter() - t0)
    return float(min(times)), elements


def measure(ops: tuple[str, ...] = MEASURED_OPS, repeats: int = 20, board: str | None = None,
            progress=lambda s: None) -> CostTable:
    """Time each op at the two SIZES on this machine with onnxruntime (one thread, as a CPU worker runs) and fit
    seconds per call and per element (per MAC for Conv)."""
    try:
        import onnx  # noqa: F401  (the single-op models)

        from fpga_runtime.onnx_chain import cpu_session
    except ImportError as exc:
        raise OSError(f"measuring op costs builds single-op ONNX models: {exc} (pip3 install onnx)") from None
    costs: dict[str, OpCost] = {}
    model, feeds, _ = _single_op("Identity", 4)
    session_s, _ = _time(cpu_session(model.SerializeToString(), optimise=False, threads=1, quiet=False),
                         feeds, repeats * 5)
    for op in ops:
        points = []
        for n in SIZES:
            model, feeds, macs = _single_op(op, n)
            session = cpu_session(model.SerializeToString(), optimise=False, threads=1, quiet=False)
            seconds, elements = _time(session, feeds, repeats)
            points.append((elements, macs, seconds))
        (e0, m0, t0), (e1, m1, t1) = points
        if op == "Conv":
            per = max((t1 - t0) / (m1 - m0), 0.0)
            costs[op] = OpCost(max(t0 - per * m0 - session_s, 0.0), 0.0, per)
        else:
            per = max((t1 - t0) / (e1 - e0), 0.0)
            costs[op] = OpCost(max(t0 - per * e0 - session_s, 0.0), per)
        progress(f"{op}: {costs[op].call_s * 1e6:.2f} us per node, {costs[op].element_s * 1e9:.3f} ns per element"
                 + (f", {costs[op].mac_s * 1e12:.1f} ps per MAC" if costs[op].mac_s else ""))
    elementwise = sorted((costs[k] for k in ("Add", "Mul", "Sub", "Div", "Sigmoid", "Exp", "Relu", "Clip", "Tanh")
                          if k in costs), key=lambda c: c.element_s)
    default = elementwise[len(elementwise) // 2] if elementwise else OpCost(1e-5, 1e-9)
    gbps = 4 / costs["Add"].element_s / 1e9 if costs.get("Add") and costs["Add"].element_s else 1.0
    progress(f"a session run: {session_s * 1e6:.1f} us")
    return CostTable(costs, default, gbps, _machine(), board, session_s, _clock_ghz())


def _machine() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("model name", "hardware")):
                return f"{platform.machine()} {line.split(':', 1)[1].strip()}"
    except OSError:
        pass
    return platform.machine()


def _clock_ghz() -> float:
    """This machine's CPU clock (the highest cpufreq limit, else /proc/cpuinfo's), 3.0 GHz where neither says."""
    try:
        return int(Path("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq").read_text()) / 1e6
    except (OSError, ValueError):
        pass
    try:
        mhz = [float(line.split(":")[1]) for line in Path("/proc/cpuinfo").read_text().splitlines()
               if line.startswith("cpu MHz")]
        if mhz:
            return max(mhz) / 1000
    except (OSError, ValueError):
        pass
    return 3.0
