// ModelShape from what the engine would load: configs normalised by the networks' own fromJson, parameter
// counts from tensor sizes (a checkpoint's tensors are memory-mapped views: nothing is read).
#include "core/pipeline/memory_prediction.h"

#include "core/io/checkpoint.h"
#include "core/io/controlnet_file.h"
#include "core/io/lora_file.h"
#include "core/memory/memory_probe.h"
#include "core/pipeline/engine.h"
#include "core/pipeline/model_search.h"
#include "core/pipeline/sd_model.h"
#include "core/text/text_input.h"

#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <set>

namespace dd::pipeline {
namespace fs = std::filesystem;
using memory::ModelShape;

namespace {

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
    std::error_code ec;
    if (fs::is_regular_file(path, ec)) return int64_t(fs::file_size(path, ec));
    int64_t bytes = 0;
    for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
        if (it->is_regular_file() && it->path().extension() == ".safetensors") bytes += int64_t(it->file_size());
    return bytes;
}


// What the predictor reads of a file, kept per path while the file's size and time stay the same: the window
// predicts on every edit, and reading headers costs milliseconds.
template <typename Value>
class PerFile {
public:
    template <typename Read>
    Value get(const std::string& path, Read read) {
        std::error_code ec;
        const auto stamp = std::make_pair(int64_t(fs::file_size(path, ec)), int64_t(fs::last_write_time(path, ec).time_since_epoch().count()));
        std::lock_guard lock(m_mutex);
        if (auto it = m_values.find(path); it != m_values.end() && it->second.first == stamp) return it->second.second;
        Value v = read(path);  // under the lock: two threads asking for one model read it once
        m_values.insert_or_assign(path, std::make_pair(stamp, v));
        return v;
    }

private:
    std::mutex m_mutex;
    std::map<std::string, std::pair<std::pair<int64_t, int64_t>, Value>> m_values;
};

// The run's LoRA files (text::requestedLoras, as the engine looks them up); one that cannot be found is left out
// (the run itself names it).
std::vector<std::string> loraFilesOf(const api::GenerationSettings& s, const std::vector<std::string>& folders) {
    std::vector<std::string> files;
    for (const auto& l : text::requestedLoras(s)) {
        try {
            files.push_back(findLoraFile(l.name, folders, !l.fromPrompt));
        } catch (const std::exception&) {
        }
    }
    return files;
}

} // namespace

ModelShape modelShapeOf(const SdModel& m) {
    ModelShape s;
    s.name = m.displayName;
    s.unet = memory::shapeOf(m.unet->config(), count(*m.unet));
    s.vae = memory::shapeOf(m.vae->config(), count(*m.vae));
    for (const auto* te : {&m.textEncoder, &m.textEncoder2})
        if (*te) s.textEncoders.push_back(memory::shapeOf((*te)->config(), count(**te)));
    return s;
}

ModelShape modelShapeOf(const std::string& model) {
    if (model.empty() || model == kDemoModel) {
        c10::InferenceMode guard;
        return modelShapeOf(*makeDemoModel(torch::kCPU));
    }
    const io::Checkpoint ck = io::loadCheckpoint(model);
    ModelShape s;
    s.name = std::filesystem::path(model).filename().string();
    const auto& unet = ck.components.at("unet");
    const auto& vae = ck.components.at("vae");
    s.unet = memory::shapeOf(nn::UNetConfig::fromJson(ck.configs.at("unet")), count(unet));
    s.unet.largestTensor = largest(unet);
    s.vae = memory::shapeOf(nn::VaeConfig::fromJson(ck.configs.at("vae")), count(vae));
    s.vae.largestTensor = largest(vae);
    for (const std::string name : {"text_encoder", "text_encoder_2"}) {
        if (!ck.components.count(name)) continue;
        const auto& weights = ck.components.at(name);
        const auto& j = ck.configs.at(name);
        // SDXL's second encoder always has its projection; the first reads its config's architecture.
        const auto config = name == "text_encoder_2" ? nn::ClipTextConfig::fromJson(j, true) : nn::ClipTextConfig::fromJson(j);
        s.textEncoders.push_back(memory::shapeOf(config, count(weights)));
        s.textEncoders.back().largestTensor = largest(weights);
    }
    s.fileBytes = weightFileBytes(model);
    return s;
}

int64_t loraExtraBytes(const std::vector<std::string>& loraFiles, const api::MemoryPlan& plan, bool sidePath) {
    auto bytes = [&](io::LoraComponent c) {
        return (c == io::LoraComponent::Unet ? plan.unet : plan.textEncoder) == api::Precision::FP32 ? 4 : 2;
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

bool computesOnCuda(const api::MemoryPlan& plan) {
    if (plan.device == "auto") return memory::cudaDeviceCount() > 0;
    return plan.device.rfind("cuda", 0) == 0 || plan.device == "balanced";
}

memory::PredictInput predictInput(const api::GenerationSettings& s, const PredictionContext& context) {
    static PerFile<int64_t> controlNetParams;
    static PerFile<ModelShape> refiners;
    memory::PredictInput in;
    // A hires fix's second pass is the larger one: every stage after the load runs at its size at worst.
    const api::Size large = s.hires.enabled ? api::hiresSize(s) : api::Size{s.width, s.height};
    in.width = std::max(s.width, large.width);
    in.height = std::max(s.height, large.height);
    in.batch = s.batchSize;
    in.plan = s.plan;
    in.cfg = s.cfgScale > 1.0;
    in.cuda = context.cuda.value_or(computesOnCuda(s.plan));
    in.textCached = context.textCached;
    in.loraSidePath = s.loraMode == "side";
    if (const auto loras = loraFilesOf(s, context.loraFolders); !loras.empty()) in.loraBytes = loraExtraBytes(loras, s.plan, in.loraSidePath);
    if (s.refiner.enabled())
        in.refinerBytes = memory::modelWeightBytes(refiners.get(s.refiner.model, [](const std::string& f) { return modelShapeOf(f); }), s.plan);
    std::set<std::string> seen;  // the engine loads a ControlNet named twice once
    for (const auto& c : s.controlnets)
        if (seen.insert(c.model).second)
            in.controlNetParams += controlNetParams.get(c.model, [](const std::string& f) {
                try {
                    return controlNetParameters({f});
                } catch (const std::exception&) {
                    return int64_t(0);  // unreadable: the run reports it
                }
            });
    return in;
}

memory::Prediction predictRun(const api::GenerationSettings& s, const PredictionContext& context) {
    static PerFile<ModelShape> shapes;
    const std::string model = s.model.empty() ? std::string(kDemoModel) : s.model;
    return memory::predict(shapes.get(model, [](const std::string& f) { return modelShapeOf(f); }), predictInput(s, context));
}

bool hiresDecodeNeedsTiling(const api::GenerationSettings& s, int64_t budgetBytes, const PredictionContext& context) {
    if (!s.hires.enabled || s.plan.vaeTiling || budgetBytes <= 0) return false;
    const memory::Prediction untiled = predictRun(s, context);
    if (untiled.decode.total() <= budgetBytes) return false;
    api::GenerationSettings tiled = s;
    tiled.plan.vaeTiling = true;
    return predictRun(tiled, context).decode.total() < untiled.decode.total();
}

} // namespace dd::pipeline
