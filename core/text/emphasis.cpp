// Ref: AUTOMATIC1111 modules/sd_emphasis.py::EmphasisOriginal.after_transformers and
// EmphasisOriginalNoNorm.after_transformers.
#include "core/text/emphasis.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace dd::text {

torch::Tensor applyEmphasis(const torch::Tensor& z, const std::vector<float>& weights, EmphasisMode mode) {
    if (z.dim() != 3) throw std::invalid_argument("applyEmphasis: z must be [B, T, C]");
    const int64_t b = z.size(0), t = z.size(1);
    const auto n = static_cast<int64_t>(weights.size());
    if (n != t && n != b * t)
        throw std::invalid_argument("applyEmphasis: " + std::to_string(n) + " weights for " + std::to_string(b) + "×" +
                                    std::to_string(t) + " tokens");
    // All weights 1 is the identity (A1111's ratio is then mean / mean); computing it would give 0 / 0 = NaN
    // for an embedding whose mean rounds to exactly 0 (seen: an empty prompt through a random-weight CLIP).
    const bool neutral = std::all_of(weights.begin(), weights.end(), [](float v) { return v == 1.0f; });
    if (mode == EmphasisMode::Ignore || neutral) return z;
    // Like A1111 the weights stay float32, so a half z is scaled in float32; the result is cast back.
    const auto w = torch::tensor(weights, torch::kFloat32).reshape({n == t ? 1 : b, t, 1}).to(z.device());
    if (mode == EmphasisMode::NoNorm) return (z * w).to(z.scalar_type());
    // Restoring the mean has no theoretical basis; A1111 keeps it because it avoids artifacts.
    const auto originalMean = z.mean();
    const auto scaled = z * w;
    const auto scaledMean = scaled.mean();
    if (scaledMean.item<double>() == 0.0) return scaled.to(z.scalar_type());  // no mean to restore
    return (scaled * (originalMean / scaledMean)).to(z.scalar_type());
}

} // namespace dd::text
