#pragma once
// Applies A1111 prompt weights to text-encoder hidden states. Needs torch (dd_core).
#include <torch/torch.h>

#include <vector>

namespace dd::text {

enum class EmphasisMode {
    Original,  // A1111 default: scale each token, then restore the chunk's overall mean
    NoNorm,    // A1111 "No norm": scale only (A1111 suggests it for SDXL)
    Ignore,    // weights parsed but not applied
};

// z: [B, T, C] hidden states of one chunk batch (T = 77); weights: T values shared by every row,
// or B·T values row by row. Returns a new tensor, z's dtype and device; the mean is taken over
// the whole tensor, all rows together, as A1111 does.
// Ref: A1111 modules/sd_emphasis.py (EmphasisOriginal, EmphasisOriginalNoNorm).
torch::Tensor applyEmphasis(const torch::Tensor& z, const std::vector<float>& weights, EmphasisMode mode);

} // namespace dd::text
