"""Which convs become integer Winograd F(2x2, 3x3) layers (`partition --winograd auto|off|all`), and their
weights: U = G g G^T from the float kernel, quantised to int8 with one scale per output channel (the scale all
16 positions share: `benchmarks/winograd_int8.py` measured per-position scales no better at int8 and 2^e scales
needing 32-bit sums). The arithmetic the engines run is fpga_runtime/winograd.py's.

`auto` takes a layer where both hold: it is faster than direct convolution on the build's engine (its cycles by the
cycle model, or where the board's DDR bounds it, its bytes: 16 weights per channel pair instead of 9), and its int8
cosine loss is small: on the calibration
frames, the layer's output computed in int8 both ways from the same int8 input, each against the float conv of the
float input, loses at most `max_loss` of cosine with Winograd.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from fpga_runtime import winograd
from fpga_runtime.abi import EngineConfig
from fpga_runtime.boards import Board
from fpga_runtime.checking.accuracy import output_accuracy
from fpga_runtime.cycle_model import layer_bytes, layer_cycles
from fpga_runtime.prediction.shared_ddr import layer_s
from partitioner.engine.geometry import cpu_fed_convs, layer_shape, winograd_problem, winograd_shape
from partitioner.errors import ModelError
from partitioner.ir.graph import Graph, Node

G = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]])
MODES = ("off", "auto", "all")
MAX_LOSS = 0.0005            # auto: the cosine a layer may lose against direct int8
TRIAL_FRAMES = 2             # auto: calibration frames the loss is measured on


def why_not(node: Node, graph: Graph, cfg: EngineConfig) -> str | None:
    """Why the engine cannot run `node` as a Winograd layer, or None."""
    return winograd_problem(node, graph, cfg)


def transform(w: np.ndarray) -> np.ndarray:
    """U = G g G^T [out, in, 4, 4] of float 3x3 kernels g [out, in, 3, 3]."""
    return np.einsum("ai,kcij,bj->kcab", G, w, G)


def quantise(u: np.ndarray, s_u: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(u / s_u[:, None, None, None]), -127, 127).astype(np.int8)


@dataclass
class WinogradTrial:
    """One eligible conv: the cycles both ways on the build's engine and, for `auto`, the measured cosines."""
    node: str
    direct_cycles: int
    winograd_cycles: int
    direct_s: float = 0.0          # the longer of the cycles' time and the layer's DDR traffic's
    winograd_s: float = 0.0
    extra_bytes: int = 0           # DDR traffic a Winograd layer adds (cycle_model.layer_bytes): 16 weights per
                                   # channel pair instead of 9, its input passes
    cosine_direct: float | None = None
    cosine_winograd: float | None = None
    chosen: bool = False
    why: str = ""

    @property
    def loss(self) -> float | None:
        if self.cosine_direct is None or self.cosine_winograd is None:
            return None
        return self.cosine_direct - self.cosine_winograd


def both_ways(node: Node, graph: Graph, cfg: EngineConfig, board: Board | None, cpu_fed: bool = False
              ) -> WinogradTrial:
    """The layer's cycles and time on one unit of `cfg`, direct (column-packed where the host writes its input,
    `cpu_fed`) and Winograd (DDR-bound on `board`, if given)."""
    shape, wshape = layer_shape(node, graph, cfg, cpu_fed), winograd_shape(node, graph, cfg)
    port = board.port_bits // 8 if board is not None else 16
    direct, wino = layer_cycles(shape, cfg, port), layer_cycles(wshape, cfg, port)
    nbytes = layer_bytes(shape, cfg)
    more = layer_bytes(wshape, cfg) - nbytes
    hz, ddr = cfg.clock_mhz * 1e6, (board.ddr_sustained_gbps if board is not None else float("inf")) * 1e9
    return WinogradTrial(node.name, direct, wino, layer_s(direct / hz, nbytes / ddr),
                         layer_s(wino / hz, (nbytes + more) / ddr), more)


