"""cocotb: two lanes' packed MAC pairs in cascaded DSPs (mac_cascade.sv), by lane_pairs.check_lane_pairs."""
import cocotb
from cocotb.clock import Clock
from lane_pairs import check_lane_pairs


@cocotb.test()
async def lane_pair_sums_then_split_products(dut):
    cocotb.start_soon(Clock(dut.clk_i, 10, unit="ns").start())
    await check_lane_pairs(dut, 0, 1)
    await check_lane_pairs(dut, 1, 2)
    await check_lane_pairs(dut, 0, 3)
