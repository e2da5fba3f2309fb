// diffusiondesk-cli upscale: an image made bigger by an upscaler network (docs/upscalers.md), as A1111's Extras
// tab does it: the source PNG's text (its generation parameters) is kept and an "extras" chunk says what was done.
#include "app/cli_commands.h"

#include "core/pipeline/engine.h"
#include "imaging/export.h"
#include "imaging/png.h"

#include <chrono>
#include <iomanip>
#include <iostream>

namespace dd::cli {
namespace {

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
                   [this](const std::string& v) { m_options.tile = v == "auto" ? -1 : toInt("--tile", v); })
            .value("--overlap", "N", "input pixels computed around each tile and then dropped (default 32)",
                   [this](const std::string& v) { m_options.overlap = toInt("--overlap", v); })
            .value("--device", "auto|cpu|cuda[:N]", "where to run (default auto)", text(m_options.device))
            .value("--upscaler-dir", "DIR", "where upscalers are found by name (repeatable; also DD_UPSCALER_PATH)",
                   [this](const std::string& v) { m_folders.push_back(v); }, Complete::Folder);
    }

    int run() override {
        if (m_image.empty()) throw std::invalid_argument("upscale needs an IMAGE");
        if (m_model.empty()) throw std::invalid_argument("upscale needs --model (an upscaler .safetensors or its name)");
        if (m_out.empty()) throw std::invalid_argument("upscale needs --out FILE.png");
        const auto& d = m_options.device;
        if (d != "auto" && d != "cpu" && d.rfind("cuda", 0) != 0)
            throw std::invalid_argument("--device takes auto, cpu or cuda[:N], not '" + d + "'");

        const api::Image source = imaging::readImage(m_image);
        const auto started = std::chrono::steady_clock::now();
        pipeline::Engine engine;
        engine.setUpscalerFolders(m_folders);
        const api::CancelToken cancel;
        const auto r = engine.upscale(source, m_model, m_options, cancel, [](int done, int total) {
            if (total > 1) std::cerr << "\rtile " << done << "/" << total << (done == total ? "\n" : "") << std::flush;
        });
        imaging::writeUpscaled(m_out, r.image, m_image, r.scale, r.name);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        std::cout << "upscaler:   " << r.path << "  (" << r.description << ")\n"
                  << "hash:       " << r.hash << "\n"
                  << "image:      " << source.width << "x" << source.height << " -> " << r.image.width << "x" << r.image.height
                  << "  (" << r.scale << "x, tile " << (r.tile > 0 ? std::to_string(r.tile) : "whole image") << ", overlap "
                  << r.overlap << ", " << std::fixed << std::setprecision(1) << seconds << " s)\n"
                  << "wrote:      " << m_out << "\n";
        return 0;
    }

private:
    std::string m_image, m_model, m_out;
    std::vector<std::string> m_folders;
    pipeline::UpscaleOptions m_options;
};

} // namespace

std::unique_ptr<Command> makeUpscaleCommand() { return std::make_unique<Upscale>(); }

} // namespace dd::cli
