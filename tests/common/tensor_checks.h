#pragma once
// Small checks the network tests share.
#include "core/api/image.h"
#include "core/io/model_error.h"

#include <QString>

#include <torch/torch.h>

#include <limits>

namespace dd::test {

// The largest absolute difference (fp64), infinite when the shapes differ.
inline double maxAbsDifference(const torch::Tensor& a, const torch::Tensor& b) {
    if (a.sizes() != b.sizes()) return std::numeric_limits<double>::infinity();
    return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
}

// [H, W, 3] or [H, W] uint8 (a fixture's picture or mask) → an RGB image, grey repeated in the three channels.
inline api::Image imageOf(torch::Tensor t) {
    if (t.dim() == 2) t = t.unsqueeze(2).expand({t.size(0), t.size(1), 3});
    t = t.contiguous();
    return {int(t.size(1)), int(t.size(0)), {t.data_ptr<uint8_t>(), t.data_ptr<uint8_t>() + t.numel()}};
}

// The ModelFileError message of `load`, or "" when it does not throw.
template <typename F>
QString modelFileErrorOf(F load) {
    try {
        load();
    } catch (const io::ModelFileError& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

} // namespace dd::test
