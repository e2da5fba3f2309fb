// Any bytes as a model's config.json (first byte picks the reader: UNet, VAE, CLIP text encoder, TAESD):
// accepted with sizes a module can be built from, or rejected with ModelFileError naming the file.
#include "core/io/model_error.h"
#include "core/nn/clip_text_config.h"
#include "core/nn/taesd_config.h"
#include "core/nn/unet_config.h"
#include "core/nn/vae_config.h"

#include <nlohmann/json.hpp>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    const auto j = nlohmann::json::parse(data + 1, data + size, nullptr, false);
    if (j.is_discarded()) return 0;
    try {
        switch (data[0] % 4) {
        case 0: {
            const auto c = dd::nn::UNetConfig::fromJson(j);
            if (c.blockOutChannels.empty() || c.heads.size() != c.blockOutChannels.size()) __builtin_trap();
            for (size_t i = 0; i < c.blockOutChannels.size(); ++i)
                if (c.blockOutChannels[i] <= 0 || c.blockOutChannels[i] % c.heads[i] != 0) __builtin_trap();
            break;
        }
        case 1: {
            const auto c = dd::nn::VaeConfig::fromJson(j);
            if (c.scaleFactor() < 1 || c.normGroups <= 0) __builtin_trap();
            break;
        }
        case 2: {
            const auto c = dd::nn::ClipTextConfig::fromJson(j);
            if (c.hiddenSize % c.numAttentionHeads != 0) __builtin_trap();
            break;
        }
        case 3: (void)dd::nn::TaesdConfig::fromJson(j); break;
        }
    } catch (const dd::io::ModelFileError&) {
    }
    return 0;
}
