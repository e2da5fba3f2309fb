#pragma once
// Loading a state dict into a module whose parameter names equal the checkpoint's keys.
#include "core/io/safetensors.h"

#include <torch/nn/module.h>

#include <string>
#include <vector>

namespace dd::nn {

// Copies `weights` into every parameter and buffer of `module` (cast to the module's dtype; zero-copy
// when the dtype already matches). A missing key or a wrong shape throws dd::io::ModelFileError naming
// `source` (e.g. "unet"), the key and the expected shape. Returns the keys of `weights` the module does
// not have, so callers decide whether leftovers are an error (most are) or known extras (position_ids).
std::vector<std::string> loadWeights(torch::nn::Module& module, const io::TensorMap& weights, const std::string& source);

} // namespace dd::nn
