"""cocotb: two int8 products from one packed multiplier equal the plain products, edge values and random."""
import itertools
import random

import cocotb
from cocotb.triggers import Timer

EDGES = [-128, -127, -64, -1, 0, 1, 2, 63, 127]


@cocotb.test()
async def packed_products_are_exact(dut):
    rng = random.Random(1)
    cases = list(itertools.product(EDGES, EDGES, EDGES))
    cases += [(rng.randint(-128, 127), rng.randint(-128, 127), rng.randint(-128, 127)) for _ in range(3000)]
    for x, hi, lo in cases:
        dut.x.value = x
        dut.w_hi.value = hi
        dut.w_lo.value = lo
        await Timer(1, unit="ns")
        assert dut.p_hi.value.to_signed() == hi * x, (x, hi, lo)
        assert dut.p_lo.value.to_signed() == lo * x, (x, hi, lo)
