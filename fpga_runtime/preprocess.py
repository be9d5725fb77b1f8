"""A picture into a model's input tensor, as recorded in the build (`plan.json` "preprocess"): fit (letterbox
as ultralytics does, or stretch), channel order, scale, mean and std, layout. `partition --preprocess` chooses
it; `--calibrate DIR`, `fpga-run run --image` and `Session.run_image` apply it, so a float32 [1, 3, H, W] export
takes JPEGs with no hand-written conversion.

Presets: `yolo` (letterbox with grey 114, RGB, x / 255), `imagenet` (stretch, RGB, (x / 255 - mean) / std with
the ImageNet statistics), `unit` (stretch, RGB, x / 255) and `none` (the raw uint8 frame, for models that
pre-process inside the graph, like this project's zoo)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np

LETTERBOX_FILL = 114           # the grey YOLO pads with


class ImageError(ValueError):
    """A file that is not an image this runtime can read."""


@dataclass(frozen=True)
class Fit:
    """How a picture of `width` x `height` was placed in the model's input: x_in = x * sx + pad_x."""
    mode: str
    width: int
    height: int
    sx: float
    sy: float
    pad_x: float
    pad_y: float

    def describe(self, in_w: int, in_h: int) -> str:
        if (self.width, self.height) == (in_w, in_h):
            return f"{self.width}x{self.height}, the model's size"
        if self.mode == "letterbox":
            return (f"{self.width}x{self.height} letterboxed to {in_w}x{in_h} (scale {self.sx:.3g}, padding "
                    f"{self.pad_x:g} px left/right, {self.pad_y:g} px top/bottom)")
        return f"{self.width}x{self.height} stretched to {in_w}x{in_h} (aspect ratio not kept)"

    def to_image(self, boxes: np.ndarray) -> np.ndarray:
        """Boxes (x1, y1, x2, y2) in model-input pixels -> pixels of the original picture, clipped to it."""
        out = np.array(boxes, np.float64, copy=True)
        out[..., 0::2] = (out[..., 0::2] - self.pad_x) / self.sx
        out[..., 1::2] = (out[..., 1::2] - self.pad_y) / self.sy
        out[..., 0::2] = np.clip(out[..., 0::2], 0, self.width)
        out[..., 1::2] = np.clip(out[..., 1::2], 0, self.height)
        return out


PICTURE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".webp"}     # what a folder of pictures is taken to hold
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


