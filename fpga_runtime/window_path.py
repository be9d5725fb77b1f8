"""Which conv layers the RTL engine runs on its window path, and with which window geometry: the Python twin of
`layer_descriptor.sv` (the `win` decision) and `window_slots` in engine_functions.svh, for the cycle model and for
sizing the window at code generation. docs/kernel-abi.md, "Window path", describes the path itself."""
from __future__ import annotations

from dataclasses import dataclass, replace

from fpga_runtime.abi import Descriptor, EngineConfig, Flag, Op, weight_taps


def _pow2_at_least(v: int) -> int:
    p = 1
    while p < v:
        p *= 2
    return p


@dataclass(frozen=True)
class WindowGeometry:
    slots: int          # input rows the window holds
    row_words: int      # words of one input row in each of the P banks


def row_words(d: Descriptor, cfg: EngineConfig) -> int:
    """Words of one input row per bank: each stride phase of the row spread over P banks, a word per V channels
    (a depthwise layer's window holds only the tile's V channels)."""
    s = 2 if d.stride_w == 2 else 1
    cols = -(-(-(-d.in_w // s)) // cfg.pixels)  # noqa: B002 (two ceiling divisions)
    return s * cols * (1 if d.flags & Flag.DEPTHWISE else d.in_c // cfg.vec)


def rows_read(d: Descriptor) -> tuple[int, int]:
    """(rows an output row reads, rows it moves on): a Winograd layer's row of tiles reads four input rows and
    makes two output rows."""
    return (4, 2) if d.flags & Flag.WINOGRAD else (d.kh, d.stride_h)


def window_slots(kh: int, stride: int, words_per_row: int, depth: int) -> int:
    """kh + stride + 1 rows (a power of two, at most 8) so the next rows load, latency hidden, while these are
    read; else kh; else 0."""
    for rows in (_pow2_at_least(kh + stride + 1), _pow2_at_least(kh)):
        if rows <= 8 and rows * words_per_row <= depth:
            return rows
    return 0


RESIDUAL_QUEUE = 512     # residual beats the window path queues (RESQ in window_conv.sv): a row of them


def eligible(d: Descriptor, cfg: EngineConfig) -> bool:
    """A conv the window path can run given a big enough window: undilated, square stride 1 or 2, no upsampling
    read; a fused residual only where a row of its operands fits the queue; depthwise only with at least as many
    PE rows as lanes and without a fused residual or pool."""
    if d.flags & Flag.RESIDUAL and d.conv_w * max(1, cfg.pe_rows // cfg.vec) > RESIDUAL_QUEUE:
        return False
    if d.flags & Flag.DEPTHWISE and not depthwise_fits(d, cfg):
        return False
    return (cfg.pixels > 1 and d.op == Op.CONV and not d.flags & Flag.UPSAMPLE2
            and d.dil_h == 1 and d.dil_w == 1 and d.stride_h == d.stride_w and d.stride_w in (1, 2))


def depthwise_fits(d: Descriptor, cfg: EngineConfig) -> bool:
    """A depthwise layer the window path takes (a tap per step on the array's diagonal, or a kernel row)."""
    return cfg.pe_rows >= cfg.vec and not d.flags & (Flag.RESIDUAL | Flag.POOL)


def depthwise_rows(d: Descriptor, cfg: EngineConfig) -> bool:
    """Whether a depthwise window layer takes a whole kernel row per step: the engine has the kernel-row logic
    (`depthwise_rows` not False) and the kernel row fits the PE rows and reaches at most P columns past the
    group (its carry into the group before); else it takes a tap per step on the array's diagonal."""
    return (cfg.depthwise_rows is not False and bool(d.flags & Flag.DEPTHWISE) and d.kw <= cfg.pe_rows
            and (d.kw - 1) >> (d.stride_w == 2) <= cfg.pixels)


def wants_depthwise_rows(descriptors: list[Descriptor], cfg: EngineConfig) -> bool:
    """Whether a build with these layers gets the depthwise kernel-row logic: some depthwise layer would use it."""
    on = replace(cfg, depthwise_rows=True)
    return any(d.op == Op.CONV and depthwise_rows(d, on) and geometry(d, on) is not None for d in descriptors)


def geometry(d: Descriptor, cfg: EngineConfig) -> WindowGeometry | None:
    """The layer's window, or None where it takes the per-tap path (a window not yet sized to the build, 0
    words, is assumed big enough)."""
    if not eligible(d, cfg):
        return None
    words = row_words(d, cfg)
    slots = window_slots(*rows_read(d), words, cfg.window_words or words_wanted(d, cfg))
    return WindowGeometry(slots, words) if slots else None


WINDOW_WORDS = (512, 8192)       # a window bank: at least a BRAM's depth, at most this


def window_words_for(descriptors: list[Descriptor], cfg: EngineConfig) -> int:
    """Words per bank just enough (a power of two) for every layer that can take the window path to load ahead;
    layers wanting more than WINDOW_WORDS[1] take the per-tap path."""
    wanted = max((words_wanted(d, cfg) for d in descriptors), default=0)
    words = WINDOW_WORDS[0]
    while words < min(wanted, WINDOW_WORDS[1]):
        words *= 2
    return words


def words_wanted(d: Descriptor, cfg: EngineConfig) -> int:
    """Window words per bank that let an eligible layer load ahead (0 for a layer that cannot take the path)."""
    if not eligible(d, cfg):
        return 0
    return min(_pow2_at_least(sum(rows_read(d)) + 1), 8) * row_words(d, cfg)


def min_weight_rows(d: Descriptor, cfg: EngineConfig) -> int:
    """Weight-RAM rows a standard conv needs: one tile's, `pixels` tiles' for a 1x1 window layer, `pixels / 4`
    tiles' for a Winograd layer (its group of P tiles takes 4P new input beats per 16 steps, so P / 4 tiles per pass
    over the input keep the stream at a beat a cycle), which the build's engine always holds (codegen sizes it so)."""
    rows = weight_taps(d) * (d.in_c // cfg.vec)
    if not _groups_tiles(d, cfg):
        return rows
    if d.kh * d.kw == 1:
        return rows * cfg.pixels
    if d.flags & Flag.WINOGRAD:
        return rows * max(1, min(cfg.pixels // 4, d.out_c // cfg.pe_rows))
    return rows


def _groups_tiles(d: Descriptor, cfg: EngineConfig) -> bool:
    return (geometry(d, cfg) is not None and cfg.pe_rows >= cfg.vec
            and not d.flags & (Flag.DEPTHWISE | Flag.RESIDUAL | Flag.POOL))


def winograd_problem(d: Descriptor, cfg: EngineConfig) -> str | None:
    """Why the RTL engine's Winograd unit cannot run this WINOGRAD layer, or None: the unit is built (the build
    has such layers), the engine has a window path and the layer's window fits (`layer_descriptor.sv` refuses the
    layer otherwise). Its tiles make two output rows at once: a fused residual is read, and a fused pool's ring
    filled, in the order they leave."""
    if not cfg.winograd:
        return "the engine was built without the Winograd unit"
    if cfg.pixels < 2:
        return f"the Winograd unit is part of the window path, which a {cfg.pixels}-pixel engine does not have"
    if geometry(d, cfg) is None:
        return "its input rows do not fit the engine's window"
    return None


def tiles_per_group(d: Descriptor, cfg: EngineConfig) -> int:
    """Output-channel tiles the engine computes over one load of a window layer's input (`group_max` in
    layer_descriptor.sv): the largest power of two up to `pixels` whose weights fit the weight RAM; 1 for a
    layer with a fused residual or pool. The last group of a layer may have fewer."""
    if not _groups_tiles(d, cfg):
        return 1
    rows = cfg.weight_rows or min_weight_rows(d, cfg)
    per_tile = weight_taps(d) * (d.in_c // cfg.vec)
    m = 1
    while m * 2 <= cfg.pixels and m * 2 * per_tile <= rows:
        m *= 2
    return min(m, max(1, d.out_c // cfg.pe_rows))
