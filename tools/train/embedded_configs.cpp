#include "tools/train/embedded_configs.h"

namespace dd::train {

namespace {
constexpr const char* kDiffusersVersion = "0.42.1";  // the pinned diffusers that loads these folders in tests
}

nlohmann::json vaeConfig(double scalingFactor) {
    return {{"_class_name", "AutoencoderKL"},
            {"_diffusers_version", kDiffusersVersion},
            {"act_fn", "silu"},
            {"block_out_channels", {16, 16, 32, 32}},
            {"down_block_types", {"DownEncoderBlock2D", "DownEncoderBlock2D", "DownEncoderBlock2D", "DownEncoderBlock2D"}},
            {"up_block_types", {"UpDecoderBlock2D", "UpDecoderBlock2D", "UpDecoderBlock2D", "UpDecoderBlock2D"}},
            {"force_upcast", true},
            {"in_channels", 3},
            {"out_channels", 3},
            {"latent_channels", 4},
            {"layers_per_block", 1},
            {"mid_block_add_attention", false},
            {"norm_num_groups", 4},
            {"sample_size", 128},
            {"scaling_factor", scalingFactor},
            {"use_quant_conv", true},
            {"use_post_quant_conv", true}};
}

nlohmann::json unetConfig() {
    return {{"_class_name", "UNet2DConditionModel"},
            {"_diffusers_version", kDiffusersVersion},
            {"act_fn", "silu"},
            {"attention_head_dim", 2},
            {"block_out_channels", {16, 32, 64}},
            {"center_input_sample", false},
            {"cross_attention_dim", 64},
            {"down_block_types", {"DownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D"}},
            {"up_block_types", {"CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "UpBlock2D"}},
            {"downsample_padding", 1},
            {"flip_sin_to_cos", true},
            {"freq_shift", 0},
            {"in_channels", 4},
            {"out_channels", 4},
            {"layers_per_block", 1},
            {"mid_block_scale_factor", 1},
            {"norm_eps", 1e-5},
            {"norm_num_groups", 8},
            {"sample_size", 16},
            {"use_linear_projection", false},
            {"upcast_attention", false}};
}

nlohmann::json textEncoderConfig() {
    return {{"architectures", {"CLIPTextModel"}},
            {"model_type", "clip_text_model"},
            {"attention_dropout", 0.0},
            {"bos_token_id", 49406},
            {"eos_token_id", 49407},
            {"pad_token_id", 49407},
            {"hidden_act", "quick_gelu"},
            {"hidden_size", 64},
            {"intermediate_size", 128},
            {"initializer_factor", 1.0},
            {"initializer_range", 0.02},
            {"layer_norm_eps", 1e-5},
            {"max_position_embeddings", 77},
            {"num_attention_heads", 4},
            {"num_hidden_layers", 2},
            {"projection_dim", 64},
            {"vocab_size", 49408},
            {"dtype", "float32"}};
}

nlohmann::json schedulerConfig() {
    return {{"_class_name", "PNDMScheduler"},
            {"_diffusers_version", kDiffusersVersion},
            {"beta_start", 0.00085},
            {"beta_end", 0.012},
            {"beta_schedule", "scaled_linear"},
            {"num_train_timesteps", 1000},
            {"prediction_type", "epsilon"},
            {"set_alpha_to_one", false},
            {"skip_prk_steps", true},
            {"steps_offset", 1},
            {"timestep_spacing", "leading"},
            {"trained_betas", nullptr}};
}

nlohmann::json modelIndex() {
    return {{"_class_name", "StableDiffusionPipeline"},
            {"_diffusers_version", kDiffusersVersion},
            {"feature_extractor", {nullptr, nullptr}},
            {"image_encoder", {nullptr, nullptr}},
            {"requires_safety_checker", false},
            {"safety_checker", {nullptr, nullptr}},
            {"scheduler", {"diffusers", "PNDMScheduler"}},
            {"text_encoder", {"transformers", "CLIPTextModel"}},
            {"tokenizer", {"transformers", "CLIPTokenizer"}},
            {"unet", {"diffusers", "UNet2DConditionModel"}},
            {"vae", {"diffusers", "AutoencoderKL"}}};
}

} // namespace dd::train
