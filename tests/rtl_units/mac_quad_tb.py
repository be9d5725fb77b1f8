"""cocotb: four products (int8 weights, an int8 or 10-bit x: the width of x_i) per fabric clock from one multiplier
clocked twice as fast (mac_quad.sv) equal the plain products, edge values and random, one operand set a fabric
clock, out four enabled fabric clocks later; with en_i low for a fabric clock both clocks' pipelines hold. The fast
clock starts in phase with the fabric one and, in a second run, a fast cycle late, as a clocking wizard's outputs
may after lock (the fast side finds its phase)."""
import itertools
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge, Timer

EDGES = [-128, -127, -1, 0, 1, 127]
LATENCY = 4


def _signed(v: int, bits: int) -> int:
    return v - (1 << bits) if v >> (bits - 1) & 1 else v


async def _products_are_exact(dut, seed: int, fast_delay_ns: int):
    rng = random.Random(seed)
    top = 1 << (len(dut.x_i) - 1)                   # x's range: -top .. top - 1
    qw = len(dut.x_i) + 8                           # a product's bits in p_o
    x_edges = sorted(set(EDGES + [-top, top - 1]))
    cases = [(x, (w, -w if w > -128 else 127, rng.randint(-128, 127), w)) for x, w in itertools.product(x_edges, EDGES)]
    cases += [(rng.randint(-top, top - 1), tuple(rng.randint(-128, 127) for _ in range(4))) for _ in range(3000)]
    cocotb.start_soon(Clock(dut.clk_i, 10, unit="ns").start())
    if fast_delay_ns:
        await Timer(fast_delay_ns, unit="ns")
    cocotb.start_soon(Clock(dut.clk2x_i, 5, unit="ns").start())
    dut.en_i.value = 0
    for _ in range(4):                   # the fast side settles on its phase within a fabric cycle
        await RisingEdge(dut.clk_i)
    sent = []
    checked = given = 0
    while checked < len(cases):
        await FallingEdge(dut.clk_i)
        if len(sent) >= LATENCY:
            x, w = sent.pop(0)
            p = int(dut.p_o.value)
            got = [_signed((p >> (qw * k)) & ((1 << qw) - 1), qw) for k in range(4)]
            assert got == [x * wk for wk in w], (x, w, got)
            checked += 1
        stall = rng.random() < 0.2
        dut.en_i.value = 0 if stall else 1
        if not stall:
            x, w = cases[given] if given < len(cases) else (0, (0, 0, 0, 0))
            given += 1
            dut.x_i.value = x
            dut.w_i.value = sum((wk & 0xFF) << (8 * k) for k, wk in enumerate(w))
            sent.append((x, w))
        await RisingEdge(dut.clk_i)


@cocotb.test()
async def products_are_exact_in_phase(dut):
    await _products_are_exact(dut, 1, 0)


@cocotb.test()
async def products_are_exact_with_the_fast_clock_started_late(dut):
    await _products_are_exact(dut, 2, 5)
