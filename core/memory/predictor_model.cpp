// ModelShape from what the engine would load: configs normalised by the networks' own fromJson, parameter
// counts from tensor sizes (a checkpoint's tensors are memory-mapped views: nothing is read).
#include "core/memory/predictor.h"

#include "core/io/checkpoint.h"
#include "core/io/controlnet_file.h"
#include "core/io/lora_file.h"
#include "core/pipeline/engine.h"
#include "core/pipeline/sd_model.h"

#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <set>

namespace dd::memory {
namespace {

UNetShape unetShape(const nn::UNetConfig& c, int64_t params) {
    UNetShape u;
    u.params = params;
    u.inChannels = c.inChannels;
    u.blockOutChannels = c.blockOutChannels;
    for (const auto& t : c.downBlockTypes) u.attention.push_back(t == "CrossAttnDownBlock2D");
    u.heads = c.heads;
    u.transformerLayers = c.transformerLayers;
    u.layersPerBlock = c.layersPerBlock.empty() ? 2 : c.layersPerBlock.front();
    u.crossAttentionDim = c.crossAttentionDim.empty() ? 768 : c.crossAttentionDim.front();
    return u;
}

VaeShape vaeShape(const nn::VaeConfig& c, int64_t params) {
    VaeShape v;
    v.params = params;
    v.blockOutChannels = c.blockOutChannels;
    v.latentChannels = c.latentChannels;
    v.sampleSize = c.sampleSize;
    v.forceUpcast = c.forceUpcast;
    v.midAttention = c.midBlockAddAttention;
    return v;
}

TextEncoderShape textShape(const nn::ClipTextConfig& c, int64_t params) {
    TextEncoderShape t;
    t.params = params;
    t.hiddenSize = c.hiddenSize;
    t.intermediateSize = c.intermediateSize;
    t.heads = c.numAttentionHeads;
    t.tokens = c.maxPositionEmbeddings;
    t.vocabSize = c.vocabSize;
    return t;
}

int64_t count(const io::TensorMap& tensors) {
    int64_t n = 0;
    for (const auto& [name, t] : tensors) n += t.numel();
    return n;
}

int64_t largest(const io::TensorMap& tensors) {
    int64_t n = 0;
    for (const auto& [name, t] : tensors) n = std::max(n, t.numel());
    return n;
}

int64_t count(const torch::nn::Module& m) {
    int64_t n = 0;
    for (const auto& p : m.parameters()) n += p.numel();
    for (const auto& b : m.buffers()) n += b.numel();
    return n;
}

int64_t weightFileBytes(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::is_regular_file(path, ec)) return int64_t(fs::file_size(path, ec));
    int64_t bytes = 0;
    for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
        if (it->is_regular_file() && it->path().extension() == ".safetensors") bytes += int64_t(it->file_size());
    return bytes;
}

} // namespace

ModelShape modelShapeOf(const pipeline::SdModel& m) {
    ModelShape s;
    s.name = m.displayName;
    s.unet = unetShape(m.unet->config(), count(*m.unet));
    s.vae = vaeShape(m.vae->config(), count(*m.vae));
    for (const auto* te : {&m.textEncoder, &m.textEncoder2})
        if (*te) s.textEncoders.push_back(textShape((*te)->config(), count(**te)));
    return s;
}

ModelShape modelShapeOf(const std::string& model) {
    if (model.empty() || model == pipeline::kDemoModel) {
        c10::InferenceMode guard;
        return modelShapeOf(*pipeline::makeDemoModel(torch::kCPU));
    }
    const io::Checkpoint ck = io::loadCheckpoint(model);
    ModelShape s;
    s.name = std::filesystem::path(model).filename().string();
    const auto& unet = ck.components.at("unet");
    const auto& vae = ck.components.at("vae");
    s.unet = unetShape(nn::UNetConfig::fromJson(ck.configs.at("unet")), count(unet));
    s.unet.largestTensor = largest(unet);
    s.vae = vaeShape(nn::VaeConfig::fromJson(ck.configs.at("vae")), count(vae));
    s.vae.largestTensor = largest(vae);
    for (const std::string name : {"text_encoder", "text_encoder_2"}) {
        if (!ck.components.count(name)) continue;
        const auto& weights = ck.components.at(name);
        const auto& j = ck.configs.at(name);
        // SDXL's second encoder always has its projection; the first reads its config's architecture.
        const auto config = name == "text_encoder_2" ? nn::ClipTextConfig::fromJson(j, true) : nn::ClipTextConfig::fromJson(j);
        s.textEncoders.push_back(textShape(config, count(weights)));
        s.textEncoders.back().largestTensor = largest(weights);
    }
    s.fileBytes = weightFileBytes(model);
    return s;
}

int64_t loraExtraBytes(const std::vector<std::string>& loraFiles, const MemoryPlan& plan, bool sidePath) {
    auto bytes = [&](io::LoraComponent c) {
        return (c == io::LoraComponent::Unet ? plan.unet : plan.textEncoder) == Precision::FP32 ? 4 : 2;
    };
    int64_t total = 0;
    std::map<std::pair<io::LoraComponent, std::string>, int64_t> touched;
    for (const auto& path : loraFiles) {
        for (const auto& l : io::loadLoraFile(path).layers) {
            if (sidePath) {
                total += (l.down.numel() + l.up.numel()) * bytes(l.component);
            } else {
                const int64_t weight = l.up.size(0) * (l.down.numel() / l.down.size(0));
                touched[{l.component, l.module}] = weight * bytes(l.component);
            }
        }
    }
    for (const auto& [_, b] : touched) total += b;
    return total;
}

int64_t controlNetParameters(const std::vector<std::string>& controlNets) {
    std::set<std::string> seen;
    int64_t n = 0;
    for (const auto& path : controlNets)
        if (seen.insert(path).second) n += count(io::openControlNet(path).weights);
    return n;
}

} // namespace dd::memory
