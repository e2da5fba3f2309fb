// diffusiondesk-cli upscale: an image made bigger by an upscaler network (docs/upscalers.md), as A1111's Extras
// tab does it: the source PNG's text (its generation parameters) is kept and an "extras" chunk says what was done.
#include "app/cli_commands.h"

#include "core/io/model_hash.h"
#include "core/nn/upscaler.h"
#include "core/pipeline/model_search.h"
#include "core/pipeline/upscale.h"
#include "imaging/png.h"

#include <chrono>
#include <filesystem>
#include <iomanip>
#include <iostream>

namespace fs = std::filesystem;

namespace dd::cli {
namespace {

// A1111's postprocessing infotext ("Postprocess upscale by: 4, Postprocess upscaler: 4x-UltraSharp").
std::string extrasText(int scale, const std::string& upscalerPath) {
    return "Postprocess upscale by: " + std::to_string(scale) + ", Postprocess upscaler: " + fs::path(upscalerPath).stem().string();
}

// The source's text chunks when it is a PNG that has any; other formats carry none we keep.
std::map<std::string, std::string> sourceText(const std::string& path) {
    try {
        return imaging::readPngText(path);
    } catch (const std::exception&) {
        return {};
    }
}

class Upscale : public Command {
public:
    OptionTable options() override {
        auto text = [](std::string& target) { return [&target](const std::string& v) { target = v; }; };
        return OptionTable("upscale", "IMAGE --model M --out FILE.png",
                           "An image made bigger by an upscaler network (ESRGAN, Real-ESRGAN, SwinIR .safetensors), "
                           "computed in overlapping tiles; the PNG's generation parameters are kept.")
            .positional("IMAGE", "the image to upscale (PNG, JPEG, WebP, ...)", text(m_image))
            .value("--model", "NAME|FILE", "the upscaler: a .safetensors file, or its name in the upscaler folders",
                   text(m_model), Complete::File)
            .value("--out", "FILE.png", "where the upscaled PNG goes (replaced if it exists)", text(m_out), Complete::File)
            .value("--tile", "N|auto", "input pixels per tile side (0: the whole image at once; auto: what fits memory)",
                   [this](const std::string& v) { m_tile = v == "auto" ? -1 : toInt("--tile", v); })
            .value("--overlap", "N", "input pixels computed around each tile and then dropped (default 32)",
                   [this](const std::string& v) { m_overlap = toInt("--overlap", v); })
            .value("--device", "auto|cpu|cuda[:N]", "where to run (default auto)", text(m_device))
            .value("--upscaler-dir", "DIR", "where upscalers are found by name (repeatable; also DD_UPSCALER_PATH)",
                   [this](const std::string& v) { m_folders.push_back(v); }, Complete::Folder);
    }

    int run() override {
        if (m_image.empty()) throw std::invalid_argument("upscale needs an IMAGE");
        if (m_model.empty()) throw std::invalid_argument("upscale needs --model (an upscaler .safetensors or its name)");
        if (m_out.empty()) throw std::invalid_argument("upscale needs --out FILE.png");
        if (m_tile < -1 || m_overlap < 0) throw std::invalid_argument("--tile and --overlap take 0 or more pixels");
        if (m_device != "auto" && m_device != "cpu" && m_device.rfind("cuda", 0) != 0)
            throw std::invalid_argument("--device takes auto, cpu or cuda[:N], not '" + m_device + "'");

        const api::Image source = imaging::readImage(m_image);
        const std::string modelPath = pipeline::findUpscalerFile(m_model, m_folders);
        const auto started = std::chrono::steady_clock::now();
        const auto loaded = nn::loadUpscaler(modelPath, {nn::resolveDevice(m_device)});
        const auto& config = loaded.net->config;
        const auto device = loaded.net->parameters().front().device();
        pipeline::UpscaleTiling tiling{m_tile, m_overlap};
        if (m_tile < 0) tiling.tile = pipeline::upscaleTileFor(config, pipeline::upscaleBudgetBytes(device));
        std::cout << "upscaler:   " << modelPath << "  (" << config.describe() << ")\n"
                  << "hash:       " << io::hashModelFile(modelPath).shortHash << "\n";

        const api::Image big = pipeline::upscaleImage(*loaded.net, source, tiling, nullptr, [](int done, int total) {
            if (total > 1) std::cerr << "\rtile " << done << "/" << total << (done == total ? "\n" : "") << std::flush;
        });
        auto text = sourceText(m_image);
        text["extras"] = extrasText(config.scale, modelPath);
        imaging::writePng(m_out, big, text);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        std::cout << "image:      " << source.width << "x" << source.height << " -> " << big.width << "x" << big.height
                  << "  (" << config.scale << "x, tile " << (tiling.tile > 0 ? std::to_string(tiling.tile) : "whole image")
                  << ", overlap " << tiling.overlap << ", " << std::fixed << std::setprecision(1) << seconds << " s)\n"
                  << "wrote:      " << m_out << "\n";
        return 0;
    }

private:
    std::string m_image, m_model, m_out, m_device = "auto";
    std::vector<std::string> m_folders;
    int64_t m_tile = -1, m_overlap = 32;
};

} // namespace

std::unique_ptr<Command> makeUpscaleCommand() { return std::make_unique<Upscale>(); }

} // namespace dd::cli
