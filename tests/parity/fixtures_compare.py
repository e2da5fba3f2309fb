"""Image pairs and their metrics for the compare view, computed here with numpy/scipy so the C++
metrics (imaging/compare.cpp, core/compare/pixel_diff.cpp) are checked against an independent implementation.

SSIM: Wang, Bovik, Sheikh, Simoncelli 2004 with their constants: an 11x11 Gaussian window (sigma 1.5),
K1 = 0.01, K2 = 0.03, L = 255, computed on each RGB channel over the valid region (the window entirely inside the
image, i.e. 5 pixels cropped on every side), averaged over the region and then over the three channels.
PSNR: 10 log10(255^2 / MSE) over all pixels and channels (null for identical images: infinite).
"""
import json
import pathlib
import sys

import numpy as np
from PIL import Image
from scipy import ndimage

out = pathlib.Path(sys.argv[1]) / "compare"
out.mkdir(parents=True, exist_ok=True)

H, W = 48, 64
rng = np.random.default_rng(8)
y, x = np.mgrid[0:H, 0:W].astype(np.float64)
# Structure at several scales (gradients, stripes, a disc) plus mild texture, so SSIM is not degenerate.
base = np.stack([
    40 + 2.5 * x + 20 * np.sin(y / 3.0),
    200 - 3.0 * y + 15 * np.cos(x / 5.0),
    np.where((x - 30) ** 2 + (y - 22) ** 2 < 150, 210.0, 60.0) + 8 * np.sin((x + y) / 2.0),
], axis=-1) + rng.normal(0, 3, (H, W, 3))
base = np.clip(np.rint(base), 0, 255).astype(np.uint8)

pairs = {
    "identical": base.copy(),
    "noise": np.clip(base.astype(np.int16) + np.rint(rng.normal(0, 8, base.shape)).astype(np.int16), 0, 255).astype(np.uint8),
    "shifted": np.roll(base, 3, axis=1),  # circular shift 3 pixels right
    "offset": np.clip(base.astype(np.int16) + 10, 0, 255).astype(np.uint8),
    "one_pixel": base.copy(),
}
pairs["one_pixel"][7, 11] = 255 - pairs["one_pixel"][7, 11]

KERNEL_1D = np.exp(-0.5 * (np.arange(-5, 6) / 1.5) ** 2)
KERNEL_1D /= KERNEL_1D.sum()
WINDOW = np.outer(KERNEL_1D, KERNEL_1D)


def filt(img):
    # Full correlation with the 11x11 window, then only the valid region (window inside the image).
    return ndimage.correlate(img, WINDOW, mode="constant")[5:-5, 5:-5]


def ssim_channel(a, b):
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2
    mu_a, mu_b = filt(a), filt(b)
    var_a = filt(a * a) - mu_a ** 2
    var_b = filt(b * b) - mu_b ** 2
    cov = filt(a * b) - mu_a * mu_b
    m = ((2 * mu_a * mu_b + c1) * (2 * cov + c2)) / ((mu_a ** 2 + mu_b ** 2 + c1) * (var_a + var_b + c2))
    return float(m.mean())


def metrics(a, b):
    d = a.astype(np.int64) - b.astype(np.int64)
    mse = float((d ** 2).mean())
    return {
        "max_abs": int(np.abs(d).max()),
        "mean_abs": float(np.abs(d).mean()),
        "mse": mse,
        "psnr": None if mse == 0 else float(10 * np.log10(255.0 ** 2 / mse)),
        "ssim": float(np.mean([ssim_channel(a[..., c], b[..., c]) for c in range(3)])),
        "differing_pixels": int((np.abs(d).max(axis=-1) > 0).sum()),
    }


Image.fromarray(base).save(out / "base.png")
reference = {"width": W, "height": H, "pairs": {}}
for name, img in pairs.items():
    Image.fromarray(img).save(out / f"{name}.png")
    reference["pairs"][name] = metrics(base, img)
(out / "metrics.json").write_text(json.dumps(reference, indent=1))
