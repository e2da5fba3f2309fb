#pragma once
// MemoryPlan device "balanced": the model's networks spread over the CUDA devices (memory::placeBalanced,
// diffusers' device_map="balanced"): largest network first, each device holding at most its cap in weights
// (the plan's max_memory, else the device's total memory); a network that fits nowhere runs on the CPU. The
// engine then runs each stage where its network is and moves only the small tensors between them: the prompt
// embeddings to the UNet's device, the latents to the VAE's.
#include "core/api/memory_plan.h"
#include "core/memory/balanced.h"
#include "core/pipeline/sd_model.h"

#include <string>
#include <vector>

namespace dd::pipeline {

// `p` with every network's device and ledger label set for `model` (a model path or kDemoModel: configs and
// tensor headers are read, no weights); p.device becomes the UNet's. `standIns` replace the CUDA devices: tests
// on a machine without GPUs place on named CPU stand-ins, told apart by their labels in the ledger.
// Throws std::invalid_argument when there is no CUDA device (and no stand-in), dd::io::ModelFileError for a bad model.
Placement balancedPlacement(const std::string& model, const api::MemoryPlan& plan, Placement p,
                            const std::vector<memory::DeviceCap>& standIns = {});

// "unet=cuda:0 text_encoder=cuda:1 vae=cuda:1", by label (the sidecar's environment line).
std::string placementSummary(const Placement& p);

} // namespace dd::pipeline
