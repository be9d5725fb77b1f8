"""cocotb: two lanes' packed MAC pairs on one DSP clocked twice as fast (mac_quad.sv), by lane_pairs.check_lane_pairs,
the sums four enabled fabric clocks after the operands; with en_i low for a fabric clock both clocks' pipelines hold.
The fast clock starts in phase with the fabric one and, in a second run, a fast cycle late, as a clocking wizard's
outputs may after lock (the fast side finds its phase)."""
import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, Timer
from lane_pairs import check_lane_pairs


async def _clocks(dut, fast_delay_ns: int):
    cocotb.start_soon(Clock(dut.clk_i, 10, unit="ns").start())
    if fast_delay_ns:
        await Timer(fast_delay_ns, unit="ns")
    cocotb.start_soon(Clock(dut.clk2x_i, 5, unit="ns").start())
    dut.en_i.value = 0
    for _ in range(4):                   # the fast side settles on its phase within a fabric cycle
        await RisingEdge(dut.clk_i)


@cocotb.test()
async def lane_pair_sums_then_split_products_in_phase(dut):
    await _clocks(dut, 0)
    await check_lane_pairs(dut, 0, 1)
    await check_lane_pairs(dut, 1, 2)
    await check_lane_pairs(dut, 0, 3)


@cocotb.test()
async def lane_pair_sums_with_the_fast_clock_started_late(dut):
    await _clocks(dut, 5)
    await check_lane_pairs(dut, 0, 4)
    await check_lane_pairs(dut, 1, 5)
