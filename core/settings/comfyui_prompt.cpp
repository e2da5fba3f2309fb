// ComfyUI's API-format graph (PNG text "prompt") read back into settings by following it as ComfyUI ran it: from the
// node that saved the image, through VAEDecode to the sampler that made its latents, and from that sampler's latent
// input back to an empty latent (text to image), a loaded image (image to image) or an earlier sampler through an
// upscale (a second pass: A1111's hires fix). A graph holds every output's nodes, so the image's own chain is the
// one that counts, not the first sampler in the file.
// Ref: ComfyUI nodes.py (KSampler, KSamplerAdvanced, CLIPTextEncode, CheckpointLoaderSimple, LoraLoader,
// EmptyLatentImage, LatentUpscale(By), VAEDecode, SaveImage, CLIPSetLastLayer), comfy_extras/nodes_custom_sampler.py
// (SamplerCustom, SamplerCustomAdvanced, KSamplerSelect, BasicScheduler, KarrasScheduler, RandomNoise, CFGGuider),
// comfy_extras/nodes_upscale_model.py, comfy/samplers.py (KSAMPLER_NAMES, SCHEDULER_NAMES).
#include "core/settings/generation_info.h"
#include "core/settings/generation_info_detail.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

namespace dd::settings {

namespace detail {

std::string comfySamplerLabel(std::string s) {
    // k-diffusion's function names (sample_dpmpp_2m) are what some custom nodes store; *_gpu only moves the noise.
    // ComfyUI's "ddim" is its Euler sampler (samplers.py runs ksampler("euler") for it).
    if (s.rfind("sample_", 0) == 0) s.erase(0, 7);
    for (const char* suffix : {"_gpu", "_cfg_pp"})
        if (s.ends_with(suffix)) s.resize(s.size() - std::string_view(suffix).size());
    static const std::map<std::string, std::string> m{
        {"euler", "Euler"}, {"euler_ancestral", "Euler a"}, {"heun", "Heun"}, {"heunpp2", "Heun"}, {"lms", "LMS"},
        {"ddim", "Euler"}, {"dpmpp_2m", "DPM++ 2M"}, {"dpmpp_2m_sde", "DPM++ 2M SDE"}, {"dpmpp_sde", "DPM++ SDE"},
        {"uni_pc", "UniPC"}, {"uni_pc_bh2", "UniPC"}, {"lcm", "LCM"}, {"dpm_2", "DPM2"}, {"dpm_2_ancestral", "DPM2 a"},
        {"dpmpp_2s_ancestral", "DPM++ 2S a"}, {"dpmpp_3m_sde", "DPM++ 3M SDE"}, {"dpm_fast", "DPM fast"},
        {"dpm_adaptive", "DPM adaptive"}, {"ddpm", "DDPM"}, {"deis", "DEIS"}, {"ipndm", "iPNDM"}, {"ipndm_v", "iPNDM"}};
    const auto it = m.find(s);
    return it != m.end() ? it->second : s;
}

std::string comfyScheduleLabel(const std::string& s) {
    static const std::map<std::string, std::string> m{
        {"normal", ""}, {"karras", "Karras"}, {"exponential", "Exponential"}, {"sgm_uniform", "SGM Uniform"},
        {"simple", "Simple"}, {"ddim_uniform", "DDIM"}, {"beta", "Beta"}, {"kl_optimal", "KL Optimal"}};
    const auto it = m.find(s);
    return it != m.end() ? it->second : s;
}

} // namespace detail

namespace {

using nlohmann::json;
using detail::jsonNumber;
using detail::jsonString;

constexpr int kMaxHops = 32;  // links followed in one direction: a graph is a DAG, but a file may hold a cycle

std::string classOf(const json& node) { return node.is_object() ? jsonString(node, "class_type") : std::string(); }

bool isSampler(const std::string& cls) {
    return cls == "KSampler" || cls == "KSamplerAdvanced" || cls == "SamplerCustom" || cls == "SamplerCustomAdvanced";
}

class Graph {
public:
    explicit Graph(const json& g) : m_g(g) {}

    static const json* inputs(const json& node) {
        const auto it = node.find("inputs");
        return it != node.end() && it->is_object() ? &*it : nullptr;
    }

    // The node an input is linked to (["4", 0] or [4, 0]), or nullptr.
    const json* linked(const json& node, const char* input) const {
        const auto* in = inputs(node);
        if (!in) return nullptr;
        const auto it = in->find(input);
        if (it == in->end() || !it->is_array() || it->empty()) return nullptr;
        const json& id = (*it)[0];
        const std::string key = id.is_string() ? id.get<std::string>() : id.is_number_integer() ? std::to_string(id.get<int64_t>()) : "";
        const auto n = m_g.find(key);
        return n != m_g.end() && n->is_object() ? &*n : nullptr;
    }

