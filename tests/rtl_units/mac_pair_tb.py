"""cocotb: two products (int8 weights, an int8 or 10-bit shared operand: the width of x_i) from one packed
multiplier equal the plain products, edge values and random, one operand set a clock, out three enabled clocks later
(AREG, MREG, PREG); with en_i low the pipeline holds."""
import itertools
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge

EDGES = [-128, -127, -64, -1, 0, 1, 2, 63, 127]
LATENCY = 3


@cocotb.test()
async def packed_products_are_exact(dut):
    rng = random.Random(1)
    top = 1 << (len(dut.x_i) - 1)                   # the shared operand's range: -top .. top - 1
    x_edges = sorted(set(EDGES + [-top, -top + 1, top - 1, top // 2]))
    cases = list(itertools.product(x_edges, EDGES, EDGES))
    cases += [(rng.randint(-top, top - 1), rng.randint(-128, 127), rng.randint(-128, 127)) for _ in range(3000)]
    cocotb.start_soon(Clock(dut.clk_i, 10, unit="ns").start())
    sent = []                    # operand sets in the pipeline, oldest first
    checked = 0
    for step in range(len(cases) + LATENCY + 40):
        await FallingEdge(dut.clk_i)
        if len(sent) >= LATENCY:     # the oldest set has been through LATENCY enabled clocks: its products are out
            x, hi, lo = sent.pop(0)
            assert dut.p_hi_o.value.to_signed() == hi * x, (x, hi, lo)
            assert dut.p_lo_o.value.to_signed() == lo * x, (x, hi, lo)
            checked += 1
        stall = step % 7 == 3           # now and then the pipeline holds: nothing moves, nothing is lost
        dut.en_i.value = 0 if stall else 1
        if not stall:
            x, hi, lo = cases[step % len(cases)] if step < len(cases) else (0, 0, 0)
            dut.x_i.value = x
            dut.w_hi_i.value = hi
            dut.w_lo_i.value = lo
            sent.append((x, hi, lo))
        await RisingEdge(dut.clk_i)
    assert checked > len(cases) * 0.8
