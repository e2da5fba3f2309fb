// Ref: diffusers pipelines/controlnet/pipeline_controlnet.py (prepare_image: [0, 1] pixels repeated per image and
// doubled under CFG; controlnet_keep; the loop: the ControlNet sees the UNet's scaled input and the same prompt
// embeddings, cond_scale = weight × keep), models/controlnets/multicontrolnet.py (residuals summed).
#include "core/pipeline/control_stack.h"

#include "core/io/controlnet_file.h"
#include "core/io/model_error.h"
#include "core/nn/config_value.h"
#include "core/nn/load_weights.h"
#include "core/pipeline/sd_model.h"

#include <torch/torch.h>

#include <algorithm>
#include <filesystem>

namespace dd::pipeline {
namespace {

std::string placementKey(const std::string& path, torch::Device home, torch::ScalarType dtype, bool channelsLast) {
    std::error_code ec;
    const auto time = std::filesystem::last_write_time(path, ec);
    return path + "|" + std::to_string(ec ? 0 : time.time_since_epoch().count()) + "|" + home.str() + "|" +
           std::string(c10::toString(dtype)) + "|" + (channelsLast ? "cl" : "");
}

// A ControlNet made for another model family would fail deep inside a convolution; say which one and why.
void checkFits(const nn::ControlNetConfig& c, const SdModel& m, const std::string& path) {
    const auto& u = m.unet->config();
    auto refuse = [&](const std::string& why) {
        throw std::invalid_argument("ControlNet " + path + " does not fit this model (" + std::string(io::familyName(m.family)) +
                                    "): " + why);
    };
    if ((c.additionEmbedType == "text_time") != (u.additionEmbedType == "text_time"))
        refuse(c.additionEmbedType == "text_time" ? "it is an SDXL ControlNet" : "it is not an SDXL ControlNet");
    if (c.blockOutChannels != u.blockOutChannels || c.layersPerBlock != u.layersPerBlock || c.inChannels != u.inChannels)
        refuse("its blocks differ from the UNet's (block_out_channels, layers_per_block or in_channels)");
    if (c.crossAttentionDim.front() != u.crossAttentionDim.front())
        refuse("cross_attention_dim " + std::to_string(c.crossAttentionDim.front()) + " vs the UNet's " +
               std::to_string(u.crossAttentionDim.front()));
    if (c.hintFactor() != m.vaeScaleFactor())
        refuse("its control image encoder downsamples by " + std::to_string(c.hintFactor()) + ", the VAE by " +
               std::to_string(m.vaeScaleFactor()));
}

// An original ControlNet file does not store its heads or SDXL's time-id width; it is a copy of its UNet's
// encoder, so the UNet's values are the right ones (when the levels agree; checkFits refuses the rest).
void adoptUnetValues(nlohmann::json& config, const nn::UNetConfig& u) {
    if (nn::configValue(config, "block_out_channels", std::vector<int64_t>{}) != u.blockOutChannels) return;
    config["attention_head_dim"] = u.heads;
    if (config.contains("addition_embed_type")) config["addition_time_embed_dim"] = u.additionTimeEmbedDim;
}

torch::Tensor hintTensor(const api::Image& img, const api::GenerationSettings& s, bool cfg, torch::Device device) {
    if (img.width != s.width || img.height != s.height || img.rgb.size() != size_t(img.width) * size_t(img.height) * 3)
        throw std::invalid_argument("a control image is " + std::to_string(img.width) + "x" + std::to_string(img.height) +
                                    " but the run is " + std::to_string(s.width) + "x" + std::to_string(s.height) +
                                    ": resize it first (imaging/control_preprocess)");
    auto t = torch::from_blob(const_cast<uint8_t*>(img.rgb.data()), {1, img.height, img.width, 3}, torch::kUInt8)
                 .permute({0, 3, 1, 2})
                 .to(torch::kFloat32)
                 .div(255.0);
    t = t.repeat({s.batchSize, 1, 1, 1});
    if (cfg) t = torch::cat({t, t});
    return t.to(device);
}

} // namespace

bool controlActiveAt(double start, double end, int64_t step, int64_t steps) {
    const double from = double(step) / double(steps), to = double(step + 1) / double(steps);
    return !(from < start || to > end);
}

std::vector<api::ControlNetSetting> ControlStack::prepare(const SdModel& m, const api::GenerationSettings& s,
                                                               const std::vector<api::Image>& images, torch::Device home,
                                                               torch::Device compute, torch::ScalarType dtype,
                                                               bool channelsLast, bool cfg,
                                                               const std::function<void(const torch::nn::Module*)>& release) {
    if (images.size() != s.controlnets.size())
        throw std::invalid_argument(std::to_string(s.controlnets.size()) + " ControlNet(s) but " + std::to_string(images.size()) +
                                    " control image(s)");
    std::vector<Loaded> keep;
    std::vector<api::ControlNetSetting> applied = s.controlnets;
    m_active.clear();
    for (size_t i = 0; i < s.controlnets.size(); ++i) {
        const auto& c = s.controlnets[i];
        const std::string key = placementKey(c.model, home, dtype, channelsLast);
        auto reuse = [&](std::vector<Loaded>& from) -> Loaded* {
            const auto it = std::find_if(from.begin(), from.end(), [&](const Loaded& l) { return l.key == key && l.net; });
            if (it == from.end()) return nullptr;
            keep.push_back(std::move(*it));
            from.erase(it);
            return &keep.back();
        };
        // The same ControlNet twice in one run (two images) is one network.
        const auto same = std::find_if(keep.begin(), keep.end(), [&](const Loaded& l) { return l.key == key; });
        const Loaded* l = same != keep.end() ? &*same : reuse(m_loaded);
        if (!l) {
            auto file = io::openControlNet(c.model);
            if (file.derivedConfig) adoptUnetValues(file.config, m.unet->config());
            const auto config = nn::ControlNetConfig::fromJson(file.config, c.model + (file.derivedConfig ? "" : "/config.json"));
            checkFits(config, m, c.model);
            nn::ControlNetModel net = nn::buildForLoading([&] { return nn::ControlNetModel(config); });
            const auto unused = nn::loadWeights(*net, file.weights, c.model, nn::LoadTarget{home, dtype});
            if (!unused.empty())
                throw io::ModelFileError(c.model, "unexpected weight '" + unused.front() + "' (" + std::to_string(unused.size()) +
                                                      " unexpected in all): the config does not describe these weights");
            placeNetwork(*net, home, dtype, channelsLast);
            net->eval();
            keep.push_back({key, io::controlNetHash(file.weightsPath), net});
            l = &keep.back();
        } else {
            checkFits(l->net->config(), m, c.model);
        }
        applied[i].hash = l->hash;
        m_active.push_back({l->net, hintTensor(images[i], s, cfg, compute), c.weight, c.guidanceStart, c.guidanceEnd});
    }
    for (auto& gone : m_loaded)
        if (gone.net && release) release(gone.net.get());
    m_loaded = std::move(keep);
    m_dtype = dtype;
    return applied;
}

void ControlStack::setAttention(const nn::AttentionOptions& a) {
    for (auto& l : m_loaded) l.net->setAttention(a);
}

std::optional<nn::ControlResiduals> ControlStack::residuals(int64_t step, int64_t steps, const torch::Tensor& input,
                                                            const torch::Tensor& timestep, const torch::Tensor& embeds,
                                                            const std::optional<nn::AddedCond>& added,
                                                            torch::ScalarType dtype) {
    std::optional<nn::ControlResiduals> sum;
    std::optional<nn::AddedCond> addedHere;
    if (added) addedHere = nn::AddedCond{added->textEmbeds.to(m_dtype), added->timeIds.to(m_dtype)};
    for (auto& a : m_active) {
        // Outside its range diffusers still runs the ControlNet with scale 0, which adds exact zeros: skipped here.
        if (!controlActiveAt(a.start, a.end, step, steps)) continue;
        auto r = a.net->forward(input.to(m_dtype), timestep, embeds.to(m_dtype), addedHere, a.hint.to(m_dtype), a.weight);
        if (!sum) {
            sum = std::move(r);
            continue;
        }
        for (size_t k = 0; k < r.down.size(); ++k) sum->down[k] = sum->down[k] + r.down[k];
        sum->mid = sum->mid + r.mid;
    }
    if (sum) {
        for (auto& d : sum->down) d = d.to(dtype);
        sum->mid = sum->mid.to(dtype);
    }
    return sum;
}

void ControlStack::clear() {
    m_active.clear();
    m_loaded.clear();
}

int64_t ControlStack::parameterCount() const {
    int64_t n = 0;
    for (const auto& l : m_loaded)
        for (const auto& p : l.net->parameters()) n += p.numel();
    return n;
}

} // namespace dd::pipeline
