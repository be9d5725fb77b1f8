"""`partition --synth`: yosys synth_xilinx of the build's RTL engine into fpga/synth/resources.json, and the
report beside the resource model. The synthesis itself takes minutes, so it is in the slow tier."""
from __future__ import annotations

import json

import pytest

from fpga_runtime.abi import EngineConfig
from partitioner.build import PartitionConfig, run_partition
from partitioner.codegen.synth import count_resources, yosys_command


def test_cells_become_board_resources():
    cells = {"DSP48E2": 130, "RAMB36E2": 3, "RAMB18E2": 5, "URAM288": 2, "LUT6": 10, "LUT2": 5, "RAM64M8": 4,
             "SRLC32E": 1, "FDRE": 40, "FDSE": 2, "CARRY8": 9, "IBUF": 7}
    r = count_resources(cells, "xcup")
    assert r == {"DSP": 130, "BRAM36": 5.5, "URAM": 2, "LUT": 10 + 5 + 4 * 8 + 1, "FF": 42, "family": "xcup"}


@pytest.mark.parametrize("uram", [0, 1])
def test_the_weight_ram_is_the_memory_the_instance_asks_for(tmp_path, uram):
    """weight_ram.sv with URAM set maps to UltraRAM, else to block RAM, whatever yosys would pick by cost (at 2 x
    1,024 rows of 128 bits it picks UltraRAM; Vivado infers UltraRAM only from the attribute): two banks of 2,048
    words x 128 bits, each 2 URAM288 (4,096 x 72) or 8 BRAM36 (as the resource model counts, yosys 7.5)."""
    import shutil
    import subprocess

    from hls_templates import RTL
    shutil.copyfile(RTL / "weight_ram.sv", tmp_path / "weight_ram.sv")
    script = (f"read_verilog -sv weight_ram.sv; chparam -set URAM {uram} -set R 2 -set WROWS 1024 weight_ram; "
              "synth_xilinx -family xcup -top weight_ram -uram; tee -q -o stat.json stat -json")
    subprocess.run([*yosys_command(), "-q", "-p", script], cwd=tmp_path, check=True, capture_output=True,
                   timeout=600)
    cells = json.loads((tmp_path / "stat.json").read_text())["design"]["num_cells_by_type"]
    r = count_resources(cells, "xcup")
    assert (r["URAM"], r["BRAM36"] > 0) == ((4, False) if uram else (0, True))
    assert uram or 7 <= r["BRAM36"] <= 16


