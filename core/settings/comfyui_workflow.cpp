// ComfyUI's UI workflow ({"nodes": [{"id", "type", "inputs": [{"name", "link"}], "widgets_values": […], "mode"}],
// "links": [[id, from node, from slot, to node, to slot, type]]}) turned into the API graph readComfyGraph follows.
// Ref: ComfyUI nodes.py and comfy_extras/nodes_custom_sampler.py (each node's INPUT_TYPES order, which is the
// order of its widget values; a seed widget is followed by its "control after generate" value).
#include "core/settings/generation_info.h"
#include "core/settings/generation_info_detail.h"

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace dd::settings {
namespace {

using nlohmann::json;

constexpr const char* kControl = "";  // the seed's "control after generate" value: not an input

// Widget names in order for the node types the graph follower reads.
const std::map<std::string, std::vector<const char*>>& widgetNames() {
    static const std::map<std::string, std::vector<const char*>> m{
        {"KSampler", {"seed", kControl, "steps", "cfg", "sampler_name", "scheduler", "denoise"}},
        {"KSamplerAdvanced", {"add_noise", "noise_seed", kControl, "steps", "cfg", "sampler_name", "scheduler", "start_at_step",
                              "end_at_step", "return_with_leftover_noise"}},
        {"SamplerCustom", {"add_noise", "noise_seed", kControl, "cfg"}},
        {"RandomNoise", {"noise_seed", kControl}},
        {"KSamplerSelect", {"sampler_name"}},
        {"BasicScheduler", {"scheduler", "steps", "denoise"}},
        {"KarrasScheduler", {"steps", "sigma_max", "sigma_min", "rho"}},
        {"ExponentialScheduler", {"steps", "sigma_max", "sigma_min"}},
        {"CFGGuider", {"cfg"}},
        {"CLIPTextEncode", {"text"}},
        {"CheckpointLoaderSimple", {"ckpt_name"}},
        {"LoraLoader", {"lora_name", "strength_model", "strength_clip"}},
        {"LoraLoaderModelOnly", {"lora_name", "strength_model"}},
        {"CLIPSetLastLayer", {"stop_at_clip_layer"}},
        {"EmptyLatentImage", {"width", "height", "batch_size"}},
        {"LatentUpscale", {"upscale_method", "width", "height", "crop"}},
        {"LatentUpscaleBy", {"upscale_method", "scale_by"}},
        {"SaveImage", {"filename_prefix"}},
    };
    return m;
}

bool isControlValue(const json& v) {
    static const std::set<std::string> values{"fixed", "increment", "decrement", "randomize"};
    return v.is_string() && values.count(v.get<std::string>());
}

std::string idOf(const json& v) {
    if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
    if (v.is_string()) return v.get<std::string>();
    return {};
}

// Link id → [from node, from slot].
std::map<std::string, json> linkSources(const json& links) {
    std::map<std::string, json> out;
    if (!links.is_array()) return out;
    for (const auto& l : links)
        if (l.is_array() && l.size() >= 3 && !idOf(l[0]).empty() && !idOf(l[1]).empty() && l[2].is_number_integer())
            out[idOf(l[0])] = json::array({idOf(l[1]), l[2]});
    return out;
}

json widgetInputs(const std::string& type, const json& values) {
    json inputs = json::object();
    const auto names = widgetNames().find(type);
    if (names == widgetNames().end() || !values.is_array()) return inputs;
    size_t v = 0;
    for (const char* name : names->second) {
        if (v >= values.size()) break;
        if (std::string_view(name).empty()) {
            if (isControlValue(values[v])) ++v;  // older files may lack it
            continue;
        }
        inputs[name] = values[v++];
    }
    return inputs;
}

} // namespace

GenerationInfo readComfyUiWorkflow(std::string_view text) {
    const json w = detail::parseJsonObject(text, "ComfyUI workflow");
    const auto nodes = w.find("nodes");
    if (nodes == w.end() || !nodes->is_array()) throw MetadataError("ComfyUI workflow: no \"nodes\" list");
    const auto sources = linkSources(w.value("links", json::array()));
    json graph = json::object();
    int muted = 0;
    for (const auto& n : *nodes) {
        if (!n.is_object() || !n.contains("type") || !n["type"].is_string()) continue;
        const std::string id = idOf(n.value("id", json()));
        if (id.empty()) continue;
        if (const auto mode = n.find("mode"); mode != n.end() && *mode == 2) {  // muted: ComfyUI does not run it
            ++muted;
            continue;
        }
        const std::string type = n["type"].get<std::string>();
        json inputs = widgetInputs(type, n.value("widgets_values", json()));
        if (const auto in = n.find("inputs"); in != n.end() && in->is_array())
            for (const auto& input : *in) {
                if (!input.is_object() || !input.contains("name") || !input["name"].is_string()) continue;
                const auto source = sources.find(idOf(input.value("link", json())));
                if (source != sources.end()) inputs[input["name"].get<std::string>()] = source->second;
            }
        graph[id] = json{{"class_type", type}, {"inputs", std::move(inputs)}};
    }
    GenerationInfo info = detail::readComfyGraph(graph);
    info.warnings.insert(info.warnings.begin(), "read from ComfyUI's workflow (the image carries no API prompt): widget values by position");
    if (muted > 0) info.warnings.push_back(std::to_string(muted) + " muted node(s) in the workflow were left out, as ComfyUI leaves them");
    return info;
}

} // namespace dd::settings
