"""float64 oracles for the docs/semantics tests, written from the ONNX operator definitions: the
exact results (to float64 rounding, far below the float32 bounds checked) and the magnitude sums
the bounds scale with."""
from typing import Optional, Sequence, Tuple

import numpy as np


def window_geometry(in_sizes: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
                    dilations: Sequence[int], pads: Sequence[int], auto_pad: str = "NOTSET",
                    ceil_mode: bool = False) -> Tuple[list, list, list]:
    """Output sizes and the (begin, end) pads of each spatial axis, as ONNX defines them."""
    n = len(in_sizes)
    out, begin, end = [], [], []
    for i in range(n):
        span = (kernel[i] - 1) * dilations[i] + 1
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            o = -(-in_sizes[i] // strides[i])
            total = max(0, (o - 1) * strides[i] + span - in_sizes[i])
            small, big = total // 2, total - total // 2
            b, e = (small, big) if auto_pad == "SAME_UPPER" else (big, small)
        elif auto_pad == "VALID":
            b = e = 0
            o = (in_sizes[i] - span) // strides[i] + 1
        else:
            b, e = pads[i], pads[i + n]
            num = in_sizes[i] + b + e - span
            o = (-(-num // strides[i]) if ceil_mode else num // strides[i]) + 1
            # A last window that would start in the end padding is dropped (ONNX, ceil_mode).
            if ceil_mode and (o - 1) * strides[i] >= in_sizes[i] + b:
                o -= 1
        out.append(o)
        begin.append(b)
        end.append(e)
    return out, begin, end


def windows(x: np.ndarray, kernel, strides, dilations, begin, out, fill: float) -> np.ndarray:
    """[N, C, out..., kernel...] view of x padded with `fill`: every window's taps."""
    n = x.ndim - 2
    pad_end = [max(0, (out[i] - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1
                   - x.shape[2 + i] - begin[i]) for i in range(n)]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(begin[i], pad_end[i]) for i in range(n)],
                constant_values=fill)
    idx = []
    for i in range(n):
        o = np.arange(out[i])[:, None] * strides[i] + np.arange(kernel[i])[None, :] * dilations[i]
        idx.append(o)
    if n == 1:
        return xp[:, :, idx[0]]
    return xp[:, :, idx[0][:, None, :, None], idx[1][None, :, None, :]]


def conv(x: np.ndarray, w: np.ndarray, b: Optional[np.ndarray] = None, strides=None, pads=None,
         dilations=None, group: int = 1, auto_pad: str = "NOTSET") -> np.ndarray:
    """ONNX Conv in float64 (1-D or 2-D spatial)."""
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    n = x.ndim - 2
    kernel = list(w.shape[2:])
    strides = strides or [1] * n
    dilations = dilations or [1] * n
    pads = pads or [0] * (2 * n)
    out, begin, _ = window_geometry(x.shape[2:], kernel, strides, dilations, pads, auto_pad)
    win = windows(x, kernel, strides, dilations, begin, out, 0.0)
    cg, mg = x.shape[1] // group, w.shape[0] // group
    ys = []
    for g in range(group):
        wg = w[g * mg:(g + 1) * mg]
        xg = win[:, g * cg:(g + 1) * cg]
        if n == 1:
            ys.append(np.einsum("ncok,mck->nmo", xg, wg))
        else:
            ys.append(np.einsum("ncpqkl,mckl->nmpq", xg, wg))
    y = np.concatenate(ys, axis=1)
    if b is not None:
        y += b.astype(np.float64).reshape([1, -1] + [1] * n)
    return y


def pool(x: np.ndarray, mode: str, kernel, strides=None, pads=None, dilations=None,
         auto_pad: str = "NOTSET", ceil_mode: bool = False, count_include_pad: bool = False
         ) -> np.ndarray:
    """ONNX MaxPool / AveragePool in float64 (1-D or 2-D spatial)."""
    x = x.astype(np.float64)
    n = x.ndim - 2
    strides = strides or [1] * n
    dilations = dilations or [1] * n
    pads = pads or [0] * (2 * n)
    out, begin, end = window_geometry(x.shape[2:], kernel, strides, dilations, pads, auto_pad,
                                      ceil_mode)
    axes = tuple(range(-n, 0))
    if mode == "max":
        return np.max(windows(x, kernel, strides, dilations, begin, out, -np.inf), axis=axes)
    total = np.sum(windows(x, kernel, strides, dilations, begin, out, 0.0), axis=axes)
    # Which taps count: inside the input, or (count_include_pad) inside the explicit padding.
    ones = np.ones((1, 1) + x.shape[2:])
    if count_include_pad:
        ones = np.pad(ones, [(0, 0), (0, 0)] + [(begin[i], end[i]) for i in range(n)],
                      constant_values=1.0)
        shift = [0] * n
        win = windows(ones, kernel, strides, dilations, shift, out, 0.0)
    else:
        win = windows(ones, kernel, strides, dilations, begin, out, 0.0)
    return total / np.sum(win, axis=axes)


def softmax(x: np.ndarray, axis: int) -> np.ndarray:
    x = x.astype(np.float64)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def patch_max(x: np.ndarray, kernel: Sequence[int], pads: Sequence[int], out: Sequence[int],
              reach: int = 3) -> np.ndarray:
    """[N, C, out...]: max |x| over each output's receptive field (stride 1, dilation 1) widened by
    `reach` on every side: the inputs a Winograd tile transform mixes into that output."""
    n = x.ndim - 2
    a = np.abs(x.astype(np.float64))
    k = [kernel[i] + 2 * reach for i in range(n)]
    begin = [pads[i] + reach for i in range(n)]
    return np.max(windows(a, k, [1] * n, [1] * n, begin, out, 0.0), axis=tuple(range(-n, 0)))


def winograd_scale(x: np.ndarray, w: np.ndarray, b: Optional[np.ndarray], pads: Sequence[int]
                   ) -> np.ndarray:
    """Sum over input channels c of patch_max(x_c) * sum |w[m, c]|, plus |b[m]|: the magnitude the
    Winograd bound scales with (2-D, stride 1, group 1)."""
    out = [x.shape[2 + i] + pads[i] + pads[i + 2] - w.shape[2 + i] + 1 for i in range(2)]
    pm = patch_max(x, w.shape[2:], pads, out)
    s = np.einsum("ncpq,mc->nmpq", pm, np.abs(w.astype(np.float64)).sum(axis=(2, 3)))
    if b is not None:
        s += np.abs(b.astype(np.float64)).reshape(1, -1, 1, 1)
    return s


def _cubic(t: float, a: float) -> float:
    t = abs(t)
    if t <= 1:
        return ((a + 2) * t - (a + 3)) * t * t + 1
    if t < 2:
        return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return 0.0


def resize_coordinate(ctm: str, y: int, scale: float, n_in: int, n_out: int,
                      roi: Tuple[float, float] = (0.0, 1.0)) -> float:
    """The input coordinate of output index y along one axis (ONNX Resize, opset 19 formulas;
    length-1 pytorch_half_pixel outputs map to 0 as the spec and ONNX Runtime say)."""
    width = scale * n_in  # the fractional output length the formulas use
    if ctm == "half_pixel":
        return (y + 0.5) / scale - 0.5
    if ctm == "half_pixel_symmetric":
        return n_in / 2 * (1 - n_out / width) + (y + 0.5) / scale - 0.5
    if ctm == "pytorch_half_pixel":
        return (y + 0.5) / scale - 0.5 if n_out > 1 else 0.0
    if ctm == "align_corners":
        return 0.0 if width == 1 else y * (n_in - 1) / (width - 1)
    if ctm == "asymmetric":
        return y / scale
    if ctm == "tf_crop_and_resize":
        span = (roi[1] - roi[0]) * (n_in - 1)
        x = span / 2 if width == 1 else y * span / (width - 1)
        return x + roi[0] * (n_in - 1)
    raise ValueError(ctm)


def resize_matrix(n_in: int, n_out: int, scale: float, mode: str, ctm: str,
                  nearest_mode: str = "round_prefer_floor", a: float = -0.75,
                  exclude_outside: bool = False, roi: Tuple[float, float] = (0.0, 1.0)
                  ) -> Tuple[np.ndarray, np.ndarray]:
    """[n_out, n_in] interpolation weights of one axis, and the outputs whose coordinate falls
    outside the input (tf_crop_and_resize extrapolates those)."""
    w = np.zeros((n_out, n_in))
    outside = np.zeros(n_out, bool)
    for y in range(n_out):
        x = resize_coordinate(ctm, y, scale, n_in, n_out, roi)
        if ctm == "tf_crop_and_resize" and (x < 0 or x > n_in - 1):
            outside[y] = True
            continue
        if mode == "nearest":
            i = {"round_prefer_floor": np.ceil(x - 0.5), "round_prefer_ceil": np.floor(x + 0.5),
                 "floor": np.floor(x), "ceil": np.ceil(x)}[nearest_mode]
            w[y, int(min(max(i, 0), n_in - 1))] = 1.0
        elif mode == "linear":
            x = min(max(x, 0.0), n_in - 1.0)
            i = int(np.floor(x))
            f = x - i
            w[y, i] += 1 - f
            w[y, min(i + 1, n_in - 1)] += f
        else:
            i = int(np.floor(x))
            f = x - i
            taps = [(i - 1, _cubic(f + 1, a)), (i, _cubic(f, a)), (i + 1, _cubic(1 - f, a)),
                    (i + 2, _cubic(2 - f, a))]
            if exclude_outside:
                taps = [(j, c) for j, c in taps if 0 <= j < n_in]
                total = sum(c for _, c in taps)
                taps = [(j, c / total) for j, c in taps]
            for j, c in taps:
                w[y, min(max(j, 0), n_in - 1)] += c
    return w, outside


def resize_2d(x: np.ndarray, out_hw: Sequence[int], scales_hw: Sequence[float], mode: str,
              ctm: str, extrapolation: float = 0.0, absolute: bool = False, **kw
              ) -> np.ndarray:
    """Resize of the last two axes of x in float64 (the others kept); with absolute=True the
    same weights' magnitudes applied to |x| (the sum the bounds scale with)."""
    rois = kw.pop("rois", [(0.0, 1.0), (0.0, 1.0)])
    wh, oh = resize_matrix(x.shape[-2], out_hw[0], scales_hw[0], mode, ctm, roi=rois[0], **kw)
    ww, ow = resize_matrix(x.shape[-1], out_hw[1], scales_hw[1], mode, ctm, roi=rois[1], **kw)
    x = x.astype(np.float64)
    if absolute:
        wh, ww, x = np.abs(wh), np.abs(ww), np.abs(x)
    y = np.einsum("ph,...hw,qw->...pq", wh, x, ww)
    y[..., oh, :] = extrapolation
    y[..., :, ow] = extrapolation
    return y
