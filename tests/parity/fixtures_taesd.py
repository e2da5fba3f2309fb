#!/usr/bin/env python3
"""AutoencoderTiny (TAESD) parity fixtures from diffusers itself.

Usage: fixtures_taesd.py <outdir>
  → <outdir>/taesd/tiny/: a tiny AutoencoderTiny (16 channels, 3 stages, torch.manual_seed(0)) as a diffusers
    folder (config.json + diffusion_pytorch_model.safetensors)
  → <outdir>/taesd/tiny_{encoder,decoder}.safetensors: the same weights under the original madebyollin
    Sequential key names (inverse of diffusers scripts/convert_tiny_autoencoder_to_diffusers.py)
  → <outdir>/taesd/tiny.safetensors: seeded image / latents and diffusers' encode, decode, scale_latents
  → <outdir>/taesd/default/ and default_{encoder,decoder}.safetensors: the real TAESD architecture (diffusers'
    default config: 64 channels, blocks (1,3,3,3) / (3,3,3,1)) with random weights rounded to fp16 and stored in
    fp16 like the published files; default.safetensors: one [1,4,16,16] decode and one [1,3,64,64] encode run in
    fp32 on those weights.
Never downloads anything: every model here is random.
"""
import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("DIFFUSERS_VERBOSITY", "error")

import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

from diffusers import AutoencoderTiny  # noqa: E402


def to_original(state_dict, half, dtype):
    """diffusers names → original TAESD Sequential names: the decoder's index 0 is its weightless Clamp."""
    prefix = f"{half}.layers."
    out = {}
    for k, v in state_dict.items():
        if not k.startswith(prefix):
            continue
        index, rest = k[len(prefix):].split(".", 1)
        index = int(index) + (1 if half == "decoder" else 0)
        out[f"{index}.{rest}"] = v.to(dtype).contiguous()
    return out


def save_both_layouts(vae, out: Path, name: str, dtype):
    vae.to(dtype).save_pretrained(str(out / name), safe_serialization=True)
    vae.to(torch.float32)
    sd = vae.state_dict()
    for half in ("encoder", "decoder"):
        save_file(to_original(sd, half, dtype), out / f"{name}_{half}.safetensors")


def random_weights(vae, gain):
    # PyTorch's default conv init makes a 16-block ReLU stack collapse towards zero; He-normal init with a damped
    # residual branch keeps activations O(1), so the comparison sees real magnitudes.
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, p in vae.named_parameters():
            if p.dim() == 4:
                fan_in = p.shape[1] * p.shape[2] * p.shape[3]
                scale = (2.0 / fan_in) ** 0.5 * (gain if name.endswith("conv.4.weight") else 1.0)
                p.copy_(torch.randn(p.shape, generator=g) * scale)
            else:
                p.copy_(torch.randn(p.shape, generator=g) * 0.05)


def tiny(out: Path):
    torch.manual_seed(0)
    vae = AutoencoderTiny(encoder_block_out_channels=(16, 16, 16), decoder_block_out_channels=(16, 16, 16),
                          num_encoder_blocks=(1, 2, 1), num_decoder_blocks=(1, 2, 1), latent_channels=4).eval()
    random_weights(vae, 0.5)
    save_both_layouts(vae, out, "tiny", torch.float32)
    g = torch.Generator().manual_seed(5)
    t = {"image": torch.rand(2, 3, 32, 32, generator=g) * 2 - 1,
         # σ 2: a good share of values beyond ±3 exercises the tanh clamp.
         "latents": torch.randn(2, 4, 8, 8, generator=g) * 2}
    with torch.no_grad():
        t["encoded"] = vae.encode(t["image"]).latents
        t["decoded"] = vae.decode(t["latents"]).sample
        t["scaled"] = vae.scale_latents(t["encoded"])
        t["unscaled"] = vae.unscale_latents(t["scaled"])
    save_file({k: v.contiguous() for k, v in t.items()}, out / "tiny.safetensors")
    print(f"  taesd tiny: |decoded| max {t['decoded'].abs().max():.3f}, std {t['decoded'].std():.3f}; "
          f"|encoded| max {t['encoded'].abs().max():.3f}")


def default(out: Path):
    torch.manual_seed(0)
    vae = AutoencoderTiny().eval()
    random_weights(vae, 0.3)
    with torch.no_grad():
        for p in vae.parameters():
            p.copy_(p.half().float())
    save_both_layouts(vae, out, "default", torch.float16)
    g = torch.Generator().manual_seed(6)
    t = {"latents": torch.randn(1, 4, 16, 16, generator=g), "image": torch.rand(1, 3, 64, 64, generator=g) * 2 - 1}
    with torch.no_grad():
        t["decoded"] = vae.decode(t["latents"]).sample
        t["encoded"] = vae.encode(t["image"]).latents
    save_file({k: v.contiguous() for k, v in t.items()}, out / "default.safetensors")
    print(f"  taesd default: decoded {tuple(t['decoded'].shape)} |max| {t['decoded'].abs().max():.3f}, "
          f"std {t['decoded'].std():.3f}; encoded std {t['encoded'].std():.3f}")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: fixtures_taesd.py OUTDIR")
    out = Path(sys.argv[1]) / "taesd"
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(2)
    tiny(out)
    default(out)


if __name__ == "__main__":
    main()
