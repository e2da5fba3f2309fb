#include "core/io/lora_file.h"

#include "core/io/model_error.h"

#include <nlohmann/json.hpp>

#include <map>
#include <optional>

namespace dd::io {
namespace {

enum class Part { Down, Up, Alpha };

struct Parsed {
    LoraComponent component;
    std::string module;
    bool kohya;
    Part part;
};

bool cut(std::string_view& s, std::string_view suffix) {
    if (!s.ends_with(suffix)) return false;
    s.remove_suffix(suffix.size());
    return true;
}

std::optional<Parsed> parseKohya(std::string_view key) {
    static const std::pair<std::string_view, LoraComponent> kPrefixes[] = {
        {"lora_unet_", LoraComponent::Unet}, {"lora_te1_", LoraComponent::TextEncoder},
        {"lora_te2_", LoraComponent::TextEncoder2}, {"lora_te_", LoraComponent::TextEncoder}};
    for (const auto& [prefix, component] : kPrefixes) {
        if (!key.starts_with(prefix)) continue;
        std::string_view rest = key.substr(prefix.size());
        Part part;
        if (cut(rest, ".lora_down.weight")) part = Part::Down;
        else if (cut(rest, ".lora_up.weight")) part = Part::Up;
        else if (cut(rest, ".alpha")) part = Part::Alpha;
        else return std::nullopt;
        if (rest.find('.') != std::string_view::npos) return std::nullopt;
        return Parsed{component, std::string(rest), true, part};
    }
    return std::nullopt;
}

void replaceAll(std::string& s, std::string_view from, std::string_view to) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
}

// diffusers' attention-processor spelling: "<attn>.processor.to_q_lora" → "<attn>.to_q" (UNet: to_out_lora →
// to_out.0; text encoder: q_proj … out_proj).
std::string fromProcessorName(std::string module, LoraComponent c) {
    replaceAll(module, ".processor.", ".");
    const bool te = c != LoraComponent::Unet;
    static const std::pair<std::string_view, std::string_view> kUnet[] = {
        {"to_q", "to_q"}, {"to_k", "to_k"}, {"to_v", "to_v"}, {"to_out", "to_out.0"}};
    static const std::pair<std::string_view, std::string_view> kText[] = {
        {"to_q", "q_proj"}, {"to_k", "k_proj"}, {"to_v", "v_proj"}, {"to_out", "out_proj"}};
    for (const auto& [from, to] : te ? kText : kUnet) {
        const std::string tail = "." + std::string(from);
        if (module.ends_with(tail)) return module.substr(0, module.size() - tail.size()) + "." + std::string(to);
    }
    return module;
}

std::optional<Parsed> parseDiffusers(std::string_view key) {
    static const std::pair<std::string_view, LoraComponent> kPrefixes[] = {
        {"unet.", LoraComponent::Unet}, {"text_encoder_2.", LoraComponent::TextEncoder2},
        {"text_encoder.", LoraComponent::TextEncoder}};
    LoraComponent component = LoraComponent::Unet;  // the oldest attention-processor files have no prefix
    for (const auto& [prefix, c] : kPrefixes)
        if (key.starts_with(prefix)) {
            component = c;
            key.remove_prefix(prefix.size());
            break;
        }
    std::string_view rest = key;
    Part part;
    bool processor = false;
    if (cut(rest, ".lora_A.weight") || cut(rest, ".lora.down.weight") || cut(rest, ".lora_linear_layer.down.weight")) part = Part::Down;
    else if (cut(rest, ".lora_B.weight") || cut(rest, ".lora.up.weight") || cut(rest, ".lora_linear_layer.up.weight")) part = Part::Up;
    else if (cut(rest, "_lora.down.weight")) part = Part::Down, processor = true;
    else if (cut(rest, "_lora.up.weight")) part = Part::Up, processor = true;
    else if (cut(rest, ".alpha")) part = Part::Alpha;
    else return std::nullopt;
    std::string module(rest);
    if (processor) module = fromProcessorName(module, component);
    return Parsed{component, module, false, part};
}

// PEFT's adapter config per component, as diffusers stores it in the file's metadata.
struct AdapterConfig {
    std::optional<double> alpha;
    std::map<std::string, double> alphaPattern;
};

std::map<LoraComponent, AdapterConfig> readMetadata(const SafetensorsFile& f) {
    std::map<LoraComponent, AdapterConfig> out;
    const auto it = f.metadata().find("lora_adapter_metadata");
    if (it == f.metadata().end()) return out;
    const auto j = nlohmann::json::parse(it->second, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) throw ModelFileError(f.path(), "the lora_adapter_metadata entry is not valid JSON");
    for (const auto c : {LoraComponent::Unet, LoraComponent::TextEncoder, LoraComponent::TextEncoder2}) {
        const std::string p = std::string(loraComponentName(c)) + ".";
        AdapterConfig cfg;
        if (const auto a = j.find(p + "lora_alpha"); a != j.end() && a->is_number()) cfg.alpha = a->get<double>();
        if (const auto a = j.find(p + "alpha_pattern"); a != j.end() && a->is_object())
            for (const auto& [k, v] : a->items())
                if (v.is_number()) cfg.alphaPattern[k] = v.get<double>();
        out[c] = cfg;
    }
    return out;
}

// PEFT get_pattern_key: a pattern names the module or a dotted tail of it.
std::optional<double> patternValue(const std::map<std::string, double>& patterns, const std::string& module) {
    for (const auto& [pattern, value] : patterns)
        if (module == pattern || module.ends_with("." + pattern)) return value;
    return std::nullopt;
}

std::string shapeText(const torch::Tensor& t) {
    std::string s = "[";
    for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
    return s + "]";
}

} // namespace

