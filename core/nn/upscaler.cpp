#include "core/nn/upscaler.h"

#include "core/io/model_error.h"
#include "core/io/safetensors.h"
#include "core/nn/layers.h"
#include "core/nn/upscaler_nets.h"

#include <algorithm>
#include <filesystem>

namespace dd::nn {

std::shared_ptr<UpscalerImpl> makeUpscaler(const UpscalerConfig& config) {
    switch (config.arch) {
    case UpscalerArch::Esrgan: return makeEsrgan(config);
    case UpscalerArch::Compact: return makeCompact(config);
    case UpscalerArch::SwinIR: return makeSwinIR(config);
    }
    throw std::logic_error("unknown upscaler architecture");
}

LoadedUpscaler loadUpscaler(const std::string& path, const LoadTarget& target) {
    namespace fs = std::filesystem;
    std::string ext = fs::path(path).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    if (ext == ".pth" || ext == ".pt" || ext == ".ckpt" || ext == ".bin") throw io::ModelFileError(path, pickleUpscalerMessage());
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) throw io::ModelFileError(path, "upscaler file not found");
    const auto file = io::SafetensorsFile::open(path);
    const auto detected = detectUpscaler(file->tensors(), path);
    io::TensorMap weights;
    for (const auto& [from, to] : detected.keys) weights[to] = file->tensor(from);
    auto net = buildForLoading([&] { return makeUpscaler(detected.config); });
    const auto extra = loadWeights(*net, weights, path, target);
    if (!extra.empty())
        throw io::ModelFileError(path, "the " + detected.config.architectureName() + " upscaler has " + std::to_string(extra.size()) +
                                           " weight(s) its architecture does not use, e.g. '" + extra.front() + "'");
    net->eval();
    return {net, path};
}

} // namespace dd::nn
