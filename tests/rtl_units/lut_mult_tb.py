"""cocotb: lut_mult's output is a * b (unsigned, modulo 2^PW) of the operands given three enabled clocks before, over
the operand ranges' edges and random values; with en_i low the pipeline holds."""
import itertools
import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge

LATENCY = 3


@cocotb.test()
async def products_are_exact(dut):
    aw, bw, pw = int(os.environ["LUT_AW"]), int(os.environ["LUT_BW"]), int(os.environ["LUT_PW"])
    rng = random.Random(aw * 100 + bw)
    edges = lambda bits: [0, 1, 2, (1 << (bits - 1)) - 1, 1 << (bits - 1), (1 << bits) - 2, (1 << bits) - 1]  # noqa: E731
    cases = list(itertools.product(edges(aw), edges(bw)))
    cases += [(rng.getrandbits(aw), rng.getrandbits(bw)) for _ in range(3000)]
    cocotb.start_soon(Clock(dut.clk_i, 10, unit="ns").start())
    sent = []                        # (a, b) in the pipeline, oldest first
    checked = 0
    for step in range(len(cases) + LATENCY + 40):
        await FallingEdge(dut.clk_i)
        if len(sent) >= LATENCY:
            a, b = sent.pop(0)
            assert int(dut.p_o.value) == (a * b) % (1 << pw), (a, b)
            checked += 1
        stall = step % 7 == 3
        dut.en_i.value = 0 if stall else 1
        if not stall:
            a, b = cases[step % len(cases)] if step < len(cases) else (0, 0)
            dut.a_i.value = a
            dut.b_i.value = b
            sent.append((a, b))
        await RisingEdge(dut.clk_i)
    assert checked > len(cases) * 0.8