const char* loraComponentName(LoraComponent c) {
    switch (c) {
    case LoraComponent::Unet: return "unet";
    case LoraComponent::TextEncoder: return "text_encoder";
    case LoraComponent::TextEncoder2: return "text_encoder_2";
    }
    return "?";
}

LoraFile loadLoraFile(const std::string& path) {
    const auto file = SafetensorsFile::open(path);
    const auto configs = readMetadata(*file);
    struct Pending {
        torch::Tensor down, up, alpha;
        std::string key;
    };
    std::map<std::tuple<LoraComponent, std::string, bool>, Pending> layers;
    LoraFile out;
    out.path = path;
    for (const auto& info : file->tensors()) {
        auto parsed = parseKohya(info.name);
        if (!parsed) parsed = parseDiffusers(info.name);
        if (!parsed) {
            out.unknownKeys.push_back(info.name);
            continue;
        }
        auto& p = layers[{parsed->component, parsed->module, parsed->kohya}];
        const auto t = file->tensor(info.name);
        (parsed->part == Part::Down ? p.down : parsed->part == Part::Up ? p.up : p.alpha) = t;
        if (parsed->part == Part::Down) p.key = info.name;
    }
    for (auto& [id, p] : layers) {
        const auto& [component, module, kohya] = id;
        const std::string name = std::string(loraComponentName(component)) + " layer '" + module + "'";
        if (!p.down.defined() || !p.up.defined()) {
            if (p.alpha.defined() && !p.down.defined() && !p.up.defined()) {
                out.unknownKeys.push_back(module + ".alpha");  // an alpha whose layer is LoHa/LoKr or missing
                continue;
            }
            throw ModelFileError(path, name + " has its " + (p.down.defined() ? "down" : "up") +
                                           " matrix but not its " + (p.down.defined() ? "up" : "down") +
                                           " matrix: the file is incomplete or damaged");
        }
        const bool shapesOk = (p.down.dim() == 2 || p.down.dim() == 4) && p.up.dim() == p.down.dim() &&
                              p.up.size(1) == p.down.size(0) && p.down.size(0) > 0 &&
                              (p.up.dim() == 2 || (p.up.size(2) == 1 && p.up.size(3) == 1));
        if (!shapesOk)
            throw ModelFileError(path, name + ": down " + shapeText(p.down) + " and up " + shapeText(p.up) +
                                           " are not the two factors of a LoRA (up = [out, rank], down = [rank, in])");
        if (p.alpha.defined() && p.alpha.numel() != 1)
            throw ModelFileError(path, name + ": alpha has " + std::to_string(p.alpha.numel()) + " values instead of one");
        LoraLayer layer{component, module, kohya, p.down, p.up, double(p.down.size(0))};
        if (p.alpha.defined()) {
            layer.alpha = p.alpha.to(torch::kFloat64).item<double>();
        } else if (const auto c = configs.find(component); c != configs.end()) {
            if (const auto v = patternValue(c->second.alphaPattern, module)) layer.alpha = *v;
            else if (c->second.alpha) layer.alpha = *c->second.alpha;
        }
        out.layers.push_back(std::move(layer));
    }
    if (out.layers.empty())
        throw ModelFileError(path, "no LoRA layers found (expected kohya 'lora_unet_….lora_down.weight' or diffusers "
                                   "'unet.….lora_A.weight' keys; " + std::to_string(out.unknownKeys.size()) +
                                   " other tensors, e.g. '" + (out.unknownKeys.empty() ? std::string() : out.unknownKeys.front()) + "')");
    return out;
}

} // namespace dd::io
