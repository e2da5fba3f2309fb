#!/usr/bin/env python3
"""Images in other tools' metadata layouts, and what the sd-parsers package (0.6, pinned) reads from them, for
tests/core/settings/test_dialects.cpp.

Each image is written in its tool's documented layout: A1111's "parameters" text; ComfyUI's API graph ("prompt",
a second pass after a latent upscale, a preview branch that is not the saved image); InvokeAI's "Dream" command line,
2.x "sd-metadata" and 3.x "invokeai_metadata"; NovelAI's Description / Software / Source / Comment; Fooocus' JSON
scheme; SwarmUI's "sui_image_params"; Easy Diffusion's one chunk per field; Draw Things' XMP with an
exif:UserComment JSON. sd-parsers reads the first six; for the last three (which it does not know) the expected
fields are the ones the layout holds, as sd-prompt-reader documents them.

Writes <outdir>/dialects/<name>.png and cases.json: per image the prompt, negative prompt, seed, steps, CFG, size
and model sd-parsers read (or the layout holds), the sampler name as written and the A1111 label it stands for.
"""
import gzip
import json
import pathlib
import sys
from xml.sax.saxutils import escape

from PIL import Image, PngImagePlugin
from sd_parsers import Eagerness, ParserManager

OUT = pathlib.Path(sys.argv[1]) / "dialects"

COMFY = {
    "1": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "sd15/dreamshaper_8.safetensors"}},
    "2": {"class_type": "CLIPTextEncode", "inputs": {"text": "a castle on a hill, golden hour", "clip": ["1", 1]}},
    "3": {"class_type": "CLIPTextEncode", "inputs": {"text": "blurry, low quality", "clip": ["1", 1]}},
    "4": {"class_type": "EmptyLatentImage", "inputs": {"width": 64, "height": 48, "batch_size": 1}},
    "5": {"class_type": "KSampler", "inputs": {"seed": 1234, "steps": 30, "cfg": 7.5, "sampler_name": "dpmpp_2m",
                                               "scheduler": "karras", "denoise": 1.0, "model": ["1", 0], "positive": ["2", 0],
                                               "negative": ["3", 0], "latent_image": ["4", 0]}},
    "6": {"class_type": "LatentUpscaleBy", "inputs": {"upscale_method": "nearest-exact", "scale_by": 1.5, "samples": ["5", 0]}},
    "7": {"class_type": "KSampler", "inputs": {"seed": 1234, "steps": 12, "cfg": 7.5, "sampler_name": "dpmpp_2m",
                                               "scheduler": "karras", "denoise": 0.5, "model": ["1", 0], "positive": ["2", 0],
                                               "negative": ["3", 0], "latent_image": ["6", 0]}},
    "8": {"class_type": "VAEDecode", "inputs": {"samples": ["7", 0], "vae": ["1", 2]}},
    "9": {"class_type": "SaveImage", "inputs": {"images": ["8", 0], "filename_prefix": "ComfyUI"}},
}

LINK_TYPES = {"model": "MODEL", "clip": "CLIP", "positive": "CONDITIONING", "negative": "CONDITIONING", "vae": "VAE",
              "latent_image": "LATENT", "samples": "LATENT", "images": "IMAGE"}


def workflow(graph):
    """The UI graph's links for an API graph, as ComfyUI saves them beside it ([id, from, slot, to, slot, type])."""
    links = []
    for to, node in graph.items():
        for name, value in node["inputs"].items():
            if isinstance(value, list):
                links.append([len(links) + 1, int(value[0]), value[1], int(to), 0, LINK_TYPES[name]])
    return {"nodes": [{"id": int(k), "type": v["class_type"]} for k, v in graph.items()], "links": links}


DRAW_THINGS_JSON = {"c": "a castle on a hill", "uc": "blurry", "model": "sd_v1.5_f16.ckpt", "sampler": "DPM++ 2M Karras",
                    "scale": 7.5, "seed": 1234, "size": "64x48", "steps": 30, "strength": 1, "seed_mode": "Scale Alike"}

