"""One IR node -> layer descriptors and their constants (quantised weights, biases, requantisation, LUTs)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from fpga_runtime import winograd
from fpga_runtime.abi import (
    ACC_HALF,
    L2NORM_SHIFTS,
    MULT_BITS,
    Act,
    Descriptor,
    EngineConfig,
    Flag,
    Op,
    ScaleRangeError,
    pack_requant_word,
    quantize_multiplier,
)
from fpga_runtime.engine_image import TensorView
from partitioner.engine import winograd as winograd_weights
from partitioner.engine.activations import lut
from partitioner.engine.geometry import conv_output_hw
from partitioner.engine.layout import layout_conflict, table_first
from partitioner.engine.memory import ConstArena
from partitioner.engine.zero_points import last_arithmetic_step, writes_zero_point
from partitioner.errors import ModelError
from partitioner.ir.graph import CLAMPS, ActKind, ConvForm, Graph, Node, OpKind, Pool
from partitioner.ir.op_facts import epilogue_activations, gate_operands, pool_of, table_activations
from partitioner.ir.to_onnx import stage_names


def prelu_requant(ratio: np.ndarray, slopes: np.ndarray) -> np.ndarray:
    """[C, 2] requantisation entries of a PRELU conv: the multiplier of acc >= 0 and, in the second word beside the
    shift, the negative side's (slope x multiplier), both at one shift that keeps the larger below 2^17."""
    out = np.zeros((len(ratio), 2), np.int32)
    for o, (r, a) in enumerate(zip(ratio, slopes)):
        _, shift = quantize_multiplier(r * max(1.0, abs(a)))
        mult, neg = int(round(r * 2.0 ** shift)), int(round(a * r * 2.0 ** shift))
        out[o] = mult, pack_requant_word(shift, neg)
    return out


def _residual_mults(s_a: float, s_b: float, s_out: float) -> tuple[int, int, int]:
    """(mult_a, mult_b, shift), both multipliers below 2^MULT_BITS (the larger at least 2^(MULT_BITS - 2))."""
    ratio = max(s_a, s_b) / s_out
    top = MULT_BITS - 1
    shift = int(min(top, top - max(0, int(np.ceil(np.log2(ratio)))))) if ratio > 0 else 0
    if shift < 0:
        raise ValueError("residual rescale out of range")
    return int(round(s_a / s_out * 2 ** shift)), int(round(s_b / s_out * 2 ** shift)), shift


ACC_LIMIT = 2 ** 31 - 1
REQUANT_LIMIT = ACC_HALF - 1   # |the requantisation's input| at most (ABI v3: 27 bits)
WIDEN_TRIES = 8


def requant_input_bound(wq: np.ndarray, bias: np.ndarray, wino: bool = False) -> np.ndarray:
    """Per output channel, |the requantisation's input| at most: |its int bias| (the input's zero point folded in)
    plus every product at its largest input, |q| <= 128, or a Winograd layer's |V| <= 512 over the nine of U's
    sixteen positions the output transform sums for one output. The engine's running sums stay within it too."""
    a = np.abs(wq.astype(np.int64))
    if wino:
        rows = (slice(0, 3), slice(1, 4))               # the positions output row (column) 0 and 1 sum
        taps = np.max([a[:, :, r, c].sum(axis=(1, 2, 3)) for r in rows for c in rows], axis=0)
        return np.abs(bias) + winograd.V_LIMIT * taps
    return np.abs(bias) + 128 * a.reshape(len(a), -1).sum(axis=1)


def accumulation_bound(terms: int, zero: int = 0) -> int:
    """|sum of `terms` products w (q - zero)| at most (inputs q in -128..127, weights -127..127). The engine
    accumulates sum w q onto a bias that holds -zero sum w, so its running sum stays within this too."""
    return terms * (128 + abs(zero)) * 127


def weight_scales(w: np.ndarray, bias: np.ndarray | None, s_x: float, terms: int, zero: int = 0,
                  bound: int | None = None) -> np.ndarray:
    """Per output channel: max |w| / 127, widened where the int32 bias (bias / (s_x * s_w)) would not fit beside
    the worst-case accumulation (`bound`, by default `accumulation_bound(terms, zero)`). Trained heads have large
    biases and small weights; such a channel's output is dominated by its bias, so coarser weights cost little
    there, and no valid model is refused for it."""
    cout = w.shape[0]
    s_w = np.max(np.abs(w.reshape(cout, -1)), axis=1) / 127.0
    worst = accumulation_bound(terms, zero) if bound is None else bound
    room = ACC_LIMIT - worst
    if room <= 1:
        raise ValueError(f"a worst-case accumulation of {worst:,} overflows int32 even without a bias")
    if bias is not None:
        s_w = np.maximum(s_w, np.abs(bias.astype(np.float64)) / (s_x * (room - 1)))
    s_w[s_w == 0] = 1.0
    return s_w


