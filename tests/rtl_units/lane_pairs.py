"""The check both lane-pair benches run (mac_cascade_tb.py, mac_quad_tb.py): each row's sum of two lanes' products
exactly, four enabled clocks after the operands, and the first lane's own products beside them; with `split_i` the
sums are the second lane's products alone. Edge values (x at both ends of its range, weights -128 and 127; for 10-bit
x the weights a Winograd layer may have, [-127, 127]) and random ones, with random stalls."""
import itertools
import random

from cocotb.triggers import FallingEdge, RisingEdge

LATENCY = 4


async def check_lane_pairs(dut, split: int, seed: int):
    rng = random.Random(seed)
    xbits = len(dut.x0_i)
    top = 1 << (xbits - 1)
    wlo = -128 if xbits == 8 else -127
    x_edges = [-top, -top + 1, -1, 0, 1, top - 1]
    w_edges = [wlo, wlo + 1, -1, 0, 1, 127]
    cases = [(x, x, (w, w, w, w)) for x, w in itertools.product(x_edges, w_edges)]
    cases += [(x0, x1, (w, -w if w > -127 else 127, w, w)) for x0, x1, w in itertools.product(x_edges, x_edges,
                                                                                               [wlo, 127])]
    cases += [(rng.randint(-top, top - 1), rng.randint(-top, top - 1), tuple(rng.randint(wlo, 127) for _ in range(4)))
              for _ in range(2000)]
    dut.split_i.value = split
    dut.en_i.value = 0
    sent = []
    checked = given = 0
    while checked < len(cases):
        await FallingEdge(dut.clk_i)
        if len(sent) >= LATENCY:
            x0, x1, (w0h, w0l, w1h, w1l) = sent.pop(0)
            want_hi = x1 * w1h + (0 if split else x0 * w0h)
            want_lo = x1 * w1l + (0 if split else x0 * w0l)
            assert dut.sum_hi_o.value.to_signed() == want_hi, (x0, x1, w0h, w1h, split)
            assert dut.sum_lo_o.value.to_signed() == want_lo, (x0, x1, w0l, w1l, split)
            assert dut.p0_hi_o.value.to_signed() == x0 * w0h and dut.p0_lo_o.value.to_signed() == x0 * w0l
            checked += 1
        stall = rng.random() < 0.2
        dut.en_i.value = 0 if stall else 1
        if not stall:
            case = cases[given] if given < len(cases) else (0, 0, (0, 0, 0, 0))
            given += 1
            x0, x1, (w0h, w0l, w1h, w1l) = case
            dut.x0_i.value = x0
            dut.x1_i.value = x1
            dut.w0_hi_i.value, dut.w0_lo_i.value, dut.w1_hi_i.value, dut.w1_lo_i.value = w0h, w0l, w1h, w1l
            sent.append(case)
        await RisingEdge(dut.clk_i)
    # drain with the pipeline moving, so the next run starts from operands it sent
    dut.en_i.value = 1
    for _ in range(LATENCY + 1):
        await RisingEdge(dut.clk_i)