CASES = [
    # name, text chunks, the sampler as written, the A1111 label it means, who reads it
    ("a1111", {"parameters": "a castle on a hill\nNegative prompt: blurry\nSteps: 30, Sampler: DPM++ 2M, Schedule type: Karras, "
                             "CFG scale: 7.5, Seed: 1234, Size: 64x48, Model hash: 6ce0161689, Model: dreamshaper_8, "
                             "RNG: CPU, Version: v1.10.1"},
     "DPM++ 2M", "DPM++ 2M Karras", "sd-parsers"),
    ("comfyui", {"prompt": json.dumps(COMFY), "workflow": json.dumps(workflow(COMFY))}, "dpmpp_2m", "DPM++ 2M Karras", "sd-parsers"),
    ("invokeai_dream", {"Dream": '"a castle on a hill [blurry, low quality]" -s 30 -S 1234 -W 64 -H 48 -C 7.5 -A k_euler_a'},
     "k_euler_a", "Euler a", "sd-parsers"),
    ("invokeai_2", {"sd-metadata": json.dumps({"model": "stable diffusion", "model_weights": "deliberate_v2", "app_id": "invoke-ai/InvokeAI",
                                               "app_version": "2.3.0", "image": {"prompt": [{"prompt": "a castle on a hill [blurry]", "weight": 1.0}],
                                                                                 "steps": 30, "cfg_scale": 7.5, "height": 48, "width": 64,
                                                                                 "seed": 1234, "type": "txt2img", "sampler": "k_lms"}})},
     "k_lms", "LMS", "sd-parsers"),
    ("invokeai_3", {"invokeai_metadata": json.dumps({"generation_mode": "txt2img", "positive_prompt": "a castle on a hill",
                                                     "negative_prompt": "blurry", "width": 64, "height": 48, "seed": 1234,
                                                     "rand_device": "cpu", "cfg_scale": 7.5, "steps": 30, "scheduler": "euler",
                                                     "model": {"model_name": "juggernaut", "base_model": "sd-1", "model_type": "main"}})},
     "euler", "Euler", "sd-parsers"),
    ("novelai", {"Title": "AI generated image", "Description": "a castle on a hill", "Software": "NovelAI",
                 "Source": "Stable Diffusion XL C1E1DE52",
                 "Comment": json.dumps({"steps": 30, "sampler": "k_euler_ancestral", "seed": 1234, "strength": 0.7, "noise": 0.0,
                                        "scale": 7.5, "uc": "blurry", "width": 64, "height": 48})},
     "k_euler_ancestral", "Euler a", "sd-parsers"),
    ("swarmui", {"parameters": json.dumps({"sui_image_params": {"prompt": "a castle on a hill", "negativeprompt": "blurry",
                                                                "model": "sd15/dreamshaper_8", "seed": 1234, "steps": 30, "cfgscale": 7.5,
                                                                "width": 64, "height": 48, "sampler": "euler_ancestral",
                                                                "scheduler": "normal", "swarm_version": "0.9.1.1"},
                                           "sui_extra_data": {"date": "2024-08-07"}}, indent=2)},
     "euler_ancestral", "Euler a", "layout"),
    ("easydiffusion", {"prompt": "a castle on a hill", "negative_prompt": "blurry", "seed": "1234",
                       "use_stable_diffusion_model": "dreamshaper_8", "clip_skip": "False", "sampler_name": "dpmpp_2m",
                       "scheduler_name": "karras", "width": "64", "height": "48", "num_inference_steps": "30",
                       "guidance_scale": "7.5", "use_lora_model": "None"},
     "dpmpp_2m", "DPM++ 2M Karras", "layout"),
    ("drawthings", {"XML:com.adobe.xmp": (
        '<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
        '<rdf:Description rdf:about="" xmlns:exif="http://ns.adobe.com/exif/1.0/" xmlns:xmp="http://ns.adobe.com/xap/1.0/">'
        '<xmp:CreatorTool>Draw Things</xmp:CreatorTool><exif:UserComment><rdf:Alt><rdf:li xml:lang="x-default">'
        + escape(json.dumps(DRAW_THINGS_JSON)) + '</rdf:li></rdf:Alt></exif:UserComment></rdf:Description></rdf:RDF></x:xmpmeta>')},
     "DPM++ 2M Karras", "DPM++ 2M Karras", "layout"),
    ("a1111_stealth", {"stealth": "a castle on a hill\nNegative prompt: blurry\nSteps: 30, Sampler: Euler a, CFG scale: 7.5, "
                                  "Seed: 1234, Size: 64x48, Model: dreamshaper_8, Version: v1.10.1"},
     "Euler a", "Euler a", "sd-parsers"),
    ("novelai_stealth", {"stealth": json.dumps({"Description": "a castle on a hill", "Software": "NovelAI",
                                                "Source": "Stable Diffusion XL C1E1DE52",
                                                "Comment": json.dumps({"steps": 30, "sampler": "k_euler", "seed": 1234,
                                                                       "scale": 7.5, "uc": "blurry", "width": 64, "height": 48})})},
     "k_euler", "Euler", "sd-parsers"),
]

