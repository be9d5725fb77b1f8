"""How much int8 accuracy integer Winograd F(2x2, 3x3) costs against direct int8, per way of quantising its
transformed weights, before the engine implements it (issue 26). Every 3x3 stride-1 conv of the zoo's detectors,
on the activations the network computes for an image-like frame:

    python benchmarks/winograd_int8.py [--models yolov3-tiny,...] [--kernels zoo,smooth]

Each layer's input is quantised to int8 (per tensor, max |x| / 127): direct int8 and every Winograd variant see the
same int8 input, so the table shows what each way of quantising the weights adds. The input transform
V = B^T d B is exact (10-bit integers), so the weights are the only difference:

- `direct`: the engine today, int8 weights per output channel.
- `wino k,p`: U = G g G^T quantised to int8 per output channel and Winograd position (16 scales per channel), the
  per-position rescale a multiplier each (what issue 26 names).
- `wino k,p 2^e`: the same with each position's scale a power of two below its channel's largest (a shift, no
  multiplier, in the output transform); `acc bits` is the bits of the rescaled output transform's largest value
  (bound: every input at +-128 with the worst signs).
- `wino k`: one scale per output channel for all 16 positions.

Numbers: relative error ||y - y_float|| / ||y_float|| of the conv's output (before requantisation, bias left out:
it is the same for all) against the float conv of the same int8 input with the float weights; the median and the
worst layer, and the worst layer's ratio to direct int8's error. `--kernels smooth` replaces the zoo's i.i.d.
weights by spatially correlated ones (a centre-weighted low-pass part plus noise), closer to trained 3x3 kernels,
whose positions' ranges differ more (no trained weights are on this machine: the zoo's are seeded).
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from _zoo import SIZES
from onnx import helper, numpy_helper

import models

BT = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], dtype=np.int64)
G = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]])
AT = np.array([[1, 1, 1, 0], [0, 1, -1, -1]], dtype=np.int64)
MAX_SHIFT = 8


def input_transform(x: np.ndarray) -> np.ndarray:
    """int8 (C, H, W) -> V (C, ty, tx, 4, 4) = B^T d B per 4x4 tile (stride 2, one pixel of zero padding)."""
    c, h, w = x.shape
    ty, tx = -(-h // 2), -(-w // 2)
    xp = np.zeros((c, 2 * ty + 2, 2 * tx + 2), dtype=np.int64)
    xp[:, 1:h + 1, 1:w + 1] = x
    s = xp.strides
    tiles = np.lib.stride_tricks.as_strided(xp, (c, ty, tx, 4, 4), (s[0], 2 * s[1], 2 * s[2], s[1], s[2]))
    return np.einsum("ai,ctxij,bj->ctxab", BT, tiles, BT)


def winograd(v: np.ndarray, u: np.ndarray, h: int, w: int) -> np.ndarray:
    """M = sum_c U V per position, then Y = A^T M A: (K, h, w). u: (K, C, 4, 4), exact in float64 for int inputs."""
    k = u.shape[0]
    _, ty, tx = v.shape[:3]
    m = np.empty((k, ty * tx, 4, 4))
    flat = v.reshape(v.shape[0], ty * tx, 4, 4).astype(np.float64)
    for a in range(4):
        for b in range(4):
            m[:, :, a, b] = u[:, :, a, b] @ flat[:, :, a, b]
    y = np.einsum("ia,ktab,jb->ktij", AT, m, AT).reshape(k, ty, tx, 2, 2)
    return y.transpose(0, 1, 3, 2, 4).reshape(k, 2 * ty, 2 * tx)[:, :h, :w]


def quantise_u(uf: np.ndarray, scheme: str) -> tuple[np.ndarray, np.ndarray]:
    """(int8 U, scale per (k, p)) for one way of quantising U = G g G^T."""
    peak = np.abs(uf).max(axis=1)                                  # (K, 4, 4)
    peak = np.where(peak > 0, peak, 1e-30)
    if scheme == "wino k":
        scale = np.broadcast_to(peak.max(axis=(1, 2), keepdims=True) / 127, peak.shape)
    elif scheme == "wino k,p":
        scale = peak / 127
    else:                                                          # a power of two below the channel's largest
        top = peak.max(axis=(1, 2), keepdims=True) / 127
        shift = np.clip(np.floor(np.log2(top / (peak / 127))), 0, MAX_SHIFT)
        scale = top / 2.0 ** shift
    q = np.clip(np.round(uf / scale[:, None]), -127, 127)
    return q, np.ascontiguousarray(scale)


def acc_bits(q: np.ndarray, scale: np.ndarray, v: np.ndarray, h: int, w: int) -> tuple[int, int]:
    """Bits of the largest output-transform value with every position rescaled to its channel's finest scale by a
    shift: seen on this input, and the bound over every int8 input."""
    shift = np.round(np.log2(scale.max(axis=(1, 2), keepdims=True) / scale)).astype(np.int64)   # (K, 4, 4)
    lift = q * (2.0 ** (shift.max() - shift))[:, None]
    seen = np.abs(winograd(v, lift, h, w)).max()
    # |Y| <= sum_p |A^T coefficient| * 2^(s_max - s_p) * sum_c |U_q| * 512: every output takes 9 positions
    bound = (np.abs(lift).sum(axis=1) * 512 * np.array([[1, 1, 1, 0], [1, 1, 1, 1], [1, 1, 1, 1], [0, 1, 1, 1]])
             ).sum(axis=(1, 2)).max()
    return int(np.ceil(np.log2(seen + 1))) + 1, int(np.ceil(np.log2(bound + 1))) + 1


def smooth_kernels(shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Spatially correlated 3x3 kernels: a centre-weighted low-pass part of random sign and size, plus noise."""
    k, c = shape[:2]
    base = np.outer([0.5, 1.0, 0.5], [0.5, 1.0, 0.5])
    amp = rng.standard_normal((k, c, 1, 1)) * (1 + rng.standard_normal((k, c, 1, 1)) ** 2)
    return (amp * base + 0.3 * rng.standard_normal(shape)).astype(np.float32)