    // The first of `names` that is linked.
    const json* linkedAny(const json& node, std::initializer_list<const char*> names) const {
        for (const char* n : names)
            if (const json* next = linked(node, n)) return next;
        return nullptr;
    }

    // Follows the first linked of `via` from `from` until `stop` accepts a node (nullptr when none does).
    template <typename Stop>
    const json* upstream(const json& from, std::initializer_list<const char*> via, Stop stop) const {
        const json* cur = linkedAny(from, via);
        for (int hop = 0; cur && hop < kMaxHops; ++hop, cur = linkedAny(*cur, via))
            if (stop(*cur)) return cur;
        return nullptr;
    }

    // A prompt's text: through conditioning nodes (ConditioningCombine, ControlNetApply…) to the text encoder, and a
    // text fed from a primitive or string node.
    std::string text(const json& node, const char* input) const {
        const json* cur = linked(node, input);
        for (int hop = 0; cur && hop < kMaxHops; ++hop) {
            const json* in = inputs(*cur);
            if (!in) return {};
            for (const char* f : {"text", "text_g", "prompt"}) {
                if (const auto it = in->find(f); it != in->end() && it->is_string()) return it->get<std::string>();
                if (const json* source = linked(*cur, f))
                    if (const json* sin = inputs(*source))
                        for (const char* g : {"text", "string", "value", "text_g"})
                            if (const auto v = sin->find(g); v != sin->end() && v->is_string()) return v->get<std::string>();
            }
            cur = linkedAny(*cur, {"conditioning", "conditioning_1", "conditioning_to", "positive", "negative", "clip"});
        }
        return {};
    }

