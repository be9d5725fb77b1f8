"""The kernel ABI: the document and the code agree; the integer primitives do what the document says."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from fpga_runtime.abi import (
    DESCRIPTOR_FIELDS,
    DESCRIPTOR_SIZE,
    Descriptor,
    Reg,
    pack_program,
    quantize_multiplier,
    requant_input,
    requantize,
    requantize_prelu,
    shift_round,
    unpack_program,
)

DOC = (Path(__file__).resolve().parent.parent / "docs" / "kernel-abi.md").read_text()


def test_descriptor_table_in_the_document_matches_the_code():
    rows = re.findall(r"^\| (\d+) \| (\d+) \| (\w+) \| `(\w+)` \|", DOC, re.M)
    assert [(name, int(off)) for off, _, _, name in rows] == [(n, o) for n, _, o in DESCRIPTOR_FIELDS]
    sizes = {"B": 1, "b": 1, "H": 2, "I": 4, "i": 4}
    for (_, size, _, name), (_, code, _) in zip(rows, DESCRIPTOR_FIELDS):
        assert int(size) == sizes[code], name
    ends = [o + sizes[c] for _, c, o in DESCRIPTOR_FIELDS]
    assert all(a == b for a, b in zip(ends[:-1], [o for _, _, o in DESCRIPTOR_FIELDS][1:]))


def test_register_map_in_the_document_matches_the_code():
    for reg in (Reg.PROGRAM_LO, Reg.LAYER_COUNT, Reg.ACT_BASE_LO, Reg.CONST_BASE_LO, Reg.CYCLES_LO, Reg.STATUS,
                Reg.ERROR_LAYER, Reg.COUNTERS):
        assert f"| 0x{reg.value:02X}" in DOC


def test_the_address_limits_are_the_rtls():
    """The runtime's address limits are the RTL package's widths, and the document states both."""
    from fpga_runtime.abi import ADDRESS_BITS, MAX_PIXELS
    pkg = (Path(__file__).resolve().parent.parent / "hls_templates" / "rtl" / "engine_pkg.sv").read_text()
    assert re.search(rf"localparam int ADDR_W = {ADDRESS_BITS};", pkg)
    pixel = (Path(__file__).resolve().parent.parent / "hls_templates" / "rtl" / "pixel_address.sv").read_text()
    assert MAX_PIXELS == 1 << 26 and ".AW(27)" in pixel           # a 27-bit signed DSP operand holds 0 .. 2^26 - 1
    assert "below 2^40 (`abi.ADDRESS_BITS`" in DOC and "2^26 pixels" in DOC and "`abi.MAX_PIXELS`" in DOC


def test_program_round_trip():
    ds = [Descriptor(op=1, in_addr=64, out_addr=128, res_mult_a=-7, act_lo=-5, layer_id=i) for i in range(3)]
    raw = pack_program(ds)
    assert len(raw) == 16 + 3 * DESCRIPTOR_SIZE
    assert unpack_program(raw) == ds
    with pytest.raises(ValueError, match="not an ABI"):
        unpack_program(b"XXXX" + raw[4:])


def test_shift_round_rounds_half_up():
    assert shift_round(np.array([3, -3, 5, -5, 4, -4]), 1).tolist() == [2, -1, 3, -2, 2, -2]
    assert shift_round(np.array([7]), 0).tolist() == [7]


def test_requantize_saturates_per_channel():
    acc = np.array([[1000, 1000], [-1000, 10]])
    mult = np.array([1 << 30, 1 << 30])
    shift = np.array([31, 40])
    assert requantize(acc, mult, shift).tolist() == [[127, 1], [-128, 0]]


def test_requantisation_takes_the_accumulators_low_27_bits():
    """ABI v3: one 27 x 18 DSP product. Values within +-(2^26 - 1) pass as they are; others wrap, on every backend
    alike (the compiler never writes them); PRELU's sign is the wrapped value's."""
    acc = np.array([2 ** 26 - 1, -(2 ** 26), 2 ** 26, -(2 ** 26) - 1, 2 ** 31 - 1, 5 * 2 ** 27 + 3])
    assert requant_input(acc).tolist() == [2 ** 26 - 1, -(2 ** 26), -(2 ** 26), 2 ** 26 - 1, -1, 3]
    assert requantize(acc, np.full(6, 1 << 16), np.full(6, 42)).tolist() == [1, -1, -1, 1, 0, 0]
    assert requantize_prelu(np.array([2 ** 26]), np.array([1 << 16]), np.array([-(1 << 16)]),
                            np.array([42])).tolist() == [1]
    assert "Version 3 (from 2): the requantisation multiplies the accumulator's low 27 bits" in DOC
    assert "`abi.ACC_BITS`" in DOC


@pytest.mark.parametrize("real", [1e-6, 0.0123, 0.5, 0.9999, 1.0, 3.5, 100.0])
def test_quantize_multiplier_is_accurate(real):
    mult, shift = quantize_multiplier(real)
    assert (1 << 16) <= mult < (1 << 17) and 0 <= shift <= 62      # one 18-bit signed DSP48 port
    assert abs(mult / 2 ** shift - real) <= real * 2 ** -17