def _set_view(d: Descriptor, prefix: str, v: TensorView, c: int) -> None:
    setattr(d, f"{prefix}_addr", v.addr)
    setattr(d, f"{prefix}_c_stride", v.c_stride)
    setattr(d, f"{prefix}_c_offset", v.c_offset)
    if prefix != "in2":
        setattr(d, f"{prefix}_c", c)


def _set_pool(d: Descriptor, pool: Pool) -> None:
    d.flags |= Flag.POOL
    d.pool_kh, d.pool_kw = pool.kernel
    d.pool_sh, d.pool_sw = pool.strides
    d.pool_pad_t, d.pool_pad_l, d.pool_pad_b, d.pool_pad_r = pool.pads
    if pool.pad_zero:
        d.flags |= Flag.POOL_PAD_ZERO


def bias_dominance_warning(found: list[tuple[str, int, int, float, int]]) -> list[str]:
    """Lines for the convs whose accumulation does not fit the requantisation's 27 bits (or whose bias the int32
    accumulator) at their weights' own scale, so their weights were quantised coarser (node, channels widened, of,
    worst factor among the live ones, dead ones).
    Where the bias dominates the output (untrained heads, class priors) that costs only what the accuracy report
    shows; a channel whose weights then round to zero is dead: it outputs its bias, as the float model does to
    within a step, which is harmless and said so rather than as a huge factor."""
    lines = []
    live = [f for f in found if f[1] > f[4]]
    if live:
        worst = max(live, key=lambda f: f[3])
        where = (f"node {live[0][0]!r}: {live[0][1] - live[0][4]} of {live[0][2]} output channels have"
                 if len(live) == 1 else
                 f"{len(live)} convs ({', '.join(repr(f[0]) for f in live[:4])}{', ...' if len(live) > 4 else ''}; "
                 f"{sum(f[1] - f[4] for f in live)} output channels) have")
        lines.append(f"{where} a bias or a sum of weights too large for the engine's accumulation (27 bits into "
                     f"the requantisation) at their weight scale, so their weights are quantised up to "
                     f"{worst[3]:.3g}x coarser (in {worst[0]!r}). Where the bias dominates the output, the engine "
                     "keeps it to one accumulator step; the accuracy report shows what the weights' coarser step "
                     "costs")
    dead = [f for f in found if f[4]]
    if dead:
        names = ", ".join(repr(f[0]) for f in dead[:4]) + (", ..." if len(dead) > 4 else "")
        lines.append(f"{sum(f[4] for f in dead)} output channel(s) of {names} are dead: their weights are so "
                     "small beside their bias that they round to 0, so the channel outputs its bias, as the float "
                     "model does to within one output step (harmless; typical of pruned or untrained channels)")
    return lines


