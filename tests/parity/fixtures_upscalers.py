"""Upscaler references from spandrel (the upscaler library ComfyUI uses): each architecture DiffusionDesk runs,
tiny and with random weights, saved in the key layouts real files use, loaded back through spandrel's own
ModelLoader (so its detection is checked too) and run on a small image.

Writes <outdir>/upscalers/cases.json, <name>.safetensors (the model file) and <name>.io.safetensors (the input
image as uint8 HWC and spandrel's float output, unclamped); for the CLI's test, compact-4x.input.png (that image
with A1111-style generation parameters) and compact-4x.expected.png (spandrel's output clamped and rounded to 8 bits).
"""
import json
import pathlib
import re
import sys

import torch
from PIL import Image, PngImagePlugin
from safetensors.torch import save_file
from spandrel import ModelLoader
from spandrel.architectures.Compact import Compact
from spandrel.architectures.ESRGAN import ESRGAN
from spandrel.architectures.SwinIR import SwinIR

DIR = pathlib.Path(sys.argv[1]) / "upscalers"


def randomize(model, seed):
    """Weights large enough that every layer changes the picture (SwinIR's own init makes its attention ~0)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("relative_position_bias_table"):
                p.copy_(torch.randn(p.shape, generator=g) * 0.5)
            elif p.dim() >= 2:
                p.copy_(torch.randn(p.shape, generator=g) / (p[0].numel() ** 0.5))
            elif "norm" in name and name.endswith("weight"):
                p.copy_(1 + 0.1 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.05 * torch.randn(p.shape, generator=g))
    return model


def esrgan_new_keys(sd):
    """spandrel's old `model.N` names → Real-ESRGAN's (the reverse of its _new_to_old_arch)."""
    length = max(int(k.split(".")[1]) for k in sd if k.startswith("model.")) + 1
    blocks = max(int(k.split(".")[3]) for k in sd if k.startswith("model.1.sub.")) 
    out = {}
    for k, v in sd.items():
        m = re.fullmatch(r"model\.1\.sub\.(\d+)\.RDB(\d)\.conv(\d)\.0\.(weight|bias)", k)
        if m:
            out[f"body.{m[1]}.rdb{m[2]}.conv{m[3]}.{m[4]}"] = v
            continue
        m = re.fullmatch(r"model\.1\.sub\.(\d+)\.(weight|bias)", k)
        if m and int(m[1]) == blocks:
            out[f"conv_body.{m[2]}"] = v
            continue
        i, kind = int(k.split(".")[1]), k.split(".")[-1]
        name = {0: "conv_first", length - 3: "conv_hr", length - 1: "conv_last"}.get(i, f"conv_up{i // 3}")
        out[f"{name}.{kind}"] = v
    return out


def bsrgan_keys(sd):
    out = {}
    for k, v in esrgan_new_keys(sd).items():
        k = re.sub(r"^body\.(\d+)\.rdb(\d)", r"RRDB_trunk.\1.RDB\2", k)
        k = k.replace("conv_body.", "trunk_conv.").replace("conv_hr.", "HRconv.")
        k = re.sub(r"^conv_up(\d)", r"upconv\1", k)
        out[k] = v
    return out


CASES = [
    # name, model, key layout, input height × width
    ("esrgan-old-4x", lambda: ESRGAN(in_nc=3, out_nc=3, num_filters=16, num_blocks=2, scale=4), "old", (20, 24)),
    ("realesrgan-x2-unshuffle", lambda: ESRGAN(in_nc=12, out_nc=3, num_filters=16, num_blocks=1, scale=4, shuffle_factor=2),
     "new", (21, 19)),
    ("bsrgan-2x", lambda: ESRGAN(in_nc=3, out_nc=3, num_filters=8, num_blocks=1, scale=2), "bsrgan", (16, 18)),
    ("esrgan-plus-2x", lambda: ESRGAN(in_nc=3, out_nc=3, num_filters=16, num_blocks=1, scale=2, plus=True), "old", (16, 16)),
    ("compact-4x", lambda: Compact(num_in_ch=3, num_out_ch=3, num_feat=16, num_conv=4, upscale=4), "same", (20, 22)),
    ("compact-2x", lambda: Compact(num_in_ch=3, num_out_ch=3, num_feat=8, num_conv=2, upscale=2), "same", (17, 23)),
    ("swinir-classical-2x", lambda: SwinIR(img_size=16, in_chans=3, embed_dim=24, depths=[2, 2], num_heads=[2, 3],
                                            window_size=4, mlp_ratio=2.0, upscale=2, upsampler="pixelshuffle",
                                            resi_connection="1conv"), "same", (20, 24)),
    ("swinir-realsr-4x-3conv", lambda: SwinIR(img_size=16, in_chans=3, embed_dim=32, depths=[2], num_heads=[4],
                                               window_size=4, mlp_ratio=2.0, upscale=4, upsampler="nearest+conv",
                                               resi_connection="3conv"), "same", (18, 22)),
    ("swinir-lightweight-3x", lambda: SwinIR(img_size=16, in_chans=3, embed_dim=24, depths=[2, 2], num_heads=[2, 2],
                                              window_size=4, mlp_ratio=2.0, upscale=3, upsampler="pixelshuffledirect",
                                              resi_connection="1conv"), "same", (16, 20)),
]


def main():
    DIR.mkdir(parents=True, exist_ok=True)
    cases = []
    for seed, (name, build, layout, (h, w)) in enumerate(CASES):
        torch.manual_seed(seed)
        model = randomize(build().eval(), seed)
        sd = {k: v.contiguous() for k, v in model.state_dict().items()}
        sd = {"old": sd, "same": sd, "new": esrgan_new_keys(sd) if layout == "new" else sd,
              "bsrgan": bsrgan_keys(sd) if layout == "bsrgan" else sd}[layout]
        path = DIR / f"{name}.safetensors"
        save_file(sd, str(path))
        descriptor = ModelLoader().load_from_file(str(path))
        descriptor.model.eval()
        g = torch.Generator().manual_seed(1000 + seed)
        image = torch.randint(0, 256, (h, w, 3), generator=g, dtype=torch.uint8)
        x = (image.permute(2, 0, 1).unsqueeze(0).float() / 255.0)
        with torch.no_grad():
            y = descriptor.model(x)
        save_file({"input": image, "output": y.contiguous()}, str(DIR / f"{name}.io.safetensors"))
        if name == "compact-4x":
            info = PngImagePlugin.PngInfo()
            info.add_text("parameters", "a lighthouse\nSteps: 20, Sampler: Euler a, Seed: 7, Size: 22x20")
            Image.fromarray(image.numpy()).save(DIR / f"{name}.input.png", pnginfo=info)
            out = (y.clamp(0, 1) * 255).round().to(torch.uint8)[0].permute(1, 2, 0).contiguous().numpy()
            Image.fromarray(out).save(DIR / f"{name}.expected.png")
        cases.append({"name": name, "architecture": descriptor.architecture.id, "scale": descriptor.scale,
                      "output_shape": list(y.shape)})
        print(f"upscaler {name}: {descriptor.architecture.id} {descriptor.scale}x, output {list(y.shape)}")
    (DIR / "cases.json").write_text(json.dumps(cases, indent=1))
    # Not an upscaler of a known architecture: DAT-like keys spandrel knows and DiffusionDesk does not run.
    save_file({"conv_first.weight": torch.zeros(8, 3, 3, 3), "before_RG.0.weight": torch.zeros(8)},
              str(DIR / "unknown-architecture.safetensors"))


if __name__ == "__main__":
    main()
