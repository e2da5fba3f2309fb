#pragma once
// Small checks the network tests share.
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