def trials(graph: Graph, nodes: list[str], cfg: EngineConfig, mode: str, board: Board | None = None
           ) -> list[WinogradTrial]:
    """The eligible convs among `nodes` with their cycles; `all` chooses every one, `auto` those that are faster
    (the cosine test comes after, in `measure`); `off` weighs none (the report then has no Winograd table)."""
    if mode not in MODES:
        raise ModelError(f"--winograd {mode!r}: one of {', '.join(MODES)}")
    if mode == "off":
        return []
    out = []
    fed = cpu_fed_convs(graph, nodes)
    for n in nodes:
        node = graph.nodes[n]
        if why_not(node, graph, cfg) is not None:
            continue
        t = both_ways(node, graph, replace(cfg, compute_units=1), board, n in fed)
        if mode == "all":
            t.chosen, t.why = True, "--winograd all"
        else:
            t.chosen = t.winograd_s < t.direct_s
            t.why = "" if t.chosen else ("no fewer cycles" if t.winograd_cycles >= t.direct_cycles
                                         else "its DDR traffic bounds it")
        out.append(t)
    return out


def _conv3x3(xc: np.ndarray, wq: np.ndarray, pads: tuple[int, ...]) -> np.ndarray:
    """sum w x of a 3x3 stride-1 conv, [N, H, W, K] (float64 GEMMs: exact for integers)."""
    t, l, b, r = pads
    xp = np.pad(xc, ((0, 0), (t, b), (l, r), (0, 0))).astype(np.float64)
    h, w = xp.shape[1] - 2, xp.shape[2] - 2
    out = np.zeros((xp.shape[0], h, w, wq.shape[0]))
    for ky in range(3):
        for kx in range(3):
            out += xp[:, ky:ky + h, kx:kx + w] @ wq[:, :, ky, kx].T.astype(np.float64)
    return out


def _channel_scales(k: np.ndarray) -> np.ndarray:
    return np.maximum(np.abs(k.reshape(len(k), -1)).max(axis=1), 1e-30) / 127


def measure(trial: WinogradTrial, node: Node, graph: Graph, inputs: list[np.ndarray], s_x: float, zero: int,
            max_loss: float) -> None:
    """The layer's int8 output (before its activation) both ways against float on the calibration frames' inputs
    `inputs` (float NCHW): the same int8 input (codes with this tensor's scale and zero point), direct int8
    weights and Winograd weights, each at max |w| / 127 per output channel; sets the cosines and keeps
    `trial.chosen` only where the loss is at most `max_loss`."""
    spec = node.conv
    w = graph.const(spec.weight).astype(np.float64)
    u = transform(w)
    s_w, s_u = _channel_scales(w), _channel_scales(u)
    bias = graph.const(spec.bias).astype(np.float64) if spec.bias else np.zeros(w.shape[0])
    wq, uq = quantise(w, s_w), quantise(u, s_u).transpose(0, 2, 3, 1)
    truth, direct, wino = [], [], []
    for x in inputs[:TRIAL_FRAMES]:
        xf = np.asarray(x, np.float64).transpose(0, 2, 3, 1)
        xc = np.clip(np.rint(xf / s_x) + zero, -128, 127) - zero          # int8 codes less the zero point
        truth.append(_conv3x3(xf, w, spec.pads) + bias)
        direct.append(_conv3x3(xc, wq, spec.pads) * (s_x * s_w) + bias)
        h, wd = truth[-1].shape[1:3]
        xp = winograd.pad_to_tiles(xc, spec.pads[0], spec.pads[1], h, wd, 0)
        wino.append(winograd.accumulate(xp, uq, h, wd) * (s_x * s_u) + bias)
    want = np.concatenate(truth)
    trial.cosine_direct = output_accuracy(node.name, want, np.concatenate(direct)).cosine
    trial.cosine_winograd = output_accuracy(node.name, want, np.concatenate(wino)).cosine
    if trial.chosen and trial.loss > max_loss:
        trial.chosen, trial.why = False, f"cosine loss {trial.loss:.2g} > {max_loss:g}"
