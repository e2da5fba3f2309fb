#include "core/nn/taesd_config.h"

#include "core/io/model_error.h"
#include "core/nn/config_value.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <functional>

namespace dd::nn {
namespace {

bool allEqual(const std::vector<int64_t>& v) {
    return std::adjacent_find(v.begin(), v.end(), std::not_equal_to<>()) == v.end();
}

} // namespace

TaesdConfig TaesdConfig::fromJson(const nlohmann::json& j, const std::string& source) {
    try {
        TaesdConfig c;
        const auto cls = configValue<std::string>(j, "_class_name", "AutoencoderTiny");
        if (cls != "AutoencoderTiny") throw io::ModelFileError(source, "is a " + cls + " config, not AutoencoderTiny");
        c.inChannels = configValue<int64_t>(j, "in_channels", 3);
        c.outChannels = configValue<int64_t>(j, "out_channels", 3);
        c.latentChannels = configValue<int64_t>(j, "latent_channels", 4);
        c.encoderBlockOutChannels = configValue(j, "encoder_block_out_channels", c.encoderBlockOutChannels);
        c.decoderBlockOutChannels = configValue(j, "decoder_block_out_channels", c.decoderBlockOutChannels);
        c.numEncoderBlocks = configValue(j, "num_encoder_blocks", c.numEncoderBlocks);
        c.numDecoderBlocks = configValue(j, "num_decoder_blocks", c.numDecoderBlocks);
        c.upsamplingScalingFactor = configValue<int64_t>(j, "upsampling_scaling_factor", 2);
        c.latentMagnitude = configValue(j, "latent_magnitude", 3.0);
        c.latentShift = configValue(j, "latent_shift", 0.5);
        c.scalingFactor = configValue(j, "scaling_factor", 1.0);
        c.shiftFactor = configValue(j, "shift_factor", 0.0);
        c.forceUpcast = configValue(j, "force_upcast", false);
        if (c.encoderBlockOutChannels.size() != c.numEncoderBlocks.size() || c.encoderBlockOutChannels.empty())
            throw io::ModelFileError(source, "encoder_block_out_channels and num_encoder_blocks differ in length");
        if (c.decoderBlockOutChannels.size() != c.numDecoderBlocks.size() || c.decoderBlockOutChannels.empty())
            throw io::ModelFileError(source, "decoder_block_out_channels and num_decoder_blocks differ in length");
        // EncoderTiny / DecoderTiny feed each stage's output unchanged into the next stage, so diffusers can only
        // run configs whose stages share one width.
        if (!allEqual(c.encoderBlockOutChannels) || !allEqual(c.decoderBlockOutChannels))
            throw io::ModelFileError(source, "encoder/decoder block_out_channels must all be equal (AutoencoderTiny)");
        if (configValue<std::string>(j, "act_fn", "relu") != "relu")
            throw io::ModelFileError(source, "act_fn other than relu is not supported");
        if (configValue<std::string>(j, "upsample_fn", "nearest") != "nearest")
            throw io::ModelFileError(source, "upsample_fn other than nearest is not supported");
        if (c.upsamplingScalingFactor < 1 || c.scalingFactor == 0)
            throw io::ModelFileError(source, "upsampling_scaling_factor or scaling_factor out of range");
        return c;
    } catch (const nlohmann::json::exception& e) {
        throw io::ModelFileError(source, std::string("malformed: ") + e.what());
    }
}

} // namespace dd::nn