LAYOUT = {"prompt": "a castle on a hill", "negative": "blurry", "seed": 1234, "steps": 30, "cfg": 7.5, "width": 64, "height": 48}
LAYOUT_MODELS = {"swarmui": "dreamshaper_8", "easydiffusion": "dreamshaper_8", "drawthings": "sd_v1.5_f16.ckpt"}


def stealth_image(text):
    """The stealth PNG info layout: in each pixel's alpha low bit, down each column then the next, MSB first:
    "stealth_pngcomp", the gzip payload's length in bits (32-bit big-endian), the payload."""
    payload = gzip.compress(text.encode())
    data = b"stealth_pngcomp" + (len(payload) * 8).to_bytes(4, "big") + payload
    bits = [(byte >> (7 - i)) & 1 for byte in data for i in range(8)]
    image = Image.new("RGBA", (64, 48), (120, 30, 200, 255))
    px = image.load()
    for n, bit in enumerate(bits):
        x, y = divmod(n, image.height)
        r, g, b, a = px[x, y]
        px[x, y] = (r, g, b, (a & ~1) | bit)
    return image


def png(path, chunks):
    info = PngImagePlugin.PngInfo()
    if "stealth" in chunks:  # no text chunks: the text is in the pixels
        return stealth_image(chunks["stealth"]).save(path)
    for k, v in chunks.items():
        if k.startswith("XML:"):
            info.add_itxt(k, v)
        else:
            info.add_text(k, v)
    Image.new("RGB", (64, 48), (120, 30, 200)).save(path, pnginfo=info)


def flat(metadata):
    """sd-parsers' metadata, nested per node for ComfyUI ({"EmptyLatentImage": [{"width": …}]}), as one dict."""
    out = {}
    for k, v in metadata.items():
        if isinstance(v, list) and v and isinstance(v[0], dict):
            for d in v:
                out.update({kk.lower(): vv for kk, vv in d.items()})
        else:
            out[k.lower()] = v
    return out


def read_with_sd_parsers(path):
    p = ParserManager().parse(str(path), eagerness=Eagerness.EAGER)
    s = p.samplers[0]
    every = {**flat(p.metadata), **{k.lower(): v for k, v in s.parameters.items()}}
    size = str(every.get("size", "x")).split("x")
    got = {"prompt": ", ".join(x.value for x in s.prompts), "negative": ", ".join(x.value for x in s.negative_prompts),
           "seed": int(every["seed"]), "steps": int(every["steps"]), "cfg": float(every["cfg_scale"]),
           "width": int(every.get("width", size[0])), "height": int(every.get("height", size[-1])),
           "model": s.model.name if s.model else ""}
    if len(p.samplers) > 1:  # a second pass: what the hires fix restores
        second = p.samplers[-1].parameters
        got.update(hires_steps=int(second["steps"]), hires_denoise=float(second["denoise"]))
    return got


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    cases = []
    for name, chunks, sampler, label, reader in CASES:
        path = OUT / f"{name}.png"
        png(path, chunks)
        want = read_with_sd_parsers(path) if reader == "sd-parsers" else dict(LAYOUT, model=LAYOUT_MODELS[name])
        cases.append(dict(want, name=name, sampler_written=sampler, sampler=label, reader=reader))
    (OUT / "cases.json").write_text(json.dumps(cases, indent=1))


if __name__ == "__main__":
    main()