    const json& all() const { return m_g; }

private:
    const json& m_g;
};

// One sampler node read into its pass's settings; SamplerCustom(Advanced) keep their parts in other nodes.
struct Pass {
    const json* node = nullptr;
    const json* conditioning = nullptr;  // where positive / negative are: the sampler, or SamplerCustomAdvanced's guider
    const json* model = nullptr;         // where the model chain starts
    int64_t seed = -1;
    int steps = 0;
    double cfg = -1, denoise = 1;
    std::string sampler, scheduler;
};

Pass readPass(const Graph& g, const json& node) {
    Pass p;
    p.node = p.conditioning = p.model = &node;
    const json* in = Graph::inputs(node);
    if (!in) return p;
    if (!jsonNumber(*in, "seed", p.seed)) jsonNumber(*in, "noise_seed", p.seed);
    jsonNumber(*in, "steps", p.steps);
    jsonNumber(*in, "cfg", p.cfg);
    jsonNumber(*in, "denoise", p.denoise);
    p.sampler = jsonString(*in, "sampler_name");
    p.scheduler = jsonString(*in, "scheduler");
    // KSamplerAdvanced starting later in its schedule: the later part, as an image-to-image pass runs it.
    if (int start = 0; classOf(node) == "KSamplerAdvanced" && jsonNumber(*in, "start_at_step", start) && start > 0 && p.steps > 0)
        p.denoise = 1.0 - double(start) / p.steps;
    if (const json* noise = g.linked(node, "noise"); noise && Graph::inputs(*noise))
        jsonNumber(*Graph::inputs(*noise), "noise_seed", p.seed);
    if (const json* guider = g.linked(node, "guider")) {
        p.conditioning = p.model = guider;
        if (const json* gin = Graph::inputs(*guider); gin && !jsonNumber(*gin, "cfg", p.cfg)) p.cfg = 1;  // BasicGuider
    }
    if (const json* select = g.linked(node, "sampler"); select && Graph::inputs(*select))
        p.sampler = jsonString(*Graph::inputs(*select), "sampler_name");
    if (const json* sigmas = g.linked(node, "sigmas"); sigmas && Graph::inputs(*sigmas)) {
        const json& sin = *Graph::inputs(*sigmas);
        jsonNumber(sin, "steps", p.steps);
        jsonNumber(sin, "denoise", p.denoise);
        const std::string cls = classOf(*sigmas);
        p.scheduler = cls == "KarrasScheduler" ? "karras" : cls == "ExponentialScheduler" ? "exponential" : jsonString(sin, "scheduler");
    }
    return p;
}

// The image's chain: the save node, back to the sampler that made it, back to where its latents began.
struct Chain {
    std::vector<Pass> passes;          // the first pass first
    const json* upscale = nullptr;     // between the last two passes
    const json* start = nullptr;       // EmptyLatentImage, or what an image-to-image started from
};

const json* saveNode(const Graph& g, GenerationInfo& info) {
    std::vector<std::pair<int, const json*>> saves;  // by preference: SaveImage first, then any node taking images
    for (const auto& [id, node] : g.all().items()) {
        const std::string cls = classOf(node);
        const bool takesImages = g.linked(node, "images") != nullptr;
        if (takesImages) saves.emplace_back(cls == "SaveImage" ? 0 : cls.find("Save") != std::string::npos ? 1 : 2, &node);
    }
    if (saves.empty()) return nullptr;
    std::stable_sort(saves.begin(), saves.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    if (saves.size() > 1 && saves[1].first == saves[0].first)
        info.warnings.push_back(std::to_string(saves.size()) + " image outputs in the ComfyUI graph; read the chain of the first");
    return saves.front().second;
}

Chain follow(const Graph& g, GenerationInfo& info) {
    Chain c;
    const auto sampler = [](const json& n) { return isSampler(classOf(n)); };
    const json* last = nullptr;
    if (const json* save = saveNode(g, info)) last = g.upstream(*save, {"images", "image", "samples", "pixels"}, sampler);
    if (!last) {  // no save node leads to a sampler: the first sampler in the file, as older readers did
        for (const auto& [id, node] : g.all().items())
            if (sampler(node)) {
                last = &node;
                break;
            }
        if (last) info.warnings.push_back("no image output leads to a sampler in the ComfyUI graph; read the first sampler");
    }
    for (const json* cur = last; cur && c.passes.size() < 4;) {
        c.passes.insert(c.passes.begin(), readPass(g, *cur));
        const json* from = nullptr;
        const json* upscale = nullptr;
        const auto stop = [&](const json& n) {
            const std::string cls = classOf(n);
            if (cls.find("Upscale") != std::string::npos || cls.find("Scale") != std::string::npos) upscale = upscale ? upscale : &n;
            return isSampler(cls) || cls == "EmptyLatentImage" || cls.find("EmptyLatent") != std::string::npos ||
                   cls == "LoadImage" || cls == "VAEEncode" || cls == "VAEEncodeForInpaint";
        };
        from = g.upstream(*cur, {"latent_image", "samples", "latent", "pixels", "image"}, stop);
        if (!from || !sampler(*from)) {
            c.start = from;
            break;
        }
        if (!c.upscale) c.upscale = upscale;
        cur = from;
    }
    return c;
}

void readCheckpoint(const std::string& ckpt, GenerationInfo& info) {
    info.modelName = safeModelName(ckpt);
    if (info.modelName.empty()) info.warnings.push_back("model name '" + ckpt.substr(0, 80) + "' is not a safe file name; ignored");
}

// The model chain: LoRAs on the way to the checkpoint. Without a chain (a graph cut down by hand), the first
// checkpoint loader in the file.
void readModel(const Graph& g, const Pass& pass, GenerationInfo& info) {
    const json* cur = g.linked(*pass.model, "model");
    if (!cur)
        for (const auto& [id, node] : g.all().items())
            if (const json* in = Graph::inputs(node); in && !jsonString(*in, "ckpt_name").empty())
                return readCheckpoint(jsonString(*in, "ckpt_name"), info);
    for (int hop = 0; cur && hop < kMaxHops; ++hop, cur = g.linked(*cur, "model")) {
        const json* in = Graph::inputs(*cur);
        if (!in) break;
        const std::string cls = classOf(*cur);
        if (const auto lora = jsonString(*in, "lora_name"); !lora.empty()) {
            api::LoraSetting l;
            l.name = safeModelName(std::filesystem::path(lora).stem().string());
            jsonNumber(*in, "strength_model", l.unetWeight);
            l.textEncoderWeight = cls == "LoraLoaderModelOnly" ? 0.0 : l.unetWeight;
            jsonNumber(*in, "strength_clip", l.textEncoderWeight);
            if (!l.name.empty()) info.settings.loras.insert(info.settings.loras.begin(), l);
        }
        for (const char* key : {"ckpt_name", "unet_name"})
            if (const auto ckpt = jsonString(*in, key); !ckpt.empty()) return readCheckpoint(ckpt, info);
    }
}

// Clip skip on the positive text encoder's clip chain.
void readClipSkip(const Graph& g, const Pass& pass, GenerationInfo& info) {
    const json* encoder = g.linked(*pass.conditioning, "positive");
    const json* cur = encoder ? g.linked(*encoder, "clip") : nullptr;
    for (int hop = 0; cur && hop < kMaxHops; ++hop, cur = g.linked(*cur, "clip")) {
        int layer = 0;
        if (classOf(*cur) == "CLIPSetLastLayer" && Graph::inputs(*cur) && jsonNumber(*Graph::inputs(*cur), "stop_at_clip_layer", layer) &&
            layer <= -1 && layer >= -24) {
            info.settings.clipSkip = -layer;
            info.settings.sdxlClipSkip = "ComfyUI";  // hidden state −N on SDXL's encoders too
            detail::found(info, "clip_skip");
            return;
        }
    }
}

// A second pass after an upscale: A1111's hires fix, as near as it goes.
void readHires(const Chain& c, GenerationInfo& info) {
    const Pass& second = c.passes.back();
    auto& h = info.settings.hires;
    h.enabled = true;
    h.steps = second.steps;
    h.denoising = second.denoise;
    const json* in = c.upscale ? Graph::inputs(*c.upscale) : nullptr;
    const std::string cls = c.upscale ? classOf(*c.upscale) : "";
    double scale = 0;
    int w = 0, h2 = 0;
    if (in && jsonNumber(*in, "scale_by", scale) && scale >= 1) h.scale = scale;
    else if (in && jsonNumber(*in, "width", w) && jsonNumber(*in, "height", h2) && w > 0 && h2 > 0) h.resizeWidth = w, h.resizeHeight = h2;
    static const std::map<std::string, std::string> latent{{"nearest-exact", "Latent (nearest-exact)"}, {"bilinear", "Latent"},
                                                           {"bicubic", "Latent (bicubic)"}, {"area", "Latent (antialiased)"}};
    const std::string method = in ? jsonString(*in, "upscale_method") : "";
    if (cls.rfind("LatentUpscale", 0) == 0) {
        const auto it = latent.find(method);
        h.upscaler = it != latent.end() ? it->second : "Latent";
        if (it == latent.end()) info.warnings.push_back("latent upscale '" + method + "' is restored as 'Latent'");
    } else {
        h.upscaler = "Lanczos";
        info.warnings.push_back("the second pass upscales with " + (cls.empty() ? std::string("an unknown node") : cls) +
                                ", restored as a Lanczos resize (an upscaler network is chosen by name in the hires options)");
    }
    if (second.seed >= 0 && second.seed != c.passes.front().seed)
        info.warnings.push_back("the second pass has its own seed (" + std::to_string(second.seed) + "); the hires fix reuses the first's");
    detail::found(info, "hires");
}

} // namespace

GenerationInfo readComfyUiPrompt(std::string_view text) {
    return detail::readComfyGraph(detail::parseJsonObject(text, "ComfyUI prompt"));
}

GenerationInfo detail::readComfyGraph(const json& j) {
    const Graph g(j);
    GenerationInfo info;
    info.format = "comfyui";
    info.settings.sampleAs = "ComfyUI";
    const Chain c = follow(g, info);
    if (c.passes.empty()) {
        info.warnings.push_back("no KSampler node in the ComfyUI graph; nothing to read");
        return info;
    }
    if (c.passes.size() > 2) info.warnings.push_back(std::to_string(c.passes.size()) + " sampling passes; read the first two");
    const Pass& first = c.passes.front();
    auto& s = info.settings;
    using detail::found;
    if (first.seed >= 0) s.seed = first.seed, found(info, "seed");
    if (first.steps > 0) s.steps = first.steps, found(info, "steps");
    if (first.cfg >= 0) s.cfgScale = first.cfg, found(info, "cfg_scale");
    if (!first.sampler.empty())
        detail::setSampler(info, detail::comfySamplerLabel(first.sampler), detail::comfyScheduleLabel(first.scheduler), false);
    if (first.denoise < 1) {
        s.strength = first.denoise, found(info, "strength");
        if (c.start && (classOf(*c.start) == "LoadImage" || classOf(*c.start).rfind("VAEEncode", 0) == 0))
            info.warnings.push_back("the image started from a loaded image: choose it as the starting image");
    }
    s.prompt = g.text(*first.conditioning, "positive");
    s.negativePrompt = g.text(*first.conditioning, "negative");
    found(info, "prompt");
    found(info, "negative_prompt");
    if (c.start && Graph::inputs(*c.start)) {
        const json& lin = *Graph::inputs(*c.start);
        int w = 0, h = 0, b = 1;
        if (jsonNumber(lin, "width", w) && jsonNumber(lin, "height", h) && w > 0 && h > 0) {
            s.width = w, s.height = h;
            found(info, "width"), found(info, "height");
            if (jsonNumber(lin, "batch_size", b) && b >= 1) s.batchSize = b, found(info, "batch_size");
        }
    }
    readModel(g, first, info);
    if (!s.loras.empty()) found(info, "loras");
    readClipSkip(g, first, info);
    if (c.passes.size() >= 2) readHires(c, info);
    return info;
}

} // namespace dd::settings
