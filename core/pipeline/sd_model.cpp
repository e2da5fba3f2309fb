#include "core/pipeline/sd_model.h"
#include "core/pipeline/engine.h"  // kDemoModel, nativeImageSize

#include "core/io/model_error.h"
#include "core/nn/load_weights.h"
#include "core/resources.h"

#include <torch/torch.h>

#include <filesystem>
#include <mutex>

namespace dd::pipeline {
namespace {

// Diffusers folders carry their tokenizers; single files do not, so the family decides the padding.
void attachTokenizers(SdModel& m, const io::Checkpoint& ck) {
    auto fromFolderOr = [&](const char* name, text::ClipPad pad) {
        if (const auto it = ck.tokenizerDirs.find(name); it != ck.tokenizerDirs.end())
            return text::ClipTokenizer::fromFolder(it->second);
        return bundledClipTokenizer(pad);
    };
    if (m.textEncoder) {
        const auto pad = m.family == io::ModelFamily::SD2 ? text::ClipPad::Exclamation : text::ClipPad::EndOfText;
        m.tokenizer = fromFolderOr("tokenizer", pad);
    }
    if (m.textEncoder2) m.tokenizer2 = fromFolderOr("tokenizer_2", text::ClipPad::Exclamation);
}

// The module comes from `build` under nn::UninitialisedWeights, and loadWeights converts each file tensor once,
// straight to its final dtype and device (file tensors already in that dtype stay zero-copy views of the map on
// the CPU); so no random initialisation is drawn and no second copy of the model is ever held.
template <typename Build>
auto loadNet(Build build, const io::TensorMap& weights, const std::string& source, torch::Device device,
             torch::ScalarType dtype, bool channelsLast) {
    auto module = nn::buildForLoading(build);
    const auto unused = nn::loadWeights(*module, weights, source, nn::LoadTarget{device, dtype});
    if (!unused.empty())
        throw io::ModelFileError(source, "unexpected weight '" + unused.front() + "' (" + std::to_string(unused.size()) +
                                             " unexpected in all): the config does not describe these weights");
    placeNetwork(*module, device, dtype, channelsLast);
    module->eval();
    return module;
}

// diffusers' SDXL pipelines decode in fp32 when the VAE is fp16 and its config says force_upcast; SD 1.x/2.x
// pipelines never upcast.
torch::ScalarType vaeDtype(const Placement& p, const nn::VaeConfig& c, bool xl) {
    return p.vae == torch::kHalf && p.vaeUpcast && xl && c.forceUpcast ? torch::kFloat32 : p.vae;
}

} // namespace

void placeNetwork(torch::nn::Module& net, torch::Device device, torch::ScalarType dtype, bool channelsLast) {
    torch::NoGradGuard noGrad;
    net.to(device, dtype);
    if (!channelsLast) return;
    for (auto& p : net.parameters())
        if (p.dim() == 4) p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast));
}

std::unique_ptr<SdModel> loadSdModel(const std::string& path, const Placement& place, const LoadStep& step) {
    if (step) step("checkpoint", 0, 0);
    io::Checkpoint ck = io::loadCheckpoint(path);
    const int parts = 2 + int(ck.components.count("text_encoder") + ck.components.count("text_encoder_2"));
    int done = 0;
    auto next = [&](const char* part) {
        if (step) step(part, done++, parts);
    };
    auto m = std::make_unique<SdModel>();
    m->source = path;
    m->displayName = std::filesystem::path(path).filename().replace_extension().string();
    if (m->displayName.empty()) m->displayName = std::filesystem::path(path).parent_path().filename().string();
    m->family = ck.family;
    const std::string where = path + ": ";
    m->placement = place;
    next("unet");
    const auto unetConfig = nn::UNetConfig::fromJson(ck.configs.at("unet"));
    m->unet = loadNet([&] { return nn::UNet2DConditionModel(unetConfig); }, ck.components.at("unet"), where + "unet", place.deviceOf("unet"),
                      place.unet, place.channelsLast);
    const auto vaeConfig = nn::VaeConfig::fromJson(ck.configs.at("vae"));
    m->placement.vae = vaeDtype(place, vaeConfig, m->isXl());
    next("vae");
    m->vae = loadNet([&] { return nn::AutoencoderKL(vaeConfig); }, ck.components.at("vae"), where + "vae", place.deviceOf("vae"),
                     m->placement.vae, place.channelsLast);
    if (ck.components.count("text_encoder")) {
        next("text_encoder");
        m->textEncoder = nn::loadClipText(nn::ClipTextConfig::fromJson(ck.configs.at("text_encoder")),
                                          ck.components.at("text_encoder"), where + "text_encoder", place.textEncoder,
                                          place.deviceOf("text_encoder"));
    }
    if (ck.components.count("text_encoder_2")) {
        next("text_encoder_2");
        m->textEncoder2 = nn::loadClipText(nn::ClipTextConfig::fromJson(ck.configs.at("text_encoder_2"), true),
                                           ck.components.at("text_encoder_2"), where + "text_encoder_2", place.textEncoder,
                                           place.deviceOf("text_encoder_2"));
    }
    if (!m->textEncoder && !m->textEncoder2) throw io::ModelFileError(path, "the checkpoint has no text encoder");
    attachTokenizers(*m, ck);
    m->schedulerConfig = ck.configs.count("scheduler") ? ck.configs.at("scheduler") : nlohmann::json::object();
    const auto& index = ck.configs.count("model_index") ? ck.configs.at("model_index") : nlohmann::json::object();
    m->forceZerosForEmptyPrompt = index.value("force_zeros_for_empty_prompt", m->isXl());
    m->requiresAestheticsScore = index.value("requires_aesthetics_score", m->family == io::ModelFamily::SDXLRefiner);
    return m;
}

