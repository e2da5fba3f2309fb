// diffusiondesk-cli generate: images with their A1111 parameters and sidecars, through the export code the app uses.
#include "app/cli_commands.h"
#include "app/cli_library.h"
#include "app/cli_control.h"

#include "core/io/model_error.h"
#include "core/memory/predictor.h"
#include "core/memory/preset_settings.h"
#include "core/memory/shipped_presets.h"
#include "core/pipeline/engine.h"
#include "core/pipeline/model_search.h"
#include "core/pipeline/memory_prediction.h"
#include "core/resources.h"
#include "core/sched/scheduler.h"
#include "core/compare/xyz_plot.h"
#include "core/settings/file_name_template.h"
#include "core/settings/model_lookup.h"
#include "core/settings/restore.h"
#include "core/settings/styles.h"
#include "core/settings/wildcards.h"
#include "core/text/prompt_parser.h"
#include "imaging/run_images.h"
#include "imaging/export.h"
#include "imaging/plot_sheet.h"
#include "imaging/png.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <random>
#include <unistd.h>

namespace fs = std::filesystem;

namespace dd::cli {
namespace {

// Progress on a terminal: a bar with ETA on stderr, redrawn in place; nothing when stderr is not a TTY.
class ProgressBar : public api::Observer {
public:
    bool wantsPreview(int, int) override { return false; }  // a terminal shows none: the engine computes none
    void onStep(int step, int total, const api::Image&) override {
        if (!isatty(STDERR_FILENO)) return;
        if (step == 1) m_start = std::chrono::steady_clock::now();
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
        const double eta = step > 1 ? elapsed / (step - 1) * (total - step) : 0;
        const int width = 30, filled = total ? width * step / total : width;
        std::fprintf(stderr, "\r[%s%s] %d/%d  ETA %.1f s ", std::string(size_t(filled), '#').c_str(),
                     std::string(size_t(width - filled), '.').c_str(), step, total, eta);
        if (step == total) std::fprintf(stderr, "\n");
    }

private:
    std::chrono::steady_clock::time_point m_start = std::chrono::steady_clock::now();
};

// "WxH" into two numbers, or a message naming the flag.
void readSize(const std::string& flag, const std::string& v, int& width, int& height, const char* example) {
    const auto x = v.find('x');
    if (x == std::string::npos) throw std::invalid_argument(flag + " expects WxH, e.g. " + example);
    width = toInt(flag, v.substr(0, x));
    height = toInt(flag, v.substr(x + 1));
}

// A seed flag's value; -1 draws a random one, as A1111 does (its seeds run to 2^32 - 1).
int64_t readSeed(const std::string& flag, const std::string& v) {
    const auto n = int64_t(toNumber(flag, v));
    if (n != -1) return n;
    std::random_device device;
    return int64_t(std::uniform_int_distribution<uint32_t>()(device));
}

std::vector<std::string> shippedPresetNames() {
    std::vector<std::string> names;
    try {
        for (const auto& p : memory::shippedPresets()) names.push_back(p.name);
    } catch (const std::exception&) {
        // a bad or missing presets folder: --preset says so when used; the table lists no choices
    }
    return names;
}

// Before a long run: what it will need against the preset's budget (docs/memory.md). A warning, not a refusal:
// the prediction is an estimate and the user may know better.
void warnIfTooBig(const api::GenerationSettings& s, const std::vector<std::string>& loraFolders) {
    if (s.preset.empty()) return;
    try {
        const auto& preset = memory::shippedPreset(s.preset);
        const auto prediction = pipeline::predictRun(s, {.loraFolders = loraFolders});
        const auto fit = memory::fits(prediction, preset.budgetBytes, &memory::shippedPresets());
        std::cerr << "predicted peak " << memory::formatGb(prediction.peak()) << " (" << prediction.peakStage()
                  << "), preset " << preset.name << " budget " << memory::formatGb(preset.budgetBytes) << "\n";
        if (!fit.fits) std::cerr << "warning: " << fit.message << "\n";
    } catch (const std::exception& e) {
        std::cerr << "note: no memory prediction: " << e.what() << "\n";
    }
}

// --lora NAME[:W[:UNET_W]]: trailing numbers are weights (A1111's <lora:name:te:unet> order), the rest the name.
api::LoraSetting parseLoraFlag(const std::string& v) {
    api::LoraSetting l;
    std::string name = v;
    std::vector<double> weights;
    for (int k = 0; k < 2; ++k) {
        const auto colon = name.rfind(':');
        if (colon == std::string::npos) break;
        char* end = nullptr;
        const std::string tail = name.substr(colon + 1);
        const double w = std::strtod(tail.c_str(), &end);
        if (tail.empty() || *end != '\0') break;
        weights.insert(weights.begin(), w);
        name.resize(colon);
    }
    if (name.empty()) throw std::invalid_argument("--lora expects NAME or PATH, optionally :WEIGHT (got '" + v + "')");
    l.name = name;
    if (!weights.empty()) l.textEncoderWeight = l.unetWeight = weights[0];
    if (weights.size() > 1) l.unetWeight = weights[1];
    return l;
}

// --max-memory cuda:0=8,cuda:1=4.5: gigabytes (2^30 bytes) of weights each GPU may hold under --device balanced.
std::map<std::string, int64_t> parseMaxMemory(const std::string& v) {
    std::map<std::string, int64_t> limits;
    for (size_t at = 0; at <= v.size();) {
        const size_t end = std::min(v.find(',', at), v.size());
        const std::string item = v.substr(at, end - at);
        const size_t eq = item.find('=');
        if (eq == std::string::npos) throw std::invalid_argument("--max-memory expects DEVICE=GB[,DEVICE=GB], e.g. cuda:0=8,cuda:1=4");
        const double gb = toNumber("--max-memory", item.substr(eq + 1));
        if (!(gb > 0 && gb < 1e6)) throw std::invalid_argument("--max-memory: " + item + " is not a size in GB");
        limits[item.substr(0, eq)] = int64_t(gb * double(int64_t(1) << 30));
        at = end + 1;
    }
    return limits;
}

class Generate : public Command {
public:
    OptionTable options() override;
    int run() override;

private:
    void restoreFrom(const std::string& file);
    void resolveRestored(const std::string& outFolder);
    void useBuiltInModelIfNone();
    void useModelDefaults();
    void fitSizeToOutpaint();
    void applyStylesAndWildcards();
    struct Output {
        bool toFile = false;
        std::string folder;
        imaging::ExportFormat format;
    };
    struct Made {
        api::Image image;        // the first of the run's images
        std::string parameters;  // its A1111 text
    };
    Made runOnce(pipeline::Engine& engine, const api::GenerationSettings& settings, const Output& o);

