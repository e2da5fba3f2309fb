#pragma once
// Loading a state dict into a module whose parameter names equal the checkpoint's keys.
#include "core/io/safetensors.h"

#include <torch/nn/module.h>

#include <optional>
#include <string>
#include <vector>

namespace dd::nn {

// Where loaded weights go: floating-point tensors in `dtype`, every tensor onto `device`.
struct LoadTarget {
    torch::Device device = torch::kCPU;
    torch::ScalarType dtype = torch::kFloat32;
};

// Copies `weights` into every parameter and buffer of `module`: to `target`, or without one to each
// parameter's current dtype and device; zero-copy when a file tensor already is what the parameter needs.
// A file tensor that had to be converted gives its mapped pages back once copied (io::releaseMappedPages), so
// with a module built under UninitialisedWeights the peak memory of a load is the loaded weights plus one
// tensor, not the file plus the weights. A missing key or a wrong shape throws dd::io::ModelFileError naming
// `source` (e.g. "unet"), the key and the expected shape. Returns the keys of `weights` the module does
// not have, so callers decide whether leftovers are an error (most are) or known extras (position_ids).
std::vector<std::string> loadWeights(torch::nn::Module& module, const io::TensorMap& weights, const std::string& source,
                                     const std::optional<LoadTarget>& target = std::nullopt);

// "[320, 4, 3, 3]": a shape in messages.
std::string shapeText(c10::IntArrayRef shape);

// Gives back the memory pages of `module`'s weights that are zero-copy views of a model file (weights loaded on
// the CPU in the file's own dtype) and were never written (io::releaseMappedPages); any other weight is left
// alone. The engine calls it when a network's stage is done: its pages are read again (usually from the page
// cache) at the next use, and the process holds only the weights of the stage running, like model offload on
// a GPU, at no copying cost.
void releaseMappedWeights(torch::nn::Module& module);

} // namespace dd::nn
