// diffusiondesk-cli verify FILE [--image PNG] [--model M] [--models DIR]: rerun what a result was made with
// and compare the pixels hash for hash (docs/determinism.md).
// diffusiondesk-cli verify --against IMAGE [--models DIR]: an image another tool made, restored and rerun, with a
// report of what was matched, what could not be and why, and how far the pixels are (docs/reproduce.md).
//
// FILE: an image with DiffusionDesk / A1111 metadata, a sidecar (.json), or a plain settings JSON.
// Compared image: --image, else FILE itself when it is an image, else the image next to a sidecar (x.json →
// x.png / .webp / .jpg); with none, the settings run twice and the two runs are compared.
// Exit status: 0 identical, 3 not identical, 1 for errors (bad file, model not found...).
#include "app/cli_commands.h"
#include "core/compare/reproduction.h"
#include "core/compare/verify.h"
#include "core/compare/verify_file.h"
#include "core/pipeline/engine.h"
#include "imaging/compare.h"
#include "imaging/export.h"
#include "imaging/png.h"
#include "imaging/run_images.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <stdexcept>

namespace dd::cli {
namespace {

namespace fs = std::filesystem;

constexpr int kNotIdentical = 3;

struct VerifyOptions {
    std::string file, image, model;
    std::vector<std::string> modelFolders, loraFolders, embeddingFolders;
    bool against = false;
};

class Verify : public Command {
public:
    OptionTable options() override {
        return OptionTable("verify", "FILE [--image IMAGE] [--model M] [--models DIR] | --against IMAGE [--models DIR]",
                           "Rerun what a result was made with and compare the pixels hash for hash (docs/determinism.md).\n"
                           "With --against: an image any tool made, and what could and could not be matched (docs/reproduce.md).\n"
                           "Exit status: 0 identical, 3 not identical, 1 error.")
            .positional("FILE", "an image with generation metadata, a sidecar .json or a settings .json",
                        [this](const std::string& v) { o.file = v; })
            .flag("--against", "FILE is an image any tool made: reproduce it and report field by field", [this] { o.against = true; })
            .value("--lora-dir", "DIR", "where the image's LoRAs are found by name (repeatable; also DD_LORA_PATH)",
                   [this](const std::string& v) { o.loraFolders.push_back(v); }, Complete::Folder)
            .value("--embeddings-dir", "DIR", "where its embeddings are found (repeatable; also DD_EMBEDDINGS_PATH)",
                   [this](const std::string& v) { o.embeddingFolders.push_back(v); }, Complete::Folder)
            .value("--image", "IMAGE", "the image to compare (default: FILE, or the image beside the sidecar)",
                   [this](const std::string& v) { o.image = v; }, Complete::File)
            .value("--model", "PATH", "the model, instead of finding it by hash", [this](const std::string& v) { o.model = v; },
                   Complete::File)
            .value("--models", "DIR", "where the model is found by hash (repeatable)",
                   [this](const std::string& v) { o.modelFolders.push_back(v); }, Complete::Folder);
    }
    int run() override;

private:
    VerifyOptions o;
};

} // namespace

int Verify::run() {
    compare::VerifyFile f = compare::verifyFileFrom(o.file, o.image, o.model, o.modelFolders);
    if (o.against) compare::dropMissingLoras(f.recorded.settings, o.loraFolders, f.notes);
    else for (const auto& w : f.notes) std::cerr << "note: " << w << "\n";
    compare::Recorded& recorded = f.recorded;
    const std::string& imagePath = f.imagePath;
    if (!imagePath.empty()) recorded.images[0].image = imaging::readImage(imagePath);

    const auto& s = recorded.settings;
    std::cout << "verify:  " << o.file << (imagePath.empty() || imagePath == o.file ? "" : " against " + imagePath) << "\n"
              << "rerun:   " << s.model << ", " << s.width << "x" << s.height << ", seed " << s.seed << ", " << s.steps
              << " steps, " << s.sampler << ", batch " << s.batchSize << ", determinism " << (s.deterministic ? "on" : "off")
              << "\n";
    pipeline::Engine engine;
    engine.setLoraFolders(o.loraFolders);
    engine.setEmbeddingFolders(o.embeddingFolders);
    api::CancelToken cancel;
    const compare::VerifyReport report = compare::verify(engine, recorded, cancel, nullptr, imaging::readRunImages(recorded.settings));
    double ssim = std::nan("");
    if (!report.identical && !recorded.images.empty() && report.images[0].pixels.sameSize)
        ssim = imaging::ssim(recorded.images[0].image, report.rerun.images[size_t(report.images[0].index)]);
    std::cout << (o.against ? compare::describeReproduction(f, report, ssim) : compare::describe(report));
    if (!report.identical && !recorded.images.empty() && report.images[0].pixels.sameSize) {
        if (!o.against && !std::isnan(ssim)) std::printf("  SSIM %.5f\n", ssim);
        if (!imagePath.empty() && fs::path(imagePath).extension() != ".png" && fs::path(imagePath).extension() != ".PNG")
            std::cout << "note: " << imagePath << " is lossy (JPEG/WebP): its pixels cannot match a rerun; verify the PNG\n";
    }
    const auto& e = report.rerun.environment;
    std::cout << "now:     DiffusionDesk " << e.appVersion << ", torch " << e.torchVersion << ", " << e.device << ", "
              << e.precision << ", attention " << e.attention << ", offload " << e.offload << ", " << e.threads
              << " threads\n";
    return report.identical ? 0 : kNotIdentical;
}

std::unique_ptr<Command> makeVerifyCommand() { return std::make_unique<Verify>(); }

} // namespace dd::cli
