#include "core/api/json_value.h"
#include "core/nn/clip_text_config.h"

#include "core/io/model_error.h"
#include "core/nn/config_value.h"

#include <nlohmann/json.hpp>

namespace dd::nn {
namespace {

// Ref: transformers activations.py ACT2FN (QuickGELUActivation, GELUActivation, NewGELUActivation).
ClipActivation activationFromName(const std::string& name) {
    if (name == "quick_gelu") return ClipActivation::QuickGelu;
    if (name == "gelu") return ClipActivation::Gelu;
    if (name == "gelu_new" || name == "gelu_pytorch_tanh") return ClipActivation::GeluTanh;
    throw io::ModelFileError("config.json", "text encoder hidden_act '" + name +
                                                "' is not supported (expected quick_gelu, gelu, gelu_new or gelu_pytorch_tanh)");
}

int64_t positive(const nlohmann::json& j, const char* key, int64_t fallback, int64_t max = 1 << 20) {
    const int64_t v = configValue(j, key, fallback);
    if (!plausibleSize(v, max))
        throw io::ModelFileError("config.json", std::string("text encoder ") + key + " must be between 1 and " +
                                                    std::to_string(max) + ", got " + std::to_string(v));
    return v;
}

} // namespace

ClipTextConfig ClipTextConfig::fromJson(const nlohmann::json& j) {
    if (!j.is_object()) throw io::ModelFileError("config.json", "text encoder config must be a JSON object");
    const nlohmann::json& t = j.contains("text_config") ? j.at("text_config") : j;
    bool withProjection = false;
    if (const auto a = j.find("architectures"); a != j.end() && a->is_array())
        for (const auto& name : *a) withProjection |= name.is_string() && name.get<std::string>() == "CLIPTextModelWithProjection";
    return fromJson(t, withProjection);
}

// Defaults for absent fields are transformers' CLIPTextConfig defaults (configuration_clip.py).
ClipTextConfig ClipTextConfig::fromJson(const nlohmann::json& j, bool withProjection) try {
    if (!j.is_object()) throw io::ModelFileError("config.json", "text encoder config must be a JSON object");
    ClipTextConfig c;
    c.vocabSize = positive(j, "vocab_size", 49408);
    c.hiddenSize = positive(j, "hidden_size", 512, 1 << 16);
    c.intermediateSize = positive(j, "intermediate_size", 2048);
    c.numHiddenLayers = positive(j, "num_hidden_layers", 12, 256);
    c.numAttentionHeads = positive(j, "num_attention_heads", 8, 1024);
    c.maxPositionEmbeddings = positive(j, "max_position_embeddings", 77, 1 << 16);
    c.layerNormEps = j.value("layer_norm_eps", 1e-5);
    c.hiddenAct = activationFromName(j.value("hidden_act", std::string("quick_gelu")));
    c.eosTokenId = j.contains("eos_token_id") && j["eos_token_id"].is_number_integer() ? api::jsonAs<int64_t>(j["eos_token_id"]) : 49407;
    c.projectionDim = withProjection ? positive(j, "projection_dim", 512) : 0;
    if (c.hiddenSize % c.numAttentionHeads != 0)
        throw io::ModelFileError("config.json", "text encoder hidden_size " + std::to_string(c.hiddenSize) +
                                                    " is not divisible by num_attention_heads " + std::to_string(c.numAttentionHeads));
    return c;
} catch (const nlohmann::json::exception& e) {
    throw io::ModelFileError("config.json", std::string("text encoder config is malformed: ") + e.what());
}

} // namespace dd::nn