    api::GenerationSettings s;
    std::string out, nameTemplate = settings::kDefaultFileNameTemplate, format, from;
    std::vector<std::string> modelFolders, loraFolders, embeddingFolders, controlNetFolders, upscalerFolders, wildcardFolders, styleNames;
    std::string stylesFile = settings::defaultStylesPath();
    std::vector<std::pair<std::string, std::string>> plotAxes;  // --plot-x/y/z FIELD=VALUES
    bool modelGiven = false, initGiven = false, maskGiven = false, refinerGiven = false, sidecar = true, library = true, sizeGiven = false, cfgGiven = false,
         scheduleGiven = false;
    bool dryRun = false;  // check the settings and print the memory prediction, generate nothing
    int quality = 95;
    double pricePerHour = 0;
    settings::Restored restored;
};

OptionTable Generate::options() {
    auto number = [](double& field, const char* flag) { return [&field, flag](const std::string& v) { field = toNumber(flag, v); }; };
    auto whole = [](int& field, const char* flag) { return [&field, flag](const std::string& v) { field = toInt(flag, v); }; };
    auto text = [](std::string& field) { return [&field](const std::string& v) { field = v; }; };
    auto add = [](std::vector<std::string>& list) { return [&list](const std::string& v) { list.push_back(v); }; };
    auto plotAxis = [this](const char* flag, size_t axis) {
        return [this, flag, axis](const std::string& v) {
            const size_t eq = v.find('=');
            if (eq == std::string::npos || eq == 0) throw std::invalid_argument(std::string(flag) + " expects FIELD=VALUES, e.g. steps=10-30 (+10)");
            if (plotAxes.size() != axis) throw std::invalid_argument(std::string(flag) + ": give the axes in order, --plot-x first");
            plotAxes.emplace_back(v.substr(0, eq), v.substr(eq + 1));
        };
    };
    auto control = [this](const char* flag) {
        return [this, flag](const std::string& v) { applyControlFlag(flag, v, s, controlNetFolders); };
    };
    OptionTable t("generate", "[--model M] --prompt P --out DIR|FILE [options]",
                  "Images with their parameters and sidecars. Without --model: the built-in shapes model.\n"
                  "Flags apply in order, so flags after --from override what it restored.");
    t.value("--model", "PATH", "a diffusers folder, a .safetensors checkpoint or demo:tiny-sd1",
            [this](const std::string& v) { s.model = v, modelGiven = true; }, Complete::File)
        .value("--prompt", "TEXT", "what to draw (A1111 syntax: (word:1.2), [from:to:when], [a|b], <lora:name:w>, __wildcard__)",
               [this](const std::string& v) { s.prompt = v, s.promptTemplate.clear(), s.styles.clear(); })
        .value("--negative", "TEXT", "what not to draw", [this](const std::string& v) { s.negativePrompt = v, s.negativeTemplate.clear(); })
        .value("--style", "NAME", "apply a prompt style from the styles file (repeatable; docs/explore.md)", add(styleNames))
        .value("--styles-file", "FILE", "A1111's styles.csv to take --style from (default: the window's)", text(stylesFile), Complete::File)
        .value("--wildcards-dir", "DIR", "where __name__ finds name.txt (repeatable)", add(wildcardFolders), Complete::Folder)
        .value("--out", "DIR|FILE", "output folder, or one image file (.png, .jpg, .webp)", text(out), Complete::File)
        .value("--from", "FILE", "restore settings from an image, sidecar or A1111 text file",
               [this](const std::string& v) { restoreFrom(v); }, Complete::File)
        .value("--models", "DIR", "where --from looks for its model by hash (repeatable)", add(modelFolders), Complete::Folder)
        .flag("--dry-run", "check the settings, print the memory prediction, generate nothing", [this] { dryRun = true; })
        .section("X/Y/Z plot (docs/explore.md): one image per combination, and a sheet per Z value")
        .value("--plot-x", "FIELD=VALUES", "an axis: a settings field and A1111's values, e.g. steps=10-30 (+10), "
                                           "cfg_scale=5,7.5, sampler=Euler,DDIM, prompt_sr=red,blue, size=512x512,768x512",
               plotAxis("--plot-x", 0))
        .value("--plot-y", "FIELD=VALUES", "the second axis", plotAxis("--plot-y", 1))
        .value("--plot-z", "FIELD=VALUES", "the third axis: one sheet per value", plotAxis("--plot-z", 2))
        .section("sampling")
        .value("--seed", "N", "the seed (-1: a random one)", [this](const std::string& v) { s.seed = readSeed("--seed", v); })
        .value("--variation-seed", "N", "blend the noise towards this seed's (A1111's Variation seed; -1: a random one)",
               [this](const std::string& v) { s.variation.seed = readSeed("--variation-seed", v); })
        .value("--variation-strength", "X", "how far towards the variation seed (0..1; a batch then keeps the seed and "
                                            "counts the variation seed on)",
               number(s.variation.strength, "--variation-strength"))
        .value("--seed-resize-from", "WxH", "draw the noise as at this size, so a picture keeps its composition at another "
                                            "size (A1111's Seed resize from)",
               [this](const std::string& v) {
                   readSize("--seed-resize-from", v, s.variation.resizeFromWidth, s.variation.resizeFromHeight, "512x512");
               })
        .choice("--rng", {"CPU", "NV"}, "where the noise comes from: the CPU's generator, or the numbers NVIDIA cards draw "
                                        "(A1111's NV; its GPU within 1e-6)",
                text(s.rng))
        .value("--ensd", "N", "A1111's Eta noise seed delta: ancestral samplers' later noise from seed + N (0: off)",
               [this](const std::string& v) { s.ensd = toInt("--ensd", v); })
        .value("--steps", "N", "sampling steps", whole(s.steps, "--steps"))
        .value("--cfg", "X", "guidance scale", [this](const std::string& v) { s.cfgScale = toNumber("--cfg", v), cfgGiven = true; })
        .choice("--sampler", api::samplerNames(), "the sampler",
                [this](const std::string& v) {
                    s.sampler = v;
                    if (!scheduleGiven) s.scheduleType.clear();  // a restored image's schedule went with its sampler
                })
        .choice("--schedule-type", api::scheduleTypes(),
                "run the sampler as A1111 and ComfyUI do: k-diffusion's over this schedule, A1111's own DDIM and PLMS "
                "over Automatic (default: diffusers' sampler where it has one)",
                [this](const std::string& v) { s.scheduleType = v, scheduleGiven = true; })
        .choice("--sample-as", api::sampleAsTools(),
                "whose k-diffusion: ComfyUI's calls the UNet at whole timesteps and draws its noise its own way (default A1111)",
                text(s.sampleAs))
        .value("--size", "WxH", "width and height in pixels, e.g. 512x768 (default: the model's own size)",
               [this](const std::string& v) { readSize("--size", v, s.width, s.height, "512x768"), sizeGiven = true; })
        .value("--batch", "N", "images per run", whole(s.batchSize, "--batch"))
        .value("--clip-skip", "N", "stop the text encoder N-1 layers early", whole(s.clipSkip, "--clip-skip"))
        .choice("--sdxl-clip-skip", api::sdxlClipSkipModes(),
                "how clip skip reaches SDXL's encoders: hidden state -(N+1) (diffusers), none (A1111), -N (ComfyUI)",
                text(s.sdxlClipSkip))
        .choice("--prompt-syntax", {"a1111", "reference"}, "how the prompt's weights are read", text(s.promptSyntax))
        .choice("--emphasis", api::emphasisModes(), "A1111's emphasis mode", text(s.emphasis))
        .flag("--pad-conds", "pad the shorter of prompt and negative to the longer (A1111's \"Pad conds\"; default: each at "
              "its own length)", [this] { s.padConds = true; })
        .value("--init", "IMAGE", "img2img: start from this image", [this](const std::string& v) { s.initImage = v, initGiven = true; },
               Complete::File)
        .value("--strength", "X", "img2img: how much of the init image is repainted (0..1)", number(s.strength, "--strength"))
        .flag("--deterministic", "bit-identical reruns (docs/determinism.md)", [this] { s.deterministic = true; })
        .choice("--prediction-type", {"auto", "epsilon", "v_prediction"}, "over the model's scheduler config (docs/single-file.md)",
                [this](const std::string& v) { s.predictionType = v == "auto" ? "" : v == "v" ? "v_prediction" : v; })
        .choice("--timestep-spacing", {"auto", "linspace", "leading", "trailing"}, "over every sampler's own spacing",
                [this](const std::string& v) { s.timestepSpacing = v == "auto" ? "" : v; })
        .section("inpainting (docs/inpainting.md)")
        .value("--mask", "IMAGE", "repaint the --init image where this mask is white",
               [this](const std::string& v) { s.inpaint.mask = v, maskGiven = true; }, Complete::File)
        .value("--mask-blur", "N", "feather the mask's edge: A1111's Mask blur, a Gaussian sigma in pixels (default 4)",
               whole(s.inpaint.maskBlur, "--mask-blur"))
        .flag("--invert-mask", "repaint where the mask is black instead (A1111: Inpaint not masked)",
              [this] { s.inpaint.invertMask = true; })
        .choice("--masked-content", {"original", "fill", "latent noise", "latent nothing"},
                "what the repainted area starts from (A1111's Masked content; default original)",
                [this](const std::string& v) { s.inpaint.maskedContent = v; })
        .flag("--only-masked", "work at the full size on the mask's box and paste it back: details for small areas "
                               "(A1111: Inpaint area Only masked)",
              [this] { s.inpaint.onlyMasked = true; })
        .value("--masked-padding", "N", "pixels of context around the mask's box for --only-masked (default 32)",
               whole(s.inpaint.maskedPadding, "--masked-padding"))
        .value("--outpaint", "L,T,R,B", "extend the --init image by these pixels per side and paint the new area "
                                        "(the size follows; right and bottom grow to a multiple of 8)",
               [this](const std::string& v) {
                   int* sides[] = {&s.outpaint.left, &s.outpaint.top, &s.outpaint.right, &s.outpaint.bottom};
                   size_t at = 0;
                   for (int* side : sides) {
                       const size_t comma = v.find(',', at);
                       if ((comma == std::string::npos) != (side == sides[3]))
                           throw std::invalid_argument("--outpaint expects four numbers L,T,R,B, e.g. 0,0,128,0");
                       *side = toInt("--outpaint", v.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
                       at = comma + 1;
                   }
               })
        .choice("--outpaint-fill", {"edge", "mirror", "blur", "noise"}, "what the new area starts from (default mirror: the seam measured least visible, docs/inpainting.md)",
                text(s.outpaint.fill))
        .section("hires fix (docs/hires.md)")
        .flag("--hires", "a second pass at a larger size (A1111's hires fix)", [this] { s.hires.enabled = true; })
        .value("--hires-scale", "X", "the second pass's size: the image's times X (default 2)",
               [this](const std::string& v) { s.hires.scale = toNumber("--hires-scale", v), s.hires.enabled = true; })
        .value("--hires-resize", "WxH", "the second pass's size instead of the scale",
               [this](const std::string& v) {
                   readSize("--hires-resize", v, s.hires.resizeWidth, s.hires.resizeHeight, "1024x1536");
                   s.hires.enabled = true;
               })
        .value("--hires-steps", "N", "second-pass steps (0, the default: as many as the first)",
               [this](const std::string& v) { s.hires.steps = toInt("--hires-steps", v), s.hires.enabled = true; })
        .value("--hires-denoising", "X", "how much the second pass repaints (0..1, default 0.7)",
               [this](const std::string& v) { s.hires.denoising = toNumber("--hires-denoising", v), s.hires.enabled = true; })
        .value("--hires-upscaler", "NAME", "how the first pass is enlarged: Latent (the default), Latent (antialiased), "
               "Latent (bicubic), Latent (bicubic antialiased), Latent (nearest), Latent (nearest-exact), A1111's resizers "
               "None, Lanczos and Nearest, or an upscaler network's name or file (docs/upscalers.md)",
               [this](const std::string& v) { s.hires.upscaler = v, s.hires.enabled = true; }, Complete::File)
        .section("output")
        .value("--name", "TEMPLATE", "file names, default {date}-{counter:05}-{seed}-{prompt:6}", text(nameTemplate))
        .choice("--format", {"png", "jpeg", "webp"}, "image format (default: the --out file's, else png)", text(format))
        .value("--quality", "N", "JPEG / WebP quality", whole(quality, "--quality"))
        .flag("--no-sidecar", "write no settings .json beside the image", [this] { sidecar = false; })
        .flag("--no-library", "do not add the images to the window's image library", [this] { library = false; })
        .value("--price-per-hour", "X", "what the machine costs, for the sidecar's cost per image", number(pricePerHour, "--price-per-hour"))
        .section("memory (docs/memory.md)")
        .choice("--preset", shippedPresetNames(), "the VRAM recipe; warns when the predicted peak exceeds its budget",
                [this](const std::string& v) { memory::applyPreset(memory::shippedPreset(v), s); })
        .value("--device", "auto|cpu|cuda[:N]|balanced", "where to run (balanced: weights spread over the GPUs)", text(s.plan.device))
        .value("--max-memory", "DEV=GB[,DEV=GB]", "balanced: weights each GPU may hold, e.g. cuda:0=8,cuda:1=4",
               [this](const std::string& v) { s.plan.maxMemory = parseMaxMemory(v); })
        .choice("--precision", {"fp32", "fp16", "bf16"}, "all three networks",
                [this](const std::string& v) { from_json(nlohmann::json{{"precision", v}}, s.plan); })
        .choice("--attention", {"sdpa", "sdpa-math", "sliced", "chunked"}, "the attention kernel",
                [this](const std::string& v) { from_json(nlohmann::json{{"attention", v}}, s.plan); })
        .choice("--vae", {"sliced", "tiled", "sliced+tiled"}, "VAE decoding in slices and/or tiles",
                [this](const std::string& v) {
                    if (v == "sliced") s.plan.vaeSlicing = true;
                    else if (v == "tiled") s.plan.vaeTiling = true;
                    else if (v == "sliced+tiled") s.plan.vaeSlicing = s.plan.vaeTiling = true;
                    else throw std::invalid_argument("--vae expects sliced, tiled or sliced+tiled");
                })
        .value("--threads", "N", "CPU threads (0, the default: they follow the load; docs/cli.md)",
               [this](const std::string& v) { s.plan.threads = toInt("--threads", v); })
        .value("--plan", "JSON", "the whole memory plan as JSON",
               [this](const std::string& v) { s.plan = nlohmann::json::parse(v).get<api::MemoryPlan>(); })
        .section("LoRA (docs/lora.md)")
        .value("--lora", "NAME[:W[:UNET_W]]", "apply a LoRA (repeatable; or <lora:name:w> in the prompt)",
               [this](const std::string& v) { s.loras.push_back(parseLoraFlag(v)); }, Complete::File)
        .value("--lora-dir", "DIR", "where LoRAs are found by name (repeatable; also DD_LORA_PATH)", add(loraFolders), Complete::Folder)
        .value("--upscaler-dir", "DIR", "where hires upscaler networks are found by name (repeatable; also DD_UPSCALER_PATH)",
               add(upscalerFolders), Complete::Folder)
        .value("--embeddings-dir", "DIR",
               "where textual-inversion embeddings named in a prompt are found (repeatable; also DD_EMBEDDINGS_PATH and "
               "an 'embeddings' folder beside the LoRA folder)",
               add(embeddingFolders), Complete::Folder)
        .choice("--lora-mode", {"merge", "side"}, "merged into the weights, or a side path", text(s.loraMode))
        .section("SDXL refiner (docs/refiner.md)")
        .value("--refiner", "PATH|none", "the refiner model",
               [this](const std::string& v) { s.refiner.model = v == "none" ? std::string() : v, s.refiner.hash.clear(), refinerGiven = true; },
               Complete::File)
        .value("--refiner-switch", "F", "fraction of the steps before the refiner takes over (0.8)", number(s.refiner.switchAt, "--refiner-switch"))
        .value("--aesthetic-score", "X", "the refiner's aesthetic score (6)", number(s.refiner.aestheticScore, "--aesthetic-score"))
        .value("--negative-aesthetic-score", "X", "its negative counterpart (2.5)",
               number(s.refiner.negativeAestheticScore, "--negative-aesthetic-score"))
        .section("ControlNet (docs/controlnet.md; the --control-* flags set the unit of the last --controlnet)")
        .value("--controlnet", "PATH", "start a ControlNet unit (repeat for several)", control("--controlnet"), Complete::File)
        .value("--control-image", "IMAGE", "its control image", control("--control-image"), Complete::File)
        .choice("--control-preprocessor", {"none", "canny", "scribble", "blur"}, "made from the image first", control("--control-preprocessor"))
        .value("--control-weight", "W", "conditioning scale", control("--control-weight"))
        .value("--control-start", "F", "first fraction of the steps it acts on", control("--control-start"))
        .value("--control-end", "F", "last fraction of the steps it acts on", control("--control-end"))
        .value("--control-thresholds", "A[,B]", "the preprocessor's thresholds", control("--control-thresholds"))
        .choice("--control-resize", {"Crop and Resize", "Just Resize", "Resize and Fill"}, "how the image is fitted",
                control("--control-resize"))
        .value("--controlnet-dir", "DIR", "where ControlNets restored by --from are found", control("--controlnet-dir"), Complete::Folder);
    return t;
}

void Generate::restoreFrom(const std::string& file) {
    from = file;
    restored = settings::restoreFromFile(file);
    s = restored.settings;
    modelGiven = initGiven = maskGiven = refinerGiven = false;
}

// --from: the model by hash / name (unless --model), the init image only inside the output folder.
void Generate::resolveRestored(const std::string& outFolder) {
    if (from.empty()) return;
    const auto& r = restored;
    const std::string fromFolder = fs::path(from).parent_path().empty() ? "." : fs::path(from).parent_path().string();
    if (!modelGiven) {
        std::vector<std::string> folders = modelFolders;
        if (folders.empty() && !r.modelName.empty() && r.modelName.rfind("demo:", 0) != 0) folders.push_back(fromFolder);
        s.model = settings::resolveRestoredModel(r.modelName, r.modelHash, folders);
    }
    if (!refinerGiven && s.refiner.enabled()) {  // looked up like the model (docs/refiner.md)
        std::vector<std::string> folders = modelFolders;
        if (folders.empty()) folders.push_back(fromFolder);
        s.refiner.model = settings::resolveRestoredRefiner(s.refiner.model, s.refiner.hash, folders);
    }
    // Metadata names bare files: the init image and the mask are looked up in the output folder.
    const auto findInOutput = [&](bool given, std::string& name, const char* what, const char* flag) {
        if (given || name.empty()) return;
        const auto inside = settings::resolveInsideFolder(outFolder, name);
        if (!inside)
            throw std::invalid_argument(from + " was made from the " + what + " '" + name + "'; put it into the output folder " +
                                        outFolder + " or pass " + flag + " PATH");
        name = *inside;
    };
    findInOutput(initGiven, s.initImage, "init image", "--init");
    findInOutput(maskGiven, s.inpaint.mask, "inpainting mask", "--mask");
    resolveRestoredControlNets(s, controlNetFolders, outFolder);
    for (const auto& w : r.warnings) std::cerr << "note: " << w << "\n";
    if (!r.unknown.empty()) {
        std::string keys;
        for (const auto& [k, v] : r.unknown) keys += (keys.empty() ? "" : ", ") + k;
        std::cerr << "note: " << from << ": not used: " << keys << "\n";
    }
}

// The size of the extended init image (api::fitOutpaint).
void Generate::fitSizeToOutpaint() {
    const api::Image init = imaging::readImage(s.initImage);
    const api::Size size = api::fitOutpaint(s.outpaint, init.width, init.height);
    s.width = size.width;
    s.height = size.height;
}

// --style into the prompts (as the window's Apply does), then __wildcards__ picked with the run's seed.
void Generate::applyStylesAndWildcards() {
    if (!styleNames.empty()) {
        const auto styles = settings::readStylesFile(stylesFile);
        for (const auto& name : styleNames) {
            const auto style = std::find_if(styles.begin(), styles.end(), [&](const auto& st) { return st.name == name; });
            if (style == styles.end()) throw std::invalid_argument("--style " + name + ": no such style in " + stylesFile);
            s.prompt = settings::applyStyleText(style->prompt, s.prompt);
            s.negativePrompt = settings::applyStyleText(style->negativePrompt, s.negativePrompt);
            s.styles.push_back(name);
        }
    }
    settings::resolveWildcards(s, wildcardFolders);
}

// No model named: the built-in one.
void Generate::useBuiltInModelIfNone() {
    if (!s.model.empty()) return;
    const auto builtin = installedEmbeddedModel();
    if (builtin.empty()) throw std::invalid_argument("--model is required (a model path, or demo:tiny-sd1)");
    s.model = builtin.string();
}

// What was not given comes from the model, as the app does: its own size (512 for SD 1.x, 1024 for SDXL, 128 for
// the built-in model) and, for the built-in model, its guidance scale. A restored or outpainted run keeps its size.
void Generate::useModelDefaults() {
    if (!cfgGiven && from.empty() && isEmbeddedModel(s.model)) s.cfgScale = kEmbeddedModel.cfgScale;
    if (sizeGiven || !from.empty() || (s.outpaint.enabled() && !s.initImage.empty())) return;
    if (s.model != pipeline::kDemoModel && !fs::exists(s.model)) return;  // reported below, naming the file
    s.width = s.height = pipeline::nativeImageSize(s.model);
}

int Generate::run() {
    if (out.empty() && !dryRun) throw std::invalid_argument("--out DIR (or FILE.png / .jpg / .webp) is required");
    const bool toFile = imaging::hasImageExtension(out) && !fs::is_directory(out);
    const std::string folder = toFile ? (fs::path(out).parent_path().empty() ? "." : fs::path(out).parent_path().string())
                                      : out.empty() ? "." : out;
    if (!fs::is_directory(folder)) throw std::invalid_argument("output folder " + folder + " does not exist");
    resolveRestored(folder);
    applyStylesAndWildcards();
    useBuiltInModelIfNone();
    useModelDefaults();
    const auto& names = api::samplerNames();
    if (std::find(names.begin(), names.end(), s.sampler) == names.end()) {
        std::string list;
        for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
        throw std::invalid_argument("unknown sampler '" + s.sampler + "' (known: " + list + ")");
    }
    if (s.outpaint.enabled() && !s.initImage.empty() && !sizeGiven) fitSizeToOutpaint();
    api::validate(s);
    if (s.model != pipeline::kDemoModel && !fs::exists(s.model)) throw io::ModelFileError(s.model, "no such file or folder");
    if (s.refiner.enabled() && !fs::exists(s.refiner.model)) throw io::ModelFileError(s.refiner.model, "no such file or folder (--refiner)");
    const auto fileFormat = imaging::exportFormatFromName(!format.empty() ? format : toFile ? fs::path(out).extension().string() : std::string("png"));
    settings::expandFileName(nameTemplate, {});  // a bad template fails before the run, not after it
    if (toFile && s.batchSize == 1 && fs::exists(out)) throw std::invalid_argument(out + ": already exists (never overwritten)");

    std::vector<compare::PlotCell> cells;
    std::vector<compare::PlotAxis> axes;
    for (const auto& [field, values] : plotAxes) axes.push_back(compare::parseAxis(s, field, values));
    if (!axes.empty()) {
        if (toFile) throw std::invalid_argument("an X/Y/Z plot writes many images: --out names a folder");
        cells = compare::plotCells(s, axes);
        std::cerr << "X/Y/Z plot: " << cells.size() << " images\n";
    }
    warnIfTooBig(s, loraFolders);
    if (dryRun) return 0;
    pipeline::Engine engine;
    engine.setLoraFolders(loraFolders);
    engine.setUpscalerFolders(upscalerFolders);
    engine.setEmbeddingFolders(embeddingFolders);
    const Output output{toFile, folder, fileFormat};
    if (cells.empty()) {
        runOnce(engine, s, output);
        return 0;
    }
    std::vector<api::Image> images;
    std::string parameters;
    for (const auto& cell : cells) {
        const Made made = runOnce(engine, cell.settings, output);
        images.push_back(made.image);
        if (parameters.empty()) parameters = made.parameters;
    }
    for (const auto& sheet : imaging::writePlotSheets(axes, images, parameters, folder)) std::cout << sheet << "\n";
    return 0;
}

// One run of `settings`: its images exported (with sidecars) and printed, added to the library.
Generate::Made Generate::runOnce(pipeline::Engine& engine, const api::GenerationSettings& settings, const Output& o) {
    api::CancelToken cancel;
    ProgressBar progress;
    const auto start = std::chrono::steady_clock::now();
    const auto result = engine.generate(settings, cancel, &progress, imaging::readRunImages(settings));
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    std::vector<std::string> written;
    Made made;
    for (std::size_t i = 0; i < result.images.size(); ++i) {
        const auto sc = imaging::sidecarFor(result, int(i), wall, pricePerHour, DD_VERSION);
        imaging::ExportedFile f;
        if (o.toFile) {
            fs::path p(out);
            if (result.images.size() > 1) p = p.parent_path() / (p.stem().string() + "-" + std::to_string(i + 1) + p.extension().string());
            f = imaging::exportImageAs(p.string(), o.format, quality, result.images[i], sc, result.modelName, sidecar);
        } else {
            imaging::ExportRequest req;
            req.folder = o.folder;
            req.nameTemplate = nameTemplate;
            req.format = o.format;
            req.quality = quality;
            req.sidecar = sidecar;
            f = imaging::exportImage(req, result.images[i], sc, result.modelName);
        }
        std::cout << f.image << "\n";
        written.push_back(f.image);
        if (i == 0) made = {result.images[i], imaging::metadataFor(sc, result.modelName).parameters};
    }
    if (library) addToLibrary(written);
    for (const auto& w : result.warnings) std::cerr << "warning: " << w << "\n";
    double steps = 0;
    for (double t : result.timings.stepSeconds) steps += t;
    std::cerr << "load " << result.timings.loadSeconds << " s, encode " << result.timings.encodeSeconds << " s, "
              << result.timings.stepSeconds.size() << " steps " << steps << " s, decode " << result.timings.decodeSeconds << " s\n";
    return made;
}

} // namespace

std::unique_ptr<Command> makeGenerateCommand() { return std::make_unique<Generate>(); }

} // namespace dd::cli
