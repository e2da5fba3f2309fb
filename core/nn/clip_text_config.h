#pragma once
// transformers CLIPTextConfig config.json, read and checked.
// Pure: no torch, so the fuzzers and the memory predictor can read configs without libtorch.
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace dd::nn {

enum class ClipActivation {
    QuickGelu,  // "quick_gelu": x·sigmoid(1.702x), OpenAI CLIP-L
    Gelu,       // "gelu": exact erf GELU, OpenCLIP ViT-H / bigG
    GeluTanh,   // "gelu_new" / "gelu_pytorch_tanh": tanh approximation
};

struct ClipTextConfig {
    int64_t vocabSize = 49408;
    int64_t hiddenSize = 768;
    int64_t intermediateSize = 3072;
    int64_t numHiddenLayers = 12;
    int64_t numAttentionHeads = 12;
    int64_t maxPositionEmbeddings = 77;
    double layerNormEps = 1e-5;
    ClipActivation hiddenAct = ClipActivation::QuickGelu;
    // Selects the pooling rule as transformers does: 2 (the legacy value in most Hub configs) pools at
    // argmax(ids), any other value at the first position holding that id. With SD tokenizers both give
    // the first 49407 (EOS is the largest id).
    int64_t eosTokenId = 2;
    // > 0 builds CLIPTextModelWithProjection (text_projection, no bias); 0 builds CLIPTextModel.
    int64_t projectionDim = 0;

    // A transformers config.json. withProjection defaults to "architectures" naming
    // CLIPTextModelWithProjection. Throws dd::io::ModelFileError for an unknown hidden_act or bad sizes.
    static ClipTextConfig fromJson(const nlohmann::json& j);
    static ClipTextConfig fromJson(const nlohmann::json& j, bool withProjection);
};

} // namespace dd::nn
