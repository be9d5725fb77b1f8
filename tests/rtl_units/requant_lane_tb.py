"""cocotb: the RTL requantiser, ADD and residual rescales and channel gate against fpga_runtime.abi, bit for bit."""
import random

import cocotb
import numpy as np
from cocotb.triggers import Timer

from fpga_runtime.abi import requantize, saturate8, shift_round


@cocotb.test()
async def integer_semantics_match_the_abi(dut):
    rng = random.Random(2)
    # the 27-bit requantisation input's ends (ABI v3) and int32's
    i32 = [-(2 ** 31), -(2 ** 31) + 1, -(2 ** 26), -1, 0, 1, 2 ** 26 - 1, 2 ** 26, 2 ** 30, 2 ** 31 - 1]
    for k in range(4000):
        acc = rng.choice(i32) if k % 5 == 0 else rng.randint(-(2 ** 31), 2 ** 31 - 1)
        mult = rng.choice([0, 1, 2 ** 16, 2 ** 17 - 1]) if k % 7 == 0 else rng.randint(0, 2 ** 17 - 1)
        shift = rng.choice([0, 1, 31, 40, 41, 43, 44, 47, 48, 62]) if k % 3 == 0 else rng.randint(0, 62)
        a, b = rng.randint(-128, 127), rng.randint(-128, 127)
        ma, mb = rng.randint(0, 2 ** 17 - 1), rng.randint(0, 2 ** 17 - 1)       # ABI v2: [0, 2^17)
        dut.acc.value, dut.mult.value, dut.shift.value = acc, mult, shift
        dut.a.value, dut.b.value, dut.mult_a.value, dut.mult_b.value = a, b, ma, mb
        await Timer(1, unit="ns")
        want = int(requantize(np.array([acc]), np.array([mult]), np.array([shift]))[0])
        assert dut.q.value.to_signed() == want, (acc, mult, shift)
        added = int(saturate8(shift_round(np.int64(a) * ma + np.int64(b) * mb, shift)))
        assert dut.added.value.to_signed() == added, (a, b, ma, mb, shift)
        assert dut.residual.value.to_signed() == added, (a, b, ma, mb, shift)
        gated = int(saturate8(shift_round(np.int64(a) * b * ma, shift)))
        assert dut.gated.value.to_signed() == gated, (a, b, ma, shift)


@cocotb.test()
async def saturating_shift_decided_beside_the_shift(dut):
    """The two-stage saturating shift (and its form with the shift split at a multiple of eight) against
    saturate8(v >> s) on the values where saturation starts (+-128 * 2^s and one either side), at every shift below
    52, and on the 52-bit extremes."""
    rng = random.Random(5)
    top = 2 ** 51
    for shift in range(52):
        edges = [128 << shift, -(128 << shift)]
        values = [v + e for v in edges for e in (-1, 0, 1)]
        values += [-top, top - 1, 0, -1] + [rng.randint(-top, top - 1) for _ in range(8)]
        for v in values:
            if not -top <= v < top:
                continue
            dut.wide.value, dut.shift.value = v, shift
            await Timer(1, unit="ns")
            want = max(-128, min(127, v >> shift))
            assert dut.wide_q.value.to_signed() == want, (v, shift)
            assert dut.wide_split_q.value.to_signed() == want, (v, shift)
