#include "core/nn/load_weights.h"

#include "core/io/model_error.h"

#include <set>
#include <sstream>

namespace dd::nn {

std::string shapeText(c10::IntArrayRef shape) {
    std::ostringstream o;
    o << shape;
    return o.str();
}

std::vector<std::string> loadWeights(torch::nn::Module& module, const io::TensorMap& weights, const std::string& source,
                                     const std::optional<LoadTarget>& target) {
    torch::NoGradGuard noGrad;
    std::set<std::string> used;
    auto assign = [&](const std::string& name, torch::Tensor& param) {
        const auto it = weights.find(name);
        if (it == weights.end())
            throw io::ModelFileError(source, "weight '" + name + "' is missing (expected shape " + shapeText(param.sizes()) + ")");
        if (it->second.sizes() != param.sizes())
            throw io::ModelFileError(source, "weight '" + name + "' has shape " + shapeText(it->second.sizes()) +
                                                 " but the model expects " + shapeText(param.sizes()));
        const torch::Tensor& file = it->second;
        const auto device = target ? target->device : param.device();
        const auto dtype = target && file.is_floating_point() ? target->dtype : param.scalar_type();
        auto loaded = file.to(device, dtype);
        if (!loaded.is_alias_of(file)) io::releaseMappedPages(file);
        param.set_data(loaded);
        used.insert(name);
    };
    for (auto& p : module.named_parameters(true)) assign(p.key(), p.value());
    for (auto& b : module.named_buffers(true)) assign(b.key(), b.value());
    std::vector<std::string> unused;
    for (const auto& [k, _] : weights)
        if (!used.count(k)) unused.push_back(k);
    return unused;
}

void releaseMappedWeights(torch::nn::Module& module) {
    for (const auto& p : module.parameters()) io::releaseMappedPages(p);
    for (const auto& b : module.buffers()) io::releaseMappedPages(b);
}

} // namespace dd::nn
