"""PNGs with generation parameters written the way A1111 writes them (Pillow PngInfo: add_text, UTF-8 as iTXt
when needed) plus one compressed zTXt, so our reader is checked against a real writer."""
import json
import pathlib
import sys

import numpy as np
from PIL import Image, PngImagePlugin

out = pathlib.Path(sys.argv[1]) / "png"
out.mkdir(parents=True, exist_ok=True)
params = ("a lighthouse, (oil painting:1.2), 日本語\nNegative prompt: blurry\n"
          "Steps: 20, Sampler: Euler a, CFG scale: 7, Seed: 42, Size: 64x48, Model hash: d488b5d966")
pixels = (np.arange(48 * 64 * 3) % 251).astype(np.uint8).reshape(48, 64, 3)
info = PngImagePlugin.PngInfo()
info.add_text("parameters", params)           # non-Latin-1 → iTXt, as A1111 gets it
info.add_text("plain", "latin text")          # tEXt
info.add_text("packed", "z" * 500, zip=True)  # zTXt
Image.fromarray(pixels).save(out / "a1111.png", pnginfo=info)
np.save(out / "a1111_pixels.npy", pixels)
(out / "a1111.json").write_text(json.dumps({"parameters": params, "plain": "latin text", "packed": "z" * 500,
                                            "width": 64, "height": 48, "checksum": int(pixels.astype(np.int64).sum())}))
