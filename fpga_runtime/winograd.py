"""Integer Winograd F(2x2, 3x3): the arithmetic of a CONV layer flagged WINOGRAD (docs/kernel-abi.md, "Winograd
layers"), which every backend reproduces bit for bit.

The output is cut into 2x2 tiles; tile (ty, tx) reads the 4x4 input patch d at rows 2ty - pad_t .., columns
2tx - pad_l .. (the zero point outside the input). Per input channel, V = B^T d B (adds only: |V| <= 512), per
output channel and position (a, b) of the 4x4 grid M[a, b] = sum over input channels of U[a, b] V[a, b] with the
layer's int8 weights U (16 per output and input channel, transformed and quantised by the compiler), and the tile's
outputs Y = A^T M A (adds only). Y is the layer's accumulator, onto which its bias goes as on any CONV; a tile's
outputs past the conv's last row or column are never written, and the input rows and columns only they read never
reach a written one. Every value is an integer below 2^31 for in_c <= MAX_IN_C (programs with more are refused).
"""
from __future__ import annotations

import numpy as np

B_T = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], dtype=np.int64)
A_T = np.array([[1, 1, 1, 0], [0, 1, -1, -1]], dtype=np.int64)
POSITIONS = 16           # weights per output and input channel: the 4x4 grid
V_LIMIT = 512            # |V| at most (four int8 values, added or subtracted)
MAX_IN_C = 2048          # input channels a layer may have: |Y| < 1.34e9 with any zero point, room for a bias


def tiles(n: int) -> int:
    """2x2 tiles along an axis of n outputs."""
    return -(-n // 2)


def accumulator_bound(in_c: int, zero: int = 0) -> int:
    """|Y| at most, with the zero point's fold in the bias: 9 positions of in_c products of |V| <= 512 with |U| <=
    127 each, plus the fold's 4 |zero| sum |U[1, 1]| (see `zero_point_gain`)."""
    return 9 * in_c * V_LIMIT * 127 + 4 * abs(zero) * 127 * in_c


def zero_point_gain(u: np.ndarray) -> np.ndarray:
    """What one unit of every input adds to each output channel's Y, per input channel: a constant patch has
    V = 4 at position (1, 1) and 0 elsewhere, and A^T takes M[1, 1] into every output once. u: [out, in, 4, 4]."""
    return 4 * u[:, :, 1, 1].astype(np.int64)


def input_transform(xp: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """V [4, 4, N, rows, cols, C] (int16) of a padded int8 input [N, >= 2 rows + 2, >= 2 cols + 2, C]."""
    x = xp.astype(np.int16)
    r = [x[:, a:a + 2 * rows:2] for a in range(4)]
    t = (r[0] - r[2], r[1] + r[2], r[2] - r[1], r[1] - r[3])
    out = np.empty((4, 4, x.shape[0], rows, cols, x.shape[3]), np.int16)
    for a, ta in enumerate(t):
        c = [ta[:, :, b:b + 2 * cols:2] for b in range(4)]
        out[a, 0], out[a, 1], out[a, 2], out[a, 3] = c[0] - c[2], c[1] + c[2], c[2] - c[1], c[1] - c[3]
    return out


def output_transform(m: np.ndarray) -> np.ndarray:
    """Y [N, 2 rows, 2 cols, K] from M [4, 4, N, rows, cols, K] (int64)."""
    s = (m[0] + m[1] + m[2], m[1] - m[2] - m[3])
    _, _, n, rows, cols, k = m.shape
    y = np.empty((n, rows, 2, cols, 2, k), np.int64)
    for i, si in enumerate(s):
        y[:, :, i, :, 0] = si[0] + si[1] + si[2]
        y[:, :, i, :, 1] = si[1] - si[2] - si[3]
    return y.reshape(n, 2 * rows, 2 * cols, k)


def pad_to_tiles(x: np.ndarray, pad_t: int, pad_l: int, out_h: int, out_w: int, value: int) -> np.ndarray:
    """The input [N, H, W, C] padded with `value` (the zero point) by the layer's top and left padding and on to
    whole tiles: 2 tiles(out) + 2 rows and columns, which covers its bottom and right padding."""
    rows, cols = 2 * tiles(out_h) + 2, 2 * tiles(out_w) + 2
    return np.pad(x, ((0, 0), (pad_t, max(0, rows - x.shape[1] - pad_t)), (pad_l, max(0, cols - x.shape[2] - pad_l)),
                      (0, 0)), constant_values=value)


def accumulate(xp: np.ndarray, u: np.ndarray, out_h: int, out_w: int) -> np.ndarray:
    """The layer's accumulators [N, out_h, out_w, K] (int64, bias not added) from its input as `pad_to_tiles`
    leaves it and its weights u [K, 4, 4, C].

    The products run as float64 GEMMs per position: |sum| < in_c 2^16 < 2^53, exact."""
    rows, cols = tiles(out_h), tiles(out_w)
    v = input_transform(xp, rows, cols)
    n = xp.shape[0]
    k = u.shape[0]
    m = np.empty((4, 4, n, rows, cols, k), np.int64)
    for a in range(4):
        for b in range(4):
            lhs = v[a, b].reshape(-1, v.shape[-1]).astype(np.float64)
            m[a, b] = (lhs @ u[:, a, b, :].T.astype(np.float64)).astype(np.int64).reshape(n, rows, cols, k)
    return output_transform(m)[:, :out_h, :out_w]
