#include "tools/train/diffusers_export.h"

#include "core/io/atomic_file.h"
#include "core/io/safetensors.h"
#include "core/text/clip_tokenizer.h"
#include "tools/train/embedded_configs.h"

#include <zlib.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace dd::train {
namespace fs = std::filesystem;
namespace {

void writeText(const fs::path& path, const std::string& text) {
    io::writeFileAtomically(path.string(), [&](std::ostream& o) { o << text; });
}

void writeJson(const fs::path& path, const nlohmann::json& j) { writeText(path, j.dump(2) + "\n"); }

io::TensorMap stateDict(torch::nn::Module& m) {
    io::TensorMap out;
    for (const auto& p : m.named_parameters(true)) out[p.key()] = p.value().detach().to(torch::kCPU, torch::kFloat32).contiguous();
    for (const auto& b : m.named_buffers(true)) out[b.key()] = b.value().detach().to(torch::kCPU).contiguous();
    return out;
}

std::vector<std::string> gzipLines(const fs::path& path) {
    gzFile f = gzopen(path.string().c_str(), "rb");
    if (!f) throw std::runtime_error(path.string() + ": cannot open the bundled CLIP vocabulary");
    std::string data;
    char buf[1 << 16];
    int n;
    while ((n = gzread(f, buf, sizeof buf)) > 0) data.append(buf, static_cast<size_t>(n));
    gzclose(f);
    std::vector<std::string> lines;
    std::istringstream in(data);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    return lines;
}

// CLIP's SimpleTokenizer: merges are lines 1 … 48894 of the vocabulary file; the ids are the tokenizer's own.
void writeTokenizer(const fs::path& dir, const fs::path& gz) {
    fs::create_directories(dir);
    const auto tok = text::ClipTokenizer::fromBundledVocab(gz);
    nlohmann::json vocab = nlohmann::json::object();
    for (int i = 0; i < tok.vocabSize(); ++i) vocab[tok.token(i)] = i;
    writeText(dir / "vocab.json", vocab.dump());
    const auto lines = gzipLines(gz);
    constexpr size_t kMerges = 49152 - 256 - 2;
    if (lines.size() < kMerges + 1) throw std::runtime_error(gz.string() + ": too few lines for a CLIP vocabulary");
    std::string merges = "#version: 0.2\n";
    for (size_t i = 1; i <= kMerges; ++i) merges += lines[i] + "\n";
    writeText(dir / "merges.txt", merges);
    const nlohmann::json special = {{"bos_token", "<|startoftext|>"}, {"eos_token", "<|endoftext|>"},
                                    {"pad_token", "<|endoftext|>"}, {"unk_token", "<|endoftext|>"}};
    nlohmann::json config = special;
    config["model_max_length"] = 77;
    config["tokenizer_class"] = "CLIPTokenizer";
    writeJson(dir / "tokenizer_config.json", config);
    writeJson(dir / "special_tokens_map.json", special);
}

} // namespace

void exportDiffusersFolder(const fs::path& dir, nn::UNet2DConditionModel& unet, nn::AutoencoderKL& vae,
                           nn::ClipTextModel& textEncoder, const ExportInfo& info, const fs::path& bundledVocabGz) {
    const fs::path tmp = dir.string() + ".partial";
    fs::remove_all(tmp);
    for (const char* sub : {"unet", "vae", "text_encoder", "scheduler", "tokenizer"}) fs::create_directories(tmp / sub);
    writeJson(tmp / "model_index.json", modelIndex());
    writeJson(tmp / "scheduler" / "scheduler_config.json", schedulerConfig());
    writeJson(tmp / "unet" / "config.json", unetConfig());
    writeJson(tmp / "vae" / "config.json", vaeConfig(info.scalingFactor));
    writeJson(tmp / "text_encoder" / "config.json", textEncoderConfig());
    auto meta = info.metadata;
    meta["format"] = "pt";
    io::writeSafetensors((tmp / "unet" / "diffusion_pytorch_model.safetensors").string(), stateDict(*unet), meta);
    io::writeSafetensors((tmp / "vae" / "diffusion_pytorch_model.safetensors").string(), stateDict(*vae), meta);
    io::writeSafetensors((tmp / "text_encoder" / "model.safetensors").string(), stateDict(*textEncoder), meta);
    writeTokenizer(tmp / "tokenizer", bundledVocabGz);
    // Swap: the old folder goes away only once the new one is complete.
    const fs::path old = dir.string() + ".old";
    fs::remove_all(old);
    if (fs::exists(dir)) fs::rename(dir, old);
    fs::create_directories(dir.parent_path());
    fs::rename(tmp, dir);
    fs::remove_all(old);
}

} // namespace dd::train
