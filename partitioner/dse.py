"""Design-space exploration: the engine parameters (pixels x PE rows x VEC lanes, epilogue width, compute
units; the input window sized to the model's layers) that maximise the
modelled throughput of a model's FPGA layers on a board, within its DSP, BRAM/URAM and LUT budget; with a
target rate, the smallest design that meets it.

Throughput model: one frame's FPGA time T is the sum over layers of max(cycles / clock, bytes / DDR) plus a
program start per FPGA subgraph (cycle_model.py, timing.py); k compute units process k frames at once, so
fps = min(k / T, DDR bandwidth / bytes per frame).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from fpga_runtime import timing, window_path
from fpga_runtime.abi import EngineConfig
from fpga_runtime.boards import Board
from fpga_runtime.cycle_model import layer_cycles

from .cost import conv_descriptor, layer_shape, node_cost
from .ir import Graph
from .resources import Resources, compute_unit

VECS = (8, 16, 32, 64)
ROWS = (8, 16, 32, 64)
UNITS = (1, 2, 3, 4)
PIXELS = (1, 2, 4, 8)
WINDOW_WORDS = (512, 8192)       # the window per bank: at least a BRAM's depth, at most this
EPILOGUE_PASSES = (1, 2, 4)      # the epilogue at all, half or a quarter of the result lanes


@dataclass
class Design:
    config: EngineConfig
    resources: Resources
    frame_s: float
    fps: float
    mac_utilisation: float
    weights_in: str = "bram"


@dataclass
class Exploration:
    board: Board
    chosen: Design | None
    feasible: list[Design] = field(default_factory=list)
    note: str = ""


def sized_window(graph: Graph, nodes: list[str], cfg: EngineConfig) -> EngineConfig:
    """`cfg` with a window just big enough (a power of two of words per bank) for every conv of the model that can
    take the window path to load ahead; layers wanting more than WINDOW_WORDS[1] take the per-tap path."""
    if cfg.pixels == 1:
        return cfg
    wanted = [window_path.words_wanted(d, cfg) for d in (conv_descriptor(graph.nodes[n], graph, cfg) for n in nodes)
              if d is not None]
    words = WINDOW_WORDS[0]
    while words < min(max(wanted, default=0), WINDOW_WORDS[1]):
        words *= 2
    return replace(cfg, window_words=words)


def _evaluate(graph: Graph, nodes: list[str], subgraphs: int, cfg: EngineConfig, board: Board) -> list[Design]:
    frame = subgraphs * timing.INVOKE_S
    nbytes = macs = 0
    wbuf = 64
    width = 1
    for n in nodes:
        node = graph.nodes[n]
        shape = layer_shape(node, graph, cfg)
        cost = node_cost(node, graph)
        nbytes += cost.bytes
        macs += cost.macs
        if shape is None:
            continue
        frame += max(layer_cycles(shape, cfg, board.port_bits // 8) / (cfg.clock_mhz * 1e6), cost.bytes / (board.ddr_gbps * 1e9))
        if shape.kh and not shape.depthwise and node.conv is not None:
            wbuf = max(wbuf, shape.kh * shape.kw * shape.in_c * cfg.pe_rows)
            width = max(width, shape.conv_w)
    fps = min(cfg.compute_units / frame, board.ddr_gbps * 1e9 / max(nbytes, 1))
    peak = cfg.compute_units * cfg.array_macs * cfg.clock_mhz * 1e6
    return [Design(cfg, compute_unit(cfg, board, wbuf, width, uram).times(cfg.compute_units), frame, fps,
                   macs * fps / peak, "uram" if uram else "bram")
            for uram in ((False, True) if board.uram else (False,))]


def describe(d: Design) -> str:
    return d.config.describe()


def unit_resources(graph: Graph, nodes: list[str], subgraphs: int, cfg: EngineConfig, boards) -> dict[str, dict]:
    """One compute unit of this engine on every board of the catalog (weights in BRAM or UltraRAM, whichever
    leaves more room), recorded in the plan so `fpga-run predict --board` can refuse a board it does not fit."""
    from dataclasses import asdict, replace
    out = {}
    for b in boards:
        designs = _evaluate(graph, nodes, subgraphs, replace(cfg, compute_units=1, clock_mhz=b.clock_mhz), b)
        best = min(designs, key=lambda d: max(d.resources.share(b).values()))
        out[b.name] = asdict(best.resources)
    return out


def check_fixed(graph: Graph, nodes: list[str], subgraphs: int, cfg: EngineConfig, board: Board) -> str | None:
    """Why an engine fixed by hand (--engine, --compute-units) does not fit the board, or None where it does
    (weights in BRAM or, on parts with it, UltraRAM)."""
    designs = _evaluate(graph, nodes, subgraphs, cfg, board)
    if any(d.resources.fits(board) for d in designs):
        return None
    return f"engine {describe(designs[0])} does not fit {board.name}: needs {'; '.join(designs[0].resources.over_budget(board))}"


def explore(graph: Graph, fpga_nodes: list[str], subgraphs: int, board: Board, target_fps: float | None = None,
            units: tuple[int, ...] = UNITS) -> Exploration:
    configs = [EngineConfig(vec=v, pe_rows=r, pixels=px, compute_units=k, clock_mhz=board.clock_mhz,
                            epilogue_lanes=max(v, r) // p if p > 1 else 0)
               for v in VECS for r in ROWS for px in PIXELS for p in EPILOGUE_PASSES for k in units
               if k * px * r * v <= board.dsp * board.int8_macs_per_dsp]      # the array alone must fit
    designs = [d for c in configs for d in _evaluate(graph, fpga_nodes, subgraphs, sized_window(graph, fpga_nodes, c),
                                                     board)]
    feasible = [d for d in designs if d.resources.fits(board)]
    if not feasible:
        smallest = min(designs, key=lambda d: len(d.resources.over_budget(board)) + d.resources.dsp / 1e6)
        return Exploration(board, None, [], f"no engine design fits {board.name}: the smallest, {describe(smallest)}, "
                                            f"needs {'; '.join(smallest.resources.over_budget(board))}")
    if target_fps is not None:
        meeting = [d for d in feasible if d.fps >= target_fps]
        if meeting:
            best = min(meeting, key=lambda d: (d.resources.dsp, d.resources.bram36 + 8 * d.resources.uram,
                                               d.resources.lut))
            return Exploration(board, best, feasible, f"smallest design reaching {target_fps:g} fps")
        note = f"no design reaches {target_fps:g} fps; the fastest one is chosen"
    else:
        note = "fastest design within the budget"
    best = max(feasible, key=lambda d: (round(d.fps, 6), -d.resources.dsp))
    return Exploration(board, best, feasible, note)