@dataclass(frozen=True)
class Preprocess:
    preset: str = "none"
    fit: str = "letterbox"                  # letterbox | stretch
    layout: str = "nhwc"                    # nchw | nhwc: where the 3 channels are in the input
    bgr: bool = False                       # channels in B, G, R order (OpenCV-trained models)
    scale: float = 1.0                      # x * scale, then (x - mean) / std
    mean: tuple[float, float, float] = (0.0, 0.0, 0.0)
    std: tuple[float, float, float] = (1.0, 1.0, 1.0)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict) -> "Preprocess":
        try:
            p = cls(**{**raw, "mean": tuple(float(v) for v in raw.get("mean", (0.0,) * 3)),
                       "std": tuple(float(v) for v in raw.get("std", (1.0,) * 3))})
        except TypeError as exc:
            raise ValueError(f"preprocess record: {exc}") from None
        p.check()
        return p

    def check(self) -> None:
        if self.fit not in ("letterbox", "stretch") or self.layout not in ("nchw", "nhwc"):
            raise ValueError(f"preprocess: fit must be letterbox|stretch and layout nchw|nhwc, not {self.fit!r}, "
                             f"{self.layout!r}")
        if len(self.mean) != 3 or len(self.std) != 3 or any(s == 0 for s in self.std):
            raise ValueError("preprocess: --mean and --std take three values (R, G, B), std non-zero")

    def describe(self) -> str:
        if self.preset == "none":
            return f"the raw uint8 picture ({self.fit}), the model pre-processes it"
        norm = f"x * {self.scale:g}"
        if any(self.mean) or any(s != 1 for s in self.std):
            norm = f"({norm} - mean {list(self.mean)}) / std {list(self.std)}"
        return f"{self.preset}: {self.fit}, {'BGR' if self.bgr else 'RGB'}, {norm}, {self.layout.upper()}"

    def image_size(self, shape: list) -> tuple[int, int]:
        """(height, width) of the model input this applies to."""
        return (shape[2], shape[3]) if self.layout == "nchw" else (shape[1], shape[2])

    def apply(self, picture, shape: list, dtype: str) -> tuple[np.ndarray, Fit]:
        """An RGB PIL picture -> (input tensor of `shape` and `dtype`, how the picture was placed)."""
        from PIL import Image
        in_h, in_w = self.image_size(shape)
        w, h = picture.size
        if self.fit == "stretch":
            fit = Fit("stretch", w, h, in_w / w, in_h / h, 0.0, 0.0)
            canvas = picture.resize((in_w, in_h), Image.BILINEAR)
        else:
            s = min(in_w / w, in_h / h)
            new_w, new_h = max(1, round(w * s)), max(1, round(h * s))
            pad_x, pad_y = (in_w - new_w) // 2, (in_h - new_h) // 2
            canvas = Image.new("RGB", (in_w, in_h), (LETTERBOX_FILL,) * 3)
            canvas.paste(picture.resize((new_w, new_h), Image.BILINEAR), (pad_x, pad_y))
            fit = Fit("letterbox", w, h, new_w / w, new_h / h, float(pad_x), float(pad_y))
        pixels = np.asarray(canvas, np.uint8)
        if self.bgr:
            pixels = pixels[..., ::-1]
        if self.preset == "none":
            x = pixels
        else:
            x = (pixels.astype(np.float32) * np.float32(self.scale) - np.asarray(self.mean, np.float32)) \
                / np.asarray(self.std, np.float32)
        if self.layout == "nchw":
            x = x.transpose(2, 0, 1)
        try:
            return np.broadcast_to(x[None], shape).astype(dtype), fit
        except (ValueError, TypeError) as exc:
            raise ImageError(f"the pre-processed picture {list(x.shape)} does not fit the input {shape}: {exc}") \
                from None


PRESETS = {
    "none": Preprocess("none", "letterbox", "nhwc"),
    "yolo": Preprocess("yolo", "letterbox", "nchw", scale=1 / 255),
    "unit": Preprocess("unit", "stretch", "nchw", scale=1 / 255),
    "imagenet": Preprocess("imagenet", "stretch", "nchw", scale=1 / 255, mean=IMAGENET_MEAN, std=IMAGENET_STD),
}


def image_input(shape, dtype: str) -> str | None:
    """'nchw' or 'nhwc' where an input of `shape` takes a 3-channel picture of static size, else None."""
    if shape is None or len(shape) != 4 or not all(isinstance(d, int) and d > 0 for d in shape):
        return None
    if shape[1] == 3 and dtype != "uint8":
        return "nchw"
    if shape[3] == 3:
        return "nhwc"
    return None


def choose(preset: str | None, shape, dtype: str, metadata: dict[str, str], **overrides) -> tuple[Preprocess, str]:
    """The pre-processing for a model input, and where it came from (said to the user): the preset asked for,
    or found from the model (ultralytics metadata, a uint8 NHWC frame, a float NCHW picture), with overrides
    (fit, bgr, scale, mean, std, layout) applied. A ValueError where the input takes no picture."""
    layout = image_input(shape, dtype)
    if layout is None:
        raise ValueError(f"the model input {list(shape or [])} {dtype} takes no 3-channel picture of static size "
                         "(pin dynamic sizes with --input-shape, or give .npy inputs)")
    asked = overrides.get("layout")
    if asked is not None and shape[1 if asked == "nchw" else 3] != 3:
        raise ValueError(f"--layout {asked}: the model input {list(shape)} has no 3 channels "
                         f"{'second' if asked == 'nchw' else 'last'}")
    if preset is not None:
        why = f"--preprocess {preset}"
    elif dtype == "uint8":
        preset, why = "none", "the input is a uint8 frame"
    elif {"stride", "names"} <= set(metadata):
        preset, why = "yolo", "ultralytics metadata in the model"
    else:
        preset, why = "unit", "a float picture input with no metadata (give --preprocess imagenet or --mean/--std " \
                              "where the model expects normalised inputs)"
    chosen = replace(PRESETS[preset], layout=layout)
    given = {k: v for k, v in overrides.items() if v is not None}
    if given:
        chosen = replace(chosen, **given)
        why += " with " + ", ".join(f"--{k} {v}" for k, v in given.items())
    chosen.check()
    if chosen.preset == "none" and dtype != "uint8":
        raise ValueError(f"--preprocess none passes raw uint8 pixels; the model input is {dtype}")
    return chosen, why


