"""How a Zynq overlay makes its engine clock (fpga_runtime/pl_clocks.py): every MMCM setting within the data
sheets' limits, the fastest clock not above the one asked for, the 2x DSP clock at exactly twice, and the simulated
board reading the same setting back from the generated .hwh."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fpga_runtime.pl_clocks import (
    MMCM_INPUT_MHZ,
    MMCM_LIMITS,
    PL_PLL_MHZ,
    _mmcm_table,
    clock_at_most,
    engine_clocking,
    mmcm_at_most,
    ps_clock_at_most,
)


@pytest.mark.parametrize("family", ["zynqmp", "zynq7"])
@pytest.mark.parametrize("double", [False, True])
def test_every_setting_is_within_the_mmcm_limits(family, double):
    lim = MMCM_LIMITS[family]
    keys, settings_ = _mmcm_table(family, double)
    assert keys == sorted(set(keys)) and len(keys) > 100
    for khz, m in zip(keys, settings_):
        assert (m.mult * 8).is_integer() and 2 <= m.mult <= lim.mult_max and m.divclk == 1
        assert lim.vco_mhz[0] <= m.vco_mhz <= lim.vco_mhz[1]
        assert m.mhz * 1000 == pytest.approx(khz, abs=1e-6)           # whole kHz, as FREQ_HZ is written
        if double:
            assert m.divide == 2 * m.fast_divide and m.fast_mhz == pytest.approx(2 * m.mhz)
            assert m.fast_mhz <= lim.out_max_mhz
        else:
            assert m.fast_divide is None and m.mhz <= lim.out_max_mhz


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["zynqmp", "zynq7"]), st.booleans(), st.floats(20.0, 330.0))
def test_the_fastest_clock_not_above_the_one_asked(family, double, mhz):
    mhz = min(mhz, MMCM_LIMITS[family].out_max_mhz / (2 if double else 1))
    m = mmcm_at_most(family, mhz, double)
    assert m is not None and m.mhz <= mhz + 1e-9
    keys, _ = _mmcm_table(family, double)
    assert not any(m.mhz * 1000 + 0.5 < k <= mhz * 1000 for k in keys)   # none the MMCM makes in between
    # the VCO in 12.5 MHz steps over a whole divisor: within 2.5 % below (the PS's own steps: up to 17 %)
    assert mhz - m.mhz <= 0.025 * mhz


def test_the_clocks_the_ps_steps_missed():
    """The PS alone: 1500 / 6 = 250 below a 255.8 MHz Fmax, 1500 / 8 = 187.5 for the Ultra96-V2's 200 MHz and
    the KV260's 207.7 MHz; the MMCM makes 255, 200 and 207.5."""
    assert clock_at_most("zynqmp", 255.8) == 255.0
    assert clock_at_most("zynqmp", 200.0) == 200.0
    assert clock_at_most("zynqmp", 207.7) == 207.5
    assert clock_at_most("zynqmp", 255.8, dsp_clock=2) == pytest.approx(253.125)
    assert clock_at_most("alveo", 300.0) is None
    assert [ps_clock_at_most("zynqmp", f) for f in (255.8, 207.7, 200.0, 300.0)] == [250.0, 187.5, 187.5, 300.0]
    assert ps_clock_at_most("zynq7", 122.7) == pytest.approx(1000 / 9)
    clocking = engine_clocking("zynqmp", 255.0)
    assert clocking.pl0_mhz == MMCM_INPUT_MHZ == PL_PLL_MHZ["zynqmp"] / (clocking.div0 * clocking.div1)
    assert clocking.engine_mhz == 255.0
    with pytest.raises(ValueError, match="no MMCM setting"):
        engine_clocking("zynqmp", 3.0)


