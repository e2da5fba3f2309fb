"""Reference for the embedded default model (resources/models/shapes, trained by tools/train): diffusers'
own StableDiffusionPipeline loads the folder with from_pretrained and renders prompts with CPU generators.
The C++ engine must produce the same 8-bit images (tests/embedded/test_embedded_model.cpp).

Writes <outdir>/embedded/shapes/ (the copy of the model the references were made from, so that a retrained
model never meets stale references), cases.json and case_<n>.safetensors ("image": uint8 [H, W, 3]).
"""
import json
import os
import pathlib
import shutil
import sys

import numpy as np
import torch
from diffusers import StableDiffusionPipeline
from safetensors.torch import save_file

from fixtures_schedulers import NAMES as SCHEDULERS

# DD_EMBEDDED_MODEL: another folder (a checkpoint of a run in progress), as in the C++ test.
MODEL = pathlib.Path(os.environ.get("DD_EMBEDDED_MODEL") or
                     pathlib.Path(__file__).resolve().parents[2] / "resources/models/shapes")
OUT = pathlib.Path(sys.argv[1]) / "embedded"


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    if not (MODEL / "model_index.json").exists():
        # No reference without a model; the C++ test then fails and says why. The other fixtures still build.
        print(f"fixtures_embedded: {MODEL} has no model_index.json (train it: docs/embedded-model.md); skipped")
        return
    OUT.mkdir(parents=True)
    shutil.copytree(MODEL, OUT / "shapes")
    pipe = StableDiffusionPipeline.from_pretrained(OUT / "shapes", safety_checker=None, requires_safety_checker=False)
    pipe.set_progress_bar_config(disable=True)
    ids = pipe.tokenizer("a small red circle").input_ids
    assert ids[0] == 49406 and ids[-1] == 49407 and len(ids) == 6, f"tokenizer differs from CLIP: {ids}"
    base_scheduler = pipe.scheduler
    cases = [
        # The app's defaults for this model (Euler a, 20 steps, CFG 3: core/resources.h) at its 128 × 128.
        dict(prompt="a small red circle in the top left on a blue background", seed=3, sampler="Euler a", steps=20, cfg=3.0),
        dict(prompt="a large yellow star on a black background", seed=11, sampler="DPM++ 2M Karras", steps=20, cfg=7.0),
        dict(prompt="a green triangle", seed=5, sampler="DDIM", steps=12, cfg=5.0),
    ]
    for n, case in enumerate(cases):
        cls, opts = SCHEDULERS[case["sampler"]]
        pipe.scheduler = cls.from_config(base_scheduler.config, **opts)
        image = pipe(prompt=case["prompt"], num_inference_steps=case["steps"], guidance_scale=case["cfg"],
                     generator=torch.Generator().manual_seed(case["seed"]), height=128, width=128,
                     output_type="np").images[0]
        save_file({"image": torch.from_numpy((image * 255).round().astype(np.uint8)).contiguous()},
                  OUT / f"case_{n}.safetensors")
    (OUT / "cases.json").write_text(json.dumps(cases, indent=1))


if __name__ == "__main__":
    main()