@pytest.mark.slow
def test_partition_synth_writes_resources(tmp_path, zoo):
    out = tmp_path / "b"
    run_partition(PartitionConfig(model=zoo("two-branch"), out_dir=out, picture=False, accuracy=False,
                                  offload_everything=True, synth=True, engine=EngineConfig(vec=8, pe_rows=8)))
    r = json.loads((out / "fpga" / "synth" / "resources.json").read_text())
    assert r["family"] == "xcup"
    assert r["DSP"] >= 8 * 8 // 2            # the MAC array alone: two int8 products per DSP48E2
    assert r["BRAM36"] + r["URAM"] > 0 and r["LUT"] > 0 and r["FF"] > 0
    assert (out / "fpga" / "synth" / "yosys.log").stat().st_size > 0
    report = (out / "report.md").read_text()
    assert "## Synthesis (yosys synth_xilinx" in report
    timing = json.loads((out / "fpga" / "synth" / "timing.json").read_text())
    assert set(timing) >= {"clock_mhz", "estimated_fmax_mhz", "model", "worst_paths"}
    assert timing["clock_mhz"] == json.loads((out / "plan.json").read_text())["engine_config"]["clock_mhz"]
    assert len(timing["worst_paths"]) == 10
    for path in timing["worst_paths"]:
        assert set(path) >= {"from", "to", "lut_levels", "carry_bits", "dsp", "ram", "delay_ns"}
        assert not path["from"].startswith("$") and path["delay_ns"] > 0
    assert timing["estimated_fmax_mhz"] == pytest.approx(1000 / timing["worst_paths"][0]["delay_ns"], rel=1e-3)
    # every DSP48E2 with its pipeline registers (dsp_mult.sv): the MAC array's (8 x 8 / 2 pairs, mac_pair.sv), the
    # epilogue's one per lane (ABI v3: x * m on one 27 x 18 product), the pixel addresses' and the per-request
    # products (a layer's are in the fabric, lut_mult.sv); none inferred without them. Convs and a concat: the
    # build leaves out the lane products, the L2 factor and the epilogue's second-operand stage (engine_parts.py),
    # 8 + 1 + 2 x 8 DSPs; the control's five: the address generator's pixel address (two), a constant run's two
    # and a window row's beats (the twenty-seventh RTL; the layer's three products were DSPs before)
    config = json.loads((out / "fpga" / "engine.json").read_text())["config"]
    assert not config["lane_products"] and not config["residual_stage"]
    assert timing["dsp_cells"] == 8 * 8 // 2 + 8 + 5
    assert timing["dsp_without_mreg_preg"] == 0
    # the array's lane pairs summed in cascaded DSPs (mac_cascade.sv): one per two lanes of every two rows
    assert timing["dsp_cascaded"] == (8 // 2) * (8 // 2)
    assert f"Estimated Fmax **{timing['estimated_fmax_mhz']:.0f} MHz**" in report
    assert not (out / "fpga" / "synth" / "netlist.json").exists()
    # the build's clock came from the exploration's Fmax model, and the synthesised engine reaches it
    assert timing["estimated_fmax_mhz"] >= timing["clock_mhz"]
    assert "the synthesised engine's estimated Fmax" not in report


@pytest.mark.slow
def test_double_pumped_engine_synthesises_with_its_dsp_clock_timed(tmp_path, zoo):
    """`--dsp-clock 2x`: yosys maps mac_quad's DSP48E2 at the second clock with every register; the timing estimate
    finds the DSP clock's paths, counts them at half the period, and the build's clock holds for both clocks."""
    out = tmp_path / "b"
    run_partition(PartitionConfig(model=zoo("two-branch"), out_dir=out, picture=False, accuracy=False,
                                  offload_everything=True, synth=True, dsp_clock=2,
                                  engine=EngineConfig(vec=8, pe_rows=8, dsp_clock=2)))
    r = json.loads((out / "fpga" / "synth" / "resources.json").read_text())
    timing = json.loads((out / "fpga" / "synth" / "timing.json").read_text())
    assert timing["dsp_clock"] == "2x" and timing["dsp_without_mreg_preg"] == 0 and timing["dsp_cascaded"] == 0
    assert r["DSP"] >= 8 * 8 // 4 and timing["dsp_cells"] < 8 * 8 // 2 + 8 + 4 * 8 + 10
    assert timing["fast_estimated_fmax_mhz"] >= 2 * timing["clock_mhz"]
    assert timing["estimated_fmax_mhz"] >= timing["clock_mhz"]
    assert all(p["clock"] in ("1x", "2x") for p in timing["worst_paths"])
    assert "DSP clock's worst path" in (out / "report.md").read_text()


@pytest.mark.slow
def test_a_window_engine_with_a_narrow_epilogue_keeps_every_dsp_registered(tmp_path):
    """An epilogue at half the result lanes, in passes, on an engine whose tiles come in groups (the window path):
    the pass's operands and its tile's tables are picked by plain selects, so no product is inferred on a
    DSP48E2 without its registers and the path from the pass counter stays short (a part-select at a computed
    offset of the 18-bit entries did both: 124 MHz on 2 x 16 x 16 with 8 lanes). The DSPs are the resource
    model's count."""
    from fpga_runtime.boards import BOARDS
    from partitioner.codegen.sources import write_engine_sources
    from partitioner.codegen.synth import synthesize
    from partitioner.explore.resources import compute_unit

    board = BOARDS["zcu104"]
    config = EngineConfig(vec=8, pe_rows=8, pixels=2, epilogue_lanes=4, clock_mhz=board.clock_mhz)
    write_engine_sources(tmp_path, "narrow", config, [], board)
    r = synthesize(tmp_path / "fpga", board, lambda s: None, 250.0)
    timing = r["timing"]
    assert timing["dsp_without_mreg_preg"] == 0
    assert timing["estimated_fmax_mhz"] >= 250.0
    assert r["DSP"] == compute_unit(config, board, 0, 0).dsp
