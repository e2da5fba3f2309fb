// Fills a configs-only diffusers folder (bench/random-models/{sd15,sdxl}) with seeded random weights, so the
// GPU checks and benchmarks run the real architectures with PyTorch's libtorch alone: no diffusers, no
// transformers, no download. Weight values do not matter for time or memory; they are torch's default
// initialisation with every matrix and kernel halved, as bench/perf/make_*_random.py do (deep random networks
// overflow fp16 otherwise). The folder is written beside OUT and renamed into place when complete.
//   dd_random_model TEMPLATE OUT [--dtype fp16|fp32] [--seed N]
#include "core/io/safetensors.h"
#include "core/nn/clip_text.h"
#include "core/nn/unet.h"
#include "core/nn/vae.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <iostream>

using namespace dd;
namespace fs = std::filesystem;

namespace {

nlohmann::json readJson(const fs::path& p) {
    std::ifstream in(p);
    if (!in) throw std::runtime_error(p.string() + ": cannot read");
    return nlohmann::json::parse(in);
}

void save(torch::nn::Module& net, const fs::path& file, torch::ScalarType dtype) {
    torch::NoGradGuard noGrad;
    io::TensorMap tensors;
    for (const auto& p : net.named_parameters()) {
        auto t = p.value().dim() > 1 ? p.value() * 0.5 : p.value();
        tensors.emplace(p.key(), t.to(dtype));
    }
    for (const auto& b : net.named_buffers()) tensors.emplace(b.key(), b.value());
    io::writeSafetensors(file.string(), tensors);
    std::cerr << "  " << file.string() << ": " << tensors.size() << " tensors\n";
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::cerr << "usage: dd_random_model TEMPLATE OUT [--dtype fp16|fp32] [--seed N]\n";
        return 2;
    }
    const fs::path templ = argv[1], out = argv[2];
    auto dtype = torch::kFloat16;
    int64_t seed = 0;
    for (int i = 3; i + 1 < argc; i += 2) {
        const std::string flag = argv[i], value = argv[i + 1];
        if (flag == "--dtype" && (value == "fp16" || value == "fp32")) dtype = value == "fp16" ? torch::kFloat16 : torch::kFloat32;
        else if (flag == "--seed") seed = std::stoll(value);
        else {
            std::cerr << "dd_random_model: bad option " << flag << " " << value << "\n";
            return 2;
        }
    }
    try {
        if (fs::exists(out / "model_index.json")) {
            std::cerr << out.string() << ": exists\n";
            return 0;
        }
        const fs::path partial = out.string() + ".partial";
        fs::remove_all(partial);
        fs::copy(templ, partial, fs::copy_options::recursive);
        const auto index = readJson(templ / "model_index.json");
        for (const char* name : {"unet", "vae", "text_encoder", "text_encoder_2"}) {
            if (!index.contains(name)) continue;
            const auto config = readJson(templ / name / "config.json");
            torch::manual_seed(seed);
            const fs::path dir = partial / name;
            if (std::string(name) == "unet") {
                nn::UNet2DConditionModel net(nn::UNetConfig::fromJson(config));
                save(*net, dir / "diffusion_pytorch_model.safetensors", dtype);
            } else if (std::string(name) == "vae") {
                nn::AutoencoderKL net(nn::VaeConfig::fromJson(config));
                save(*net, dir / "diffusion_pytorch_model.safetensors", dtype);
            } else {
                nn::ClipTextModel net(nn::ClipTextConfig::fromJson(config, std::string(name) == "text_encoder_2"));
                save(*net, dir / "model.safetensors", dtype);
            }
        }
        fs::remove_all(out);
        fs::rename(partial, out);
        std::cerr << out.string() << ": written\n";
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "dd_random_model: " << e.what() << "\n";
        return 1;
    }
}