def layers(name: str, tmp: Path, kernels: str):
    path = tmp / f"{name}.onnx"
    models.build_to_file(name, path, SIZES[name])
    m = onnx.load(str(path))
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    convs = []
    for n in m.graph.node:
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        if (n.op_type == "Conv" and list(attrs.get("kernel_shape", [])) == [3, 3]
                and list(attrs.get("strides", [1, 1])) == [1, 1] and attrs.get("group", 1) == 1
                and list(attrs.get("dilations", [1, 1])) == [1, 1] and list(attrs.get("pads", [0] * 4)) == [1] * 4
                and n.input[1] in inits):
            convs.append((n.name, n.input[0], inits[n.input[1]]))
    known = {o.name for o in m.graph.output}
    m.graph.output.extend(helper.make_tensor_value_info(t, onnx.TensorProto.FLOAT, None)
                          for t in dict.fromkeys(c[1] for c in convs) if t not in known)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    feed = {}
    rng = np.random.default_rng(0)
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        img = rng.integers(0, 256, (shape[0], shape[1] // 8 + 1, shape[2] // 8 + 1, shape[3]))
        img = np.repeat(np.repeat(img, 8, axis=1), 8, axis=2)[:, :shape[1], :shape[2]]   # blocky, image-like
        feed[i.name] = (img.astype(np.uint8) if "uint8" in i.type else img.astype(np.float32))
    got = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feed)))
    wrng = np.random.default_rng(1)
    for lname, tin, wgt in convs:
        if kernels == "smooth":
            wgt = smooth_kernels(wgt.shape, wrng)
        yield lname, got[tin][0], wgt.astype(np.float64)


SCHEMES = ("direct", "wino k,p", "wino k,p 2^e", "wino k")


def study(x: np.ndarray, wgt: np.ndarray) -> dict[str, float]:
    sx = max(np.abs(x).max(), 1e-12) / 127
    xq = np.clip(np.round(x / sx), -128, 127).astype(np.int64)
    c, h, w = xq.shape
    v = input_transform(xq)
    uf = np.einsum("ai,kcij,bj->kcab", G, wgt, G)
    truth = winograd(v, uf, h, w)
    norm = np.linalg.norm(truth) or 1.0
    out = {}
    sw = np.maximum(np.abs(wgt).max(axis=(1, 2, 3)), 1e-30) / 127
    wq = np.clip(np.round(wgt / sw[:, None, None, None]), -127, 127) * sw[:, None, None, None]
    out["direct"] = np.linalg.norm(winograd(v, np.einsum("ai,kcij,bj->kcab", G, wq, G), h, w) - truth) / norm
    for scheme in SCHEMES[1:]:
        q, scale = quantise_u(uf, scheme)
        out[scheme] = np.linalg.norm(winograd(v, q * scale[:, None], h, w) - truth) / norm
        if scheme == "wino k,p 2^e":
            out["bits seen"], out["bits bound"] = acc_bits(q, scale, v, h, w)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="yolov3-tiny,yolov3,ssd300-vgg16")
    ap.add_argument("--kernels", default="zoo,smooth")
    args = ap.parse_args()
    print("| model | kernels | 3x3 s1 convs | " + " | ".join(f"{s} median / worst" for s in SCHEMES)
          + " | worst / direct: k,p / k,p 2^e / k | acc bits seen / bound (2^e) |")
    print("|---|---|---|" + "---|" * len(SCHEMES) + "---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            for kernels in args.kernels.split(","):
                rows = [study(x, w) for _, x, w in layers(name, Path(tmp), kernels)]
                if not rows:
                    print(f"| {name} | {kernels} | 0 |" + " - |" * (len(SCHEMES) + 2))
                    continue
                cols = []
                for s in SCHEMES:
                    e = np.array([r[s] for r in rows])
                    cols.append(f"{np.median(e):.4f} / {e.max():.4f}")
                ratio = [max(r[s] / r["direct"] for r in rows) for s in SCHEMES[1:]]
                bits = f"{max(r['bits seen'] for r in rows)} / {max(r['bits bound'] for r in rows)}"
                print(f"| {name}-{SIZES[name]} | {kernels} | {len(rows)} | " + " | ".join(cols)
                      + f" | {' / '.join(f'{x:.2f}' for x in ratio)} | {bits} |", flush=True)


if __name__ == "__main__":
    main()