def test_the_simulated_board_reads_the_overlay_mmcm(tmp_path):
    """The generated .hwh carries the wizard's setting; the simulated board's engine clock is PL clock 0 times
    it, and a .hwh whose setting no MMCM has is refused."""
    from fpga_runtime.boards import BOARDS
    from fpga_runtime.pl_clocks import fabric_clock_ratio
    from partitioner.codegen.overlay import overlay_context
    from partitioner.codegen.sources import _env

    env = _env()
    for clock, dsp_clock in ((207.5, 1), (253.125, 2)):
        ctx = overlay_context(BOARDS["kv260"], 2, clock, "ov", dsp_clock=dsp_clock)
        ctx.update(build_name="b", board="kv260", part="p", board_part="", overlay_name="ov", abi_version=3,
                   vec=16, pe_rows=16, max_kernel=7, part_parameters={}, engine_impl="rtl")
        hwh = tmp_path / f"ov{dsp_clock}.hwh"
        hwh.write_text(env.get_template("overlay/overlay.hwh.j2").render(ctx))
        assert MMCM_INPUT_MHZ * fabric_clock_ratio(hwh) == pytest.approx(clock, abs=1e-6)
        assert ('NAME="ap_clk_2x"' in hwh.read_text()) == (dsp_clock == 2)
    # another clocking wizard in the overlay (a user's video pipeline, listed first) is not the engine's: the
    # engine's ap_clk connection names its own; an engine on PL clock 0 itself runs at it
    text = hwh.read_text()
    other = ('<MODULE FULLNAME="/video_clocks" INSTANCE="video_clocks" MODTYPE="clk_wiz"><PARAMETERS>'
             '<PARAMETER NAME="MMCM_CLKFBOUT_MULT_F" VALUE="10.000"/><PARAMETER NAME="MMCM_DIVCLK_DIVIDE" VALUE="1"/>'
             '<PARAMETER NAME="MMCM_CLKOUT0_DIVIDE_F" VALUE="7.000"/></PARAMETERS></MODULE>')
    two = tmp_path / "two.hwh"
    two.write_text(text.replace("<MODULES>", "<MODULES>" + other, 1))
    assert MMCM_INPUT_MHZ * fabric_clock_ratio(two) == pytest.approx(253.125, abs=1e-6)
    two.write_text(text.replace('<CONNECTION INSTANCE="engine_clocks" PORT="clk_out1"/>',
                                '<CONNECTION INSTANCE="ps" PORT="pl_clk0"/>'))
    assert fabric_clock_ratio(two) == 1.0
    with pytest.raises(ValueError, match="MMCM makes"):
        overlay_context(BOARDS["kv260"], 1, 208.0, "ov")      # not a clock the MMCM makes: a bug upstream
    bad = tmp_path / "bad.hwh"
    mult = 'NAME="MMCM_CLKFBOUT_MULT_F" VALUE="'
    bad.write_text(hwh.read_text().replace(mult, mult + "9"))
    with pytest.raises(OSError, match="out of an MMCM's range"):
        fabric_clock_ratio(bad)
    bad.write_text("<EDKSYSTEM><MODULES><MODULE MODTYPE=\"clk_wiz\"/></MODULES></EDKSYSTEM>")
    with pytest.raises(OSError, match="lacks a readable"):
        fabric_clock_ratio(bad)
    bad.write_text("<EDKSYSTEM>")
    with pytest.raises(OSError, match="not overlay metadata"):
        fabric_clock_ratio(bad)


def test_the_clock_benchmark_prints_each_board_and_shape():
    """benchmarks/engine_clocks.py, the source of the README's clock gains: one row per Zynq board and shape, the
    MMCM clock never above the estimate nor below the PS's own step."""
    import subprocess
    import sys
    from pathlib import Path
    script = Path(__file__).resolve().parent.parent / "benchmarks" / "engine_clocks.py"
    out = subprocess.run([sys.executable, str(script), "--boards", "zcu104,kv260,ultra96v2"], capture_output=True,
                         text=True, timeout=120, check=True).stdout
    cells = [[x.strip() for x in line.strip().strip("|").split("|")] for line in out.splitlines()[2:]]
    rows = {(c[0], c[1]): c for c in cells}
    # each row is the Fmax model's estimate, the PS's step below the lower of it and the board's clock, and the
    # MMCM's step there (the Ultra96-V2 at its own 200 MHz, which the PS alone misses)
    from fpga_runtime.boards import BOARDS
    from fpga_runtime.pl_clocks import clock_at_most, ps_clock_at_most
    from partitioner.explore.clock import estimated_fmax_mhz, shape_config
    for (name, shape), c in rows.items():
        board = BOARDS[name]
        fmax = estimated_fmax_mhz(board, shape_config(shape))
        assert float(c[3]) == pytest.approx(fmax, abs=0.051)
        limit = min(board.clock_mhz, fmax)
        assert float(c[4]) == pytest.approx(ps_clock_at_most(board.family, limit), abs=0.051)
        double = 2 if "@2x" in shape else 1
        assert float(c[5]) == pytest.approx(clock_at_most(board.family, limit, double), abs=1e-6)
    assert rows["ultra96v2", "8x8"][4:6] == ["187.5", "200"]
    for c in rows.values():
        assert float(c[4]) <= float(c[5]) <= min(float(c[2]), float(c[3])) + 1e-9