def picture_fitting(spec, preprocess: Preprocess | None, resize: str = "letterbox") -> Preprocess:
    """How a picture goes into the input `spec`, for runs and calibration alike: a raw uint8 NHWC frame input takes
    the picture itself, placed as `resize` says, whatever preset is recorded; any other input takes the build's
    pre-processing. An ImageError says why pictures cannot go in."""
    if spec.dtype == "uint8" and image_input(spec.shape, spec.dtype) == "nhwc":
        keep = preprocess if preprocess is not None and preprocess.preset == "none" else PRESETS["none"]
        return replace(keep, fit=resize)
    if preprocess is None or preprocess.preset == "none":
        raise ImageError(f"this build records no pre-processing for its input {spec.name!r} ({spec.dtype} "
                         f"{spec.shape}): partition the model again with --preprocess yolo|imagenet|unit, or give "
                         "the input as an array")
    return preprocess


def picture_input(plan, resize: str = "letterbox"):
    """(input spec, Preprocess) that take a picture into the build (`picture_fitting`)."""
    if len(plan.inputs) != 1:
        raise ImageError(f"the model has inputs {[t.name for t in plan.inputs]}: a picture feeds a single input")
    spec = plan.inputs[0]
    return spec, picture_fitting(spec, Preprocess.from_dict(plan.preprocess) if plan.preprocess else None, resize)


def open_picture(path, name: str | None = None):
    """An image file (or file object, called `name` in errors) as an RGB PIL picture, or an ImageError that says
    why not."""
    name = name or str(path)
    try:
        from PIL import Image, ImageOps, UnidentifiedImageError
    except ImportError:
        raise ImageError("reading images needs Pillow (pip install pillow)") from None
    try:
        with Image.open(path) as img:
            return _as_8bit(ImageOps.exif_transpose(img)).convert("RGB")
    except FileNotFoundError:
        raise ImageError(f"{name}: no such file") from None
    except (UnidentifiedImageError, OSError) as exc:
        raise ImageError(f"{name}: not an image Pillow can read ({exc})") from None
    except Image.DecompressionBombError as exc:
        raise ImageError(f"{name}: refused, a decompression bomb ({exc})") from None


def _as_8bit(img):
    """A picture as OpenCV's imread gives it to a trainer: upright as its EXIF orientation says (above), and a
    16-bit one scaled to 8 bits (its high byte; Pillow's RGB conversion would clip every value above 255 to white)."""
    if img.mode.startswith("I;16") or (img.mode == "I" and img.getextrema()[1] > 255):
        from PIL import Image
        return Image.fromarray((np.asarray(img).astype(np.uint32) >> 8).clip(0, 255).astype(np.uint8), "L")
    return img


def load_picture(path, spec, preprocess: Preprocess, name: str | None = None):
    """(input tensor, Fit, the RGB picture) of an image file (or file object, called `name` in errors) for the
    input `spec` (a plan's TensorSpec)."""
    picture = open_picture(path, name)
    tensor, fit = preprocess.apply(picture, spec.shape, spec.dtype)
    return tensor, fit, picture
