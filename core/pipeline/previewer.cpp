#include "core/pipeline/previewer.h"

#include "core/io/model_error.h"
#include "core/pipeline/find_taesd.h"
#include "core/pipeline/preview.h"
#include "core/pipeline/taesd_preview.h"

#include <torch/torch.h>

#include <filesystem>

namespace dd::pipeline {
namespace fs = std::filesystem;

void Previewer::useTaesd(const std::string& path, torch::Device device) {
    if (path == m_path) return;
    if (path.empty()) {
        m_taesd = nullptr;
        m_path.clear();
        return;
    }
    auto taesd = nn::loadTaesd(path, device);
    if (!taesd->hasDecoder()) throw io::ModelFileError(path, "this TAESD has no decoder, so it cannot make previews");
    taesd->eval();
    m_taesd = taesd;
    m_path = path;
}

const char* Previewer::kindFor(int64_t channels) const {
    return m_taesd && m_taesd->config().latentChannels == channels ? "taesd" : "linear";
}

api::Image Previewer::make(const at::Tensor& latent, io::ModelFamily family) {
    ++m_built;
    if (std::string(kindFor(latent.size(0))) != "taesd") return latentPreview(latent, family);
    const auto params = m_taesd->parameters();
    if (!params.empty() && params.front().device() != latent.device()) m_taesd->to(latent.device());
    return taesdPreview(*m_taesd, latent);
}

std::string findTaesdNextTo(const std::string& modelPath, bool xl) {
    std::error_code ec;
    const fs::path model(modelPath);
    std::vector<fs::path> folders;
    if (fs::is_directory(model, ec)) folders.push_back(model);
    if (model.has_parent_path()) folders.push_back(model.parent_path());
    std::vector<std::string> names = {"taesd"};
    if (xl) names.insert(names.begin(), "taesdxl");
    for (const auto& folder : folders)
        for (const auto& name : names) {
            if (fs::is_regular_file(folder / name / "config.json", ec)) return (folder / name).string();
            if (fs::is_regular_file(folder / (name + "_decoder.safetensors"), ec)) return (folder / (name + "_decoder.safetensors")).string();
        }
    return {};
}

} // namespace dd::pipeline
