"""cocotb: pixel_address's output is base + ((n * h + y) * w + x) * stride + add of the operands given
ADDRESS_LATENCY enabled clocks before, wrapped at 32 bits (33 with wide_i), beat-aligned with align_i, 0 with
zero_i: over random pixels of tensors up to MAX_PIXELS pixels, their last pixel, and random stalls."""
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge

from fpga_runtime.abi import MAX_PIXELS

LATENCY = 8
BEAT = 16


def _case(rng: random.Random) -> dict:
    w = rng.choice([1, 2, 13, 416, 2048, 65535, rng.randint(1, 65535)])
    rows = max(1, rng.randint(1, (MAX_PIXELS - 1) // w))
    ny = rng.choice([0, rows - 1, rng.randrange(rows)])
    x = rng.choice([0, w - 1, rng.randrange(w)])
    if ny == rows - 1 and rng.random() < 0.5:   # the tensor's last pixel
        x = w - 1
    nh = rng.randint(0, ny)
    return {"nh": nh, "y": ny - nh, "x": x, "w": w, "stride": rng.choice([1, 16, 255, 4096, 65535,
                                                                       rng.randint(1, 65535)]),
            "base": rng.getrandbits(32), "add": rng.getrandbits(32), "wide": rng.random() < 0.3,
            "align": rng.random() < 0.3, "zero": rng.random() < 0.1}


def _address(c: dict) -> int:
    pixel = (c["base"] + ((c["nh"] + c["y"]) * c["w"] + c["x"]) * c["stride"]) % (1 << 32)
    total = pixel + c["add"]
    total %= 1 << (33 if c["wide"] else 32)
    if c["zero"]:
        return 0
    return total & ~(BEAT - 1) if c["align"] else total


@cocotb.test()
async def addresses_are_exact(dut):
    rng = random.Random(26)
    cases = [_case(rng) for _ in range(4000)]
    cocotb.start_soon(Clock(dut.clk_i, 10, unit="ns").start())
    sent = []
    checked = 0
    for step in range(len(cases) + 3 * LATENCY):
        await FallingEdge(dut.clk_i)
        if len(sent) >= LATENCY:
            c = sent.pop(0)
            assert dut.addr_o.value.to_unsigned() == _address(c), c
            checked += 1
        stall = rng.random() < 0.2
        dut.en_i.value = 0 if stall else 1
        if not stall:
            c = cases[step] if step < len(cases) else _case(rng)
            for name in ("nh", "y", "x", "w", "stride", "base", "add", "wide", "align", "zero"):
                getattr(dut, f"{name}_i").value = int(c[name])
            sent.append(c)
        await RisingEdge(dut.clk_i)
    assert checked > len(cases) * 0.7