namespace {

// diffusers' tiny SD test components (tests/pipelines/stable_diffusion).
nlohmann::json demoUnetConfig() {
    return {{"block_out_channels", {32, 64}}, {"layers_per_block", 2}, {"sample_size", 32},
            {"in_channels", 4}, {"out_channels", 4}, {"cross_attention_dim", 32},
            {"attention_head_dim", 8},
            {"down_block_types", {"DownBlock2D", "CrossAttnDownBlock2D"}},
            {"up_block_types", {"CrossAttnUpBlock2D", "UpBlock2D"}}};
}

nlohmann::json demoVaeConfig() {
    return {{"block_out_channels", {32, 64}}, {"in_channels", 3}, {"out_channels", 3},
            {"down_block_types", {"DownEncoderBlock2D", "DownEncoderBlock2D"}},
            {"up_block_types", {"UpDecoderBlock2D", "UpDecoderBlock2D"}},
            {"latent_channels", 4}, {"sample_size", 64}};
}

} // namespace

int nativeImageSize(const std::string& source) {
    if (source == kDemoModel) return io::nativeImageSize(demoUnetConfig(), demoVaeConfig());
    return io::nativeImageSize(io::loadCheckpoint(source));
}

std::unique_ptr<SdModel> makeDemoModel(const Placement& place) {
    // The tiny test components, with a full-vocabulary text encoder so any prompt tokenizes.
    const nlohmann::json unet = demoUnetConfig();
    const nlohmann::json vae = demoVaeConfig();
    const nlohmann::json clip = {{"hidden_size", 32}, {"intermediate_size", 37}, {"num_attention_heads", 4},
                                 {"num_hidden_layers", 5}, {"vocab_size", 49408}, {"eos_token_id", 49407},
                                 {"hidden_act", "quick_gelu"}, {"max_position_embeddings", 77}};
    // The weights come from torch's global generator, seeded here: one demo model at a time, or the UI thread's
    // (the memory predictor builds one) and the engine thread's would interleave their draws and the demo's
    // weights would depend on timing (ThreadSanitizer pointed at the shared generator).
    static std::mutex globalGeneratorUse;
    std::lock_guard lock(globalGeneratorUse);
    torch::manual_seed(0);
    auto m = std::make_unique<SdModel>();
    m->source = "demo:tiny-sd1";
    m->displayName = "tiny random-weight demo (not a real model)";
    m->isDemo = true;
    m->family = io::ModelFamily::SD1;
    m->unet = nn::UNet2DConditionModel(nn::UNetConfig::fromJson(unet));
    m->vae = nn::AutoencoderKL(nn::VaeConfig::fromJson(vae));
    m->textEncoder = nn::ClipTextModel(nn::ClipTextConfig::fromJson(clip, false));
    m->placement = place;
    m->placement.vae = vaeDtype(place, m->vae->config(), false);
    placeNetwork(*m->unet, place.deviceOf("unet"), place.unet, place.channelsLast);
    placeNetwork(*m->vae, place.deviceOf("vae"), m->placement.vae, place.channelsLast);
    placeNetwork(*m->textEncoder, place.deviceOf("text_encoder"), place.textEncoder, false);
    for (torch::nn::Module* net : {static_cast<torch::nn::Module*>(m->unet.get()), static_cast<torch::nn::Module*>(m->vae.get()),
                                   static_cast<torch::nn::Module*>(m->textEncoder.get())})
        net->eval();
    m->tokenizer = bundledClipTokenizer(text::ClipPad::EndOfText);
    m->schedulerConfig = {{"beta_start", 0.00085}, {"beta_end", 0.012}, {"beta_schedule", "scaled_linear"},
                          {"num_train_timesteps", 1000}, {"steps_offset", 1}, {"set_alpha_to_one", false},
                          {"skip_prk_steps", true}, {"prediction_type", "epsilon"}};
    return m;
}

} // namespace dd::pipeline
