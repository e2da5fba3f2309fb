#include "core/nn/vae_config.h"

#include "core/io/model_error.h"
#include "core/nn/config_value.h"

#include <nlohmann/json.hpp>

namespace dd::nn {
namespace {
const char* kVaeConfigFile = "vae/config.json";
} // namespace

VaeConfig VaeConfig::fromJson(const nlohmann::json& j) {
    try {
        VaeConfig c;
        c.inChannels = configValue<int64_t>(j, "in_channels", 3);
        c.outChannels = configValue<int64_t>(j, "out_channels", 3);
        c.latentChannels = configValue<int64_t>(j, "latent_channels", 4);
        c.blockOutChannels = configValue(j, "block_out_channels", std::vector<int64_t>{64});
        c.layersPerBlock = configValue<int64_t>(j, "layers_per_block", 1);
        c.normGroups = configValue<int64_t>(j, "norm_num_groups", 32);
        const auto size = j.find("sample_size");
        if (size != j.end() && size->is_array() && !size->empty())
            c.sampleSize = api::jsonAs<int64_t>((*size)[0]);
        else
            c.sampleSize = configValue<int64_t>(j, "sample_size", 32);
        c.scalingFactor = configValue(j, "scaling_factor", 0.18215);
        c.useQuantConv = configValue(j, "use_quant_conv", true);
        c.usePostQuantConv = configValue(j, "use_post_quant_conv", true);
        c.midBlockAddAttention = configValue(j, "mid_block_add_attention", true);
        c.forceUpcast = configValue(j, "force_upcast", true);
        const auto n = c.blockOutChannels.size();
        const auto down = configValue(j, "down_block_types", std::vector<std::string>(n, "DownEncoderBlock2D"));
        const auto up = configValue(j, "up_block_types", std::vector<std::string>(n, "UpDecoderBlock2D"));
        if (n == 0 || down.size() != n || up.size() != n)
            throw io::ModelFileError(kVaeConfigFile, "down_block_types, up_block_types and block_out_channels differ in length");
        for (const auto& t : down)
            if (t != "DownEncoderBlock2D") throw io::ModelFileError(kVaeConfigFile, "down block type '" + t + "' is not supported");
        for (const auto& t : up)
            if (t != "UpDecoderBlock2D") throw io::ModelFileError(kVaeConfigFile, "up block type '" + t + "' is not supported");
        bool sizesOk = n <= 8 && plausibleSize(c.inChannels, 64) && plausibleSize(c.outChannels, 64) &&
                       plausibleSize(c.latentChannels, 64) && plausibleSize(c.layersPerBlock, 64) &&
                       plausibleSize(c.sampleSize) && plausibleSize(c.normGroups);
        for (const auto ch : c.blockOutChannels) sizesOk = sizesOk && plausibleSize(ch) && ch % c.normGroups == 0;
        if (!sizesOk)
            throw io::ModelFileError(kVaeConfigFile, "a channel count, layer count, norm_num_groups or sample_size is out of range");
        if (configValue<std::string>(j, "act_fn", "silu") != "silu")
            throw io::ModelFileError(kVaeConfigFile, "act_fn other than silu is not supported");
        return c;
    } catch (const nlohmann::json::exception& e) {
        throw io::ModelFileError(kVaeConfigFile, std::string("malformed: ") + e.what());
    }
}

} // namespace dd::nn