class LayerEmitter:
    def __init__(self, graph: Graph, views: dict[str, TensorView], scales: dict[str, float],
                 config: EngineConfig, arena: ConstArena, means: dict[str, list[float]] | None = None,
                 zeros: dict[str, int] | None = None, winograd: set[str] | frozenset = frozenset()):
        self.graph, self.views, self.scales, self.config, self.arena = graph, views, scales, config, arena
        self.winograd = winograd           # node names that become Winograd layers (engine/winograd.py)
        self.zeros = zeros or {}           # zero points by ONNX name; a table's stage is the one not in a view
        self.means = means or {}           # calibrated channel means of tensors: the weights' rounding bias removed
        self.bias_dominated: list[tuple[str, int, int, float, int]] = []   # bias_dominance_warning's
        self.bias_corrected: list[tuple[str, int, int]] = []   # (node, channels corrected, of)

    def _phys(self, v: TensorView) -> int:
        return self.config.padded(v.phys_c)

    def _scale(self, onnx_name: str) -> float:
        return self.scales[onnx_name]

    def emit(self, node: Node, layer_id: int) -> list[Descriptor]:
        """The node's layers: one, or four for a transposed conv (one per output phase)."""
        if (why := layout_conflict(self.graph, node.name, self.views)) is not None:
            raise ModelError(f"internal: {why} (the partitioner should have kept it on the CPU)", node.label,
                             node.op_type)
        try:
            if node.kind is OpKind.FUSED_CONV:
                return self._conv(node, layer_id)
            if node.kind is OpKind.MUL:
                return [self._channel_scale(node, layer_id)]
            return [self._other(node, layer_id)]
        except ScaleRangeError as exc:
            raise ModelError(f"{exc}; the layer's values are beyond int8 with the engine's scales (keep it in float "
                             f"with --keep-on-cpu {node.label})", node.label,
                             "Conv" if node.kind is OpKind.FUSED_CONV else node.op_type) from None

    def _other(self, node: Node, layer_id: int) -> Descriptor:
        x = self.views[node.inputs[0]]
        y = self.views[node.outputs[0]]
        d = Descriptor(layer_id=layer_id, batch=y.n, in_h=x.h, in_w=x.w, out_h=y.h, out_w=y.w,
                       conv_h=x.h, conv_w=x.w)
        _set_view(d, "in", x, self._phys(x))
        _set_view(d, "out", y, self._phys(y))
        if node.kind in (OpKind.MAXPOOL, OpKind.RESIZE):           # codes move: one zero point in and out
            unfit = x.zero != y.zero
        else:                                                       # arithmetic that assumes zero = 0
            unfit = any(v.zero for v in [x, y] + [self.views[t] for t in node.inputs[1:] if t in self.views])
        if unfit:
            raise ModelError("internal: zero points this layer cannot take", node.label, node.op_type)
        if node.kind is OpKind.ADD:
            b = self.views[node.inputs[1]]
            d.op = Op.ADD
            _set_view(d, "in2", b, 0)
            d.res_mult_a, d.res_mult_b, d.res_shift = _residual_mults(x.scale, b.scale, y.scale)
        elif node.kind is OpKind.MAXPOOL:
            d.op = Op.MAXPOOL
            _set_pool(d, pool_of(node))
        elif node.kind is OpKind.RESIZE:
            d.op = Op.COPY
            d.flags |= Flag.UPSAMPLE2
        elif node.kind is OpKind.GLOBAL_AVG_POOL:
            d.op = Op.GLOBAL_AVG_POOL
            mult, shift = quantize_multiplier(x.scale / (x.h * x.w * y.scale))
            requant = np.tile(np.array([mult, shift], np.int32), (self._phys(y), 1))
            d.requant_addr = self.arena.put(requant)
        elif node.kind is OpKind.LP_NORMALIZATION:
            d.op = Op.L2NORM
            d.res_mult_a, d.res_shift = quantize_multiplier(1.0 / y.scale)     # the input's scale cancels
            lo, hi = L2NORM_SHIFTS
            if not lo <= d.res_shift <= hi:
                raise ModelError(f"L2 normalisation output scale {y.scale:.3g} outside what the engine encodes "
                                 f"(shift {d.res_shift}, not in {lo}..{hi})", node.label, node.op_type)
        else:
            raise ModelError(f"no engine layer for {node.kind.value}", node.label, node.op_type)
        return d

    def _channel_scale(self, node: Node, layer_id: int) -> Descriptor:
        """A per-channel gate (squeeze-and-excitation): y = x * g[c], rescaled by one multiplier."""
        data, gate = gate_operands(node, self.graph)
        x, g, y = self.views[data], self.views[gate], self.views[node.outputs[0]]
        if x.zero or y.zero or not -255 <= g.zero <= 0:
            raise ModelError("internal: a channel gate of asymmetric tensors", node.label, node.op_type)
        d = Descriptor(op=Op.SCALE, layer_id=layer_id, batch=y.n, in_h=x.h, in_w=x.w, out_h=y.h, out_w=y.w,
                       conv_h=x.h, conv_w=x.w)
        _set_view(d, "in", x, self._phys(x))
        _set_view(d, "out", y, self._phys(y))
        _set_view(d, "in2", g, 0)
        d.res_mult_a, d.res_shift = quantize_multiplier(x.scale * g.scale / y.scale)
        d.res_mult_b = -g.zero              # the gate's offset: 128 for a [0, 1] gate coded with zero point -128
        return d

    def copy(self, src: TensorView, dst: TensorView, layer_id: int) -> Descriptor:
        if src.zero != dst.zero or src.scale != dst.scale:
            raise ModelError(f"internal: a copy of {src.name!r} between different quantisations")
        d = Descriptor(op=Op.COPY, layer_id=layer_id, batch=src.n, in_h=src.h, in_w=src.w, out_h=dst.h,
                       out_w=dst.w, conv_h=src.h, conv_w=src.w)
        _set_view(d, "in", src, self._phys(src))
        _set_view(d, "out", dst, self._phys(dst))
        return d

    def _bias_corrected(self, node: Node, w: np.ndarray, gain: np.ndarray, s_w: np.ndarray, bias: np.ndarray,
                        s_x: float, s_out: float, bound: int) -> np.ndarray:
        """`bias` less the mean error the weights' rounding adds to each output channel, (Wq - W) E[x], from the
        input's calibrated channel means (Nagel et al., "Data-Free Quantization", bias correction). Depthwise
        layers, whose few taps round coarsely, gain most. Only where it moves an output by an eighth of its int8
        step or more, and where the corrected bias still fits beside the accumulation (`bound`); a conv whose kernel
        is its whole input map (a flattened dense layer) reads positions, not channels, and is left alone. `gain`
        [out, in]: the quantised weights' response to a constant unit input channel (sum of Wq; a Winograd layer's
        zero_point_gain)."""
        spec, x = node.conv, self.graph.tensors[node.inputs[0]]
        mean = self.means.get(x.onnx_name)
        whole_map = len(x.shape) == 4 and tuple(x.shape[2:]) == spec.kernel != (1, 1) and not any(spec.pads)
        if mean is None or whole_map or len(mean) != (w.shape[0] if spec.group > 1 else w.shape[1]):
            return bias
        err = gain * s_w[:, None] - w.sum(axis=(2, 3))     # [cout, cin_g]
        mean = np.asarray(mean, np.float64)
        shift = err[:, 0] * mean if spec.group > 1 else err @ mean
        room = ACC_LIMIT - bound - 1
        fits = np.abs((bias - shift) / (s_x * s_w)) <= room
        use = (np.abs(shift) >= s_out / 8) & fits
        if use.any():
            self.bias_corrected.append((node.label, int(use.sum()), len(use)))
        return np.where(use, bias - shift, bias)

    def _conv(self, node: Node, layer_id: int) -> list[Descriptor]:
        g, spec = self.graph, node.conv
        x, y = self.views[node.inputs[0]], self.views[node.outputs[0]]
        w = g.const(spec.weight).astype(np.float64)
        if spec.form is ConvForm.DENSE:
            w = w.reshape(w.shape[0], w.shape[1], 1, 1)
        cout, cin_g, kh, kw = w.shape
        depthwise = spec.group > 1
        transposed = spec.form is ConvForm.TRANSPOSED
        ic_p, oc_p = self._phys(x), self._phys(y)
        s_x = x.scale
        stages = [self._scale(s) for s in stage_names(g, node)]
        steps = list(spec.epilogue)
        pool_at = next((i for i, s in enumerate(steps) if isinstance(s, Pool)), None)
        if pool_at is not None:
            stages[pool_at] = y.scale          # the stage the pool reads has the output's (unified) scale
        stages[-1] = y.scale
        res_at, act1, _ = epilogue_activations(steps)
        table1, table2 = table_activations(steps)
        clamp = act1 is not None and steps[act1].kind in CLAMPS
        prelu = act1 is not None and steps[act1].kind is ActKind.PRELU
        target = stages[act1 + 1] if clamp or prelu else stages[0]      # what the requantiser writes
        last = last_arithmetic_step(node)
        if y.zero and not writes_zero_point(node):
            raise ModelError("internal: an asymmetric output the layer cannot write", node.label, "Conv")
        zero_in_bias = y.zero if last is None or clamp and last == act1 else 0    # else a table writes it
        stage_zero = self.zeros.get(spec.stages[0], 0) if steps and table_first(steps[0]) else 0
        if stage_zero:
            zero_in_bias = stage_zero          # the table's index: the conv output, coded over its useful span

        float_bias = g.const(spec.bias).astype(np.float64) if spec.bias else np.zeros(cout)
        float_bias = float_bias + zero_in_bias * target         # in the bias: the output's zero point
        wino = node.name in self.winograd
        kernel = winograd_weights.transform(w) if wino else w       # a Winograd layer's U = G g G^T
        bound = (winograd.accumulator_bound(cin_g, x.zero) if wino else
                 accumulation_bound(cin_g if transposed else kh * kw * cin_g, x.zero))
        s_w = weight_scales(kernel, float_bias if spec.bias or zero_in_bias else None, s_x, 0, bound=bound)
        out_map = np.asarray(y.channel_map)

        def int_bias(bias: np.ndarray, s_w: np.ndarray, taps: np.ndarray) -> np.ndarray:
            """int bias per output channel; the input's zero point folded in over `taps` (per output channel, its
            response to a unit input: the weights, or a Winograd layer's gain)."""
            return np.rint(bias / (s_x * s_w)).astype(np.int64) \
                - x.zero * taps.reshape(cout, -1).astype(np.int64).sum(axis=1)

        corrected = len(self.bias_corrected)
        for _ in range(WIDEN_TRIES):     # coarser weights where the accumulation would pass the 27 bits (ABI v3)
            del self.bias_corrected[corrected:]
            wq = np.clip(np.rint(kernel / s_w[:, None, None, None]), -127, 127).astype(np.int8)
            gain = winograd.zero_point_gain(wq) if wino else wq.sum(axis=(2, 3), dtype=np.int64)
            bias = float_bias if transposed else self._bias_corrected(node, w, gain, s_w, float_bias, s_x, target,
                                                                        bound)
            if transposed:          # each phase a 1x1 conv of its own taps
                worst = np.max([requant_input_bound(wq[:, :, dy:dy + 1, dx:dx + 1],
                                                    int_bias(bias, s_w, wq[:, :, dy, dx]))
                                for dy in range(2) for dx in range(2)], axis=0)
            else:
                worst = requant_input_bound(wq, int_bias(bias, s_w, gain), wino)
            if (worst <= REQUANT_LIMIT).all():
                break
            s_w = np.where(worst > REQUANT_LIMIT, s_w * (worst / (0.999 * REQUANT_LIMIT)), s_w)
        else:
            raise ModelError(f"its accumulation does not fit the engine's 27-bit requantisation input after "
                             f"{WIDEN_TRIES} rounds of coarser weights", node.label, node.op_type)
        float_bias = bias
        plain = np.max(np.abs(kernel.reshape(cout, -1)), axis=1) / 127.0
        widened = s_w > plain * (1 + 1e-9)
        if widened.any():
            dead = widened & (plain * 127.0 < 0.5 * s_w)        # every weight of the channel rounds to 0
            live = widened & ~dead
            coarser = float(np.max(s_w[live] / np.maximum(plain[live], 1e-30))) if live.any() else 0.0
            self.bias_dominated.append((node.label, int(widened.sum()), cout, coarser, int(dead.sum())))

        def bias_of(taps: np.ndarray) -> np.ndarray:
            """int32 bias per physical channel (`int_bias`)."""
            b = np.zeros(oc_p, np.int64)
            b[out_map] = int_bias(float_bias, s_w, taps)
            return b.astype(np.int32)

        if transposed:      # a phase: a 1x1 conv over the input, written interleaved
            d = Descriptor(op=Op.CONV, layer_id=layer_id, batch=y.n, in_h=x.h, in_w=x.w, out_h=y.h // 2,
                           out_w=y.w // 2, conv_h=x.h, conv_w=x.w, out_step=2)
        else:
            d = Descriptor(op=Op.CONV, layer_id=layer_id, batch=y.n, in_h=x.h, in_w=x.w, out_h=y.h, out_w=y.w,
                           kh=kh, kw=kw, stride_h=spec.strides[0], stride_w=spec.strides[1],
                           dil_h=spec.dilations[0], dil_w=spec.dilations[1])
            d.pad_t, d.pad_l, d.pad_b, d.pad_r = spec.pads
            d.conv_h, d.conv_w = conv_output_hw(node, g)
            if x.column_taps > 1:          # its input column-packed: a kernel row's taps in one pixel's channels
                d.kw, d.pad_l, d.pad_r = 1, 0, 0
        if spec.upsample == 2:
            d.flags |= Flag.UPSAMPLE2
        if depthwise:
            d.flags |= Flag.DEPTHWISE
        if wino:
            d.flags |= Flag.WINOGRAD
        _set_view(d, "in", x, ic_p)
        _set_view(d, "out", y, oc_p)

        d.in_zero = x.zero
        if clamp:
            act = steps[act1]
            lo, hi = {ActKind.RELU: (0.0, None), ActKind.RELU6: (0.0, 6.0)}.get(act.kind, (act.lo, act.hi))
            d.act1 = Act.CLAMP
            d.act_lo = -128 if lo is None else int(np.clip(np.rint(lo / target) + zero_in_bias, -128, 127))
            d.act_hi = 127 if hi is None else int(np.clip(np.rint(hi / target) + zero_in_bias, -128, 127))
        elif table1 is not None:
            d.act1 = Act.LUT
            d.lut1_addr = self.arena.put(lut(steps[table1], stages[0], stages[table1 + 1],
                                             y.zero if last == table1 else 0, stage_zero))
        after_act1 = stages[act1 + 1] if act1 is not None else stages[0]
        requant = np.zeros((oc_p, 2), np.int32)
        if prelu:
            if y.zero:
                raise ModelError("internal: an asymmetric PRelu output", node.label, "PRelu")
            d.flags |= Flag.PRELU
            requant[out_map] = prelu_requant(s_x * s_w / target, np.asarray(steps[act1].slopes, np.float64))
        else:
            for o in range(cout):
                requant[out_map[o]] = quantize_multiplier(s_x * s_w[o] / target)
        if res_at is not None:
            r = self.views[steps[res_at].tensor]
            if r.zero:
                raise ModelError("internal: an asymmetric residual operand", node.label, "Add")
            d.flags |= Flag.RESIDUAL
            _set_view(d, "in2", r, 0)
            d.res_mult_a, d.res_mult_b, d.res_shift = _residual_mults(after_act1, r.scale, stages[res_at + 1])
        if table2 is not None:
            d.act2 = Act.LUT
            d.lut2_addr = self.arena.put(lut(steps[table2], stages[table2], stages[table2 + 1],
                                             y.zero if last == table2 else 0))
        if pool_at is not None:
            _set_pool(d, steps[pool_at])
        if not transposed:
            # column-packed input: weight (o, c, ky, j) is that of channel j * cin + c of a kh x 1 kernel
            taps = wq if x.column_taps == 1 else wq.transpose(0, 3, 1, 2).reshape(cout, kw * cin_g, kh, 1)
            d.weight_addr = self.arena.put(self._pack(taps, x, out_map, oc_p, ic_p, depthwise))
        phases = [(dy, dx, self.arena.put(self._pack(wq[:, :, dy:dy + 1, dx:dx + 1], x, out_map, oc_p, ic_p, False)))
                  for dy, dx in (((0, 0), (0, 1), (1, 0), (1, 1)) if transposed else ())]
        d.requant_addr = self.arena.put(requant)
        if not transposed:
            d.bias_addr = self.arena.put(bias_of(gain))
            return [d]
        shared = self.arena.put(bias_of(wq)) if not x.zero else None
        return [replace(d, layer_id=layer_id + i, out_phase_y=dy, out_phase_x=dx, weight_addr=addr,
                        bias_addr=shared if shared is not None else self.arena.put(bias_of(wq[:, :, dy, dx])))
                for i, (dy, dx, addr) in enumerate(phases)]

    def _pack(self, wq: np.ndarray, x: TensorView, out_map: np.ndarray, oc_p: int, ic_p: int,
              depthwise: bool) -> np.ndarray:
        """int8 weights [out, in, kh, kw] in the order the engine reads them (docs/kernel-abi.md, Weights)."""
        cfg = self.config
        cout, _, kh, kw = wq.shape
        if depthwise:
            full = np.zeros((oc_p, kh, kw), np.int8)
            full[out_map] = wq[:, 0]
            packed = full.reshape(oc_p // cfg.vec, cfg.vec, kh, kw).transpose(0, 2, 3, 1)
        else:
            full = np.zeros((oc_p, kh, kw, ic_p), np.int8)
            full[np.ix_(out_map, range(kh), range(kw), np.asarray(x.channel_map))] = wq.transpose(0, 2, 3, 1)
            packed = full.reshape(oc_p // cfg.pe_rows, cfg.pe_rows, kh, kw, ic_p // cfg.vec, cfg.vec)
            packed = packed.transpose(0, 2, 3, 4, 1, 5)
        return np.ascontiguousarray(packed)
