"""cocotb: the AXI burst reader under random back-pressure on every channel. Runs of every length (padded
runs too, runs across 4 KiB boundaries, longer than 256 beats, starting anywhere in a page) come out in order,
beat for beat, with their tags; every burst is INCR, at most 256 beats, inside one 4 KiB page; no more than
MAX_OUT in flight; never idle with a beat offered, idle once the last is taken. The beat width is the DUT's (DW)."""
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

BEAT = 16                   # bytes of a beat: set from the DUT's DW when the test starts
MAX_OUT = 4


def word(addr: int) -> int:
    """Memory content: each beat holds its own address in every 32-bit word."""
    return sum((addr & 0xFFFFFFFF) << (32 * i) for i in range(BEAT // 4))


async def memory(dut, rng, log):
    """An AXI read slave that accepts addresses and returns beats with random stalls, in order."""
    pending = []
    outstanding = 0
    while True:
        dut.m_arready.value = int(rng.random() < 0.6)
        if pending and rng.random() < 0.7:
            addr, left = pending[0]
            dut.m_rvalid.value = 1
            dut.m_rdata.value = word(addr)
            dut.m_rlast.value = int(left == 1)
        else:
            dut.m_rvalid.value = 0
        await ReadOnly()
        if dut.m_arvalid.value and dut.m_arready.value:
            addr, beats = int(dut.m_araddr.value), int(dut.m_arlen.value) + 1
            assert int(dut.m_arburst.value) == 1 and beats <= 256
            assert addr // 4096 == (addr + beats * BEAT - 1) // 4096, "burst crosses 4 KiB"
            log.append((addr, beats))
            pending_new = (addr, beats)
        else:
            pending_new = None
        took = dut.m_rvalid.value and dut.m_rready.value
        await RisingEdge(dut.clk)
        if took:
            addr, left = pending[0]
            if left == 1:
                pending.pop(0)
                outstanding -= 1
            else:
                pending[0] = (addr + BEAT, left - 1)
        if pending_new:
            pending.append(pending_new)
            outstanding += 1
        assert outstanding <= MAX_OUT


@cocotb.test()
async def runs_come_back_in_order_under_backpressure(dut):
    global BEAT
    BEAT = len(dut.beat_data) // 8
    rng = random.Random(3)
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.rst_n.value = 0
    dut.run_valid.value = 0
    dut.beat_ready.value = 0
    dut.m_rvalid.value = 0
    dut.m_arready.value = 0
    for _ in range(3):
        await RisingEdge(dut.clk)
    dut.rst_n.value = 1
    runs = []
    for k in range(120):
        beats = rng.choice([1, 1, 2, 3, 8, 16, 64, 300])
        addr = rng.randrange(0, 1 << 20) * BEAT
        if k % 17 == 0:
            addr = 4096 - 2 * BEAT          # crosses a 4 KiB page
        elif k % 13 == 0:                   # long, from inside a page: bursts cut at page and 256-beat bounds
            addr, beats = 8192 + rng.randrange(1, 4096 // BEAT) * BEAT, rng.choice([257, 300, 700])
        runs.append((addr, beats, rng.random() < 0.2, rng.randrange(256), k))
    expected = []
    for addr, beats, pad, fill, tag in runs:
        for i in range(beats):
            data = int.from_bytes(bytes([fill]) * BEAT, "little") if pad else word(addr + i * BEAT)
            expected.append((data, tag, i, i == beats - 1))
    log = []
    cocotb.start_soon(memory(dut, rng, log))

    async def feed():
        for addr, beats, pad, fill, tag in runs:
            dut.run_valid.value = 1
            dut.run_addr.value, dut.run_beats.value = addr, beats
            dut.run_pad.value, dut.run_fill.value, dut.run_tag.value = int(pad), fill, tag
            while True:
                await RisingEdge(dut.clk)
                if dut.run_ready.value:
                    break
            dut.run_valid.value = 0
            for _ in range(rng.choice([0, 0, 1, 3])):
                await RisingEdge(dut.clk)

    cocotb.start_soon(feed())
    got = []
    cycles = 0
    while len(got) < len(expected):
        dut.beat_ready.value = int(rng.random() < 0.7)
        await ReadOnly()
        assert not (dut.idle.value and dut.beat_valid.value), "idle with a beat offered"
        if dut.beat_valid.value and dut.beat_ready.value:
            got.append((int(dut.beat_data.value), int(dut.beat_tag.value), int(dut.beat_idx.value),
                        bool(dut.beat_last.value)))
        await RisingEdge(dut.clk)
        cycles += 1
        assert cycles < 200_000, f"stuck after {len(got)} of {len(expected)} beats"
    for _ in range(4):                      # idle (a register) a cycle or two after the last beat
        await RisingEdge(dut.clk)
    await ReadOnly()
    assert dut.idle.value, "not idle after its last beat"
    for k, (g, e) in enumerate(zip(got, expected)):
        assert g == e, (k, g, e)
    real = sum(b for a, b, pad, f, t in runs if not pad)
    assert sum(b for _, b in log) == real
