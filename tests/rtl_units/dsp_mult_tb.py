"""cocotb: dsp_mult's output is a * b (+ c) of the operands given three enabled clocks before, with c taken at the
last of them, over the operand ranges' edges and random values; with en_i low the pipeline holds."""
import itertools
import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge

LATENCY = 3


def _edges(bits: int) -> list[int]:
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return [lo, lo + 1, -1, 0, 1, hi - 1, hi]


@cocotb.test()
async def products_are_exact(dut):
    aw, bw, pw = int(os.environ["DSP_AW"]), int(os.environ["DSP_BW"]), int(os.environ["DSP_PW"])
    use_c = os.environ["DSP_USE_C"] == "1"
    rng = random.Random(aw * 100 + bw)
    c_edges = _edges(pw) if use_c else [0]
    cases = list(itertools.product(_edges(aw), _edges(bw), c_edges))
    rand = lambda bits: rng.randint(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)   # noqa: E731
    cases += [(rand(aw), rand(bw), rand(pw) if use_c else 0) for _ in range(3000)]
    wrap = lambda v: ((v + (1 << (pw - 1))) % (1 << pw)) - (1 << (pw - 1))      # noqa: E731
    cocotb.start_soon(Clock(dut.clk_i, 10, unit="ns").start())
    dut.c_i.value = 0
    sent = []                        # (a, b, c) in the pipeline, oldest first; c is the one applied last
    checked = 0
    for step in range(len(cases) + LATENCY + 40):
        await FallingEdge(dut.clk_i)
        if len(sent) >= LATENCY:
            a, b, c = sent.pop(0)
            assert dut.p_o.value.to_signed() == wrap(a * b + c), (a, b, c)
            checked += 1
        stall = step % 7 == 3
        dut.en_i.value = 0 if stall else 1
        if not stall:
            a, b, c = cases[step % len(cases)] if step < len(cases) else (0, 0, 0)
            dut.a_i.value = a
            dut.b_i.value = b
            sent.append([a, b, 0])
            if len(sent) >= LATENCY:  # this edge is the last one of the oldest set: its output register takes c now
                sent[0][2] = c
                dut.c_i.value = c
        await RisingEdge(dut.clk_i)
    assert checked > len(cases) * 0.8
