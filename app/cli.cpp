// diffusiondesk-cli: the engine without the GUI. Every failure a user can cause ends in one clear line on
// stderr and a non-zero exit code.
#include "app/cli_commands.h"
#include "app/cli_control.h"
#include "core/io/checkpoint.h"
#include "core/io/model_error.h"
#include "core/io/model_hash.h"
#include "core/io/text_format.h"
#include "core/memory/predictor.h"
#include "core/memory/preset_settings.h"
#include "core/memory/release_memory.h"
#include "core/resources.h"
#include "core/pipeline/engine.h"
#include "core/pipeline/lora_search.h"
#include "core/text/prompt_parser.h"
#include "core/sched/scheduler.h"
#include "core/settings/file_name_template.h"
#include "core/settings/model_lookup.h"
#include "core/settings/restore.h"
#include "imaging/control_preprocess.h"
#include "imaging/export.h"
#include "imaging/png.h"

#include <nlohmann/json.hpp>
#include <torch/version.h>
#include <cctype>
#include <chrono>
#include <optional>
#include <cstdio>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace dd::io;

namespace {

constexpr const char* kUsage =
    "usage: diffusiondesk-cli <command> [options]   (--version, --help)\n"
    "commands:\n"
    "  inspect PATH    family, components, dtypes, parameter counts, file sizes and hash of a model\n"
    "                  (a diffusers folder or a single-file .safetensors checkpoint)\n"
    "  generate [--model M] --prompt P --out DIR|FILE.png [options]\n"
    "                  without --model: the built-in shapes model (\"a large blue star on a red background\")\n"
    "                  --from IMAGE|SIDECAR|TXT restores settings (later flags override; the model is found by\n"
    "                  hash in --models DIR), --name TEMPLATE (default {date}-{counter:05}-{seed}-{prompt:6}),\n"
    "                  --format png|jpeg|webp, --quality N, --deterministic, --price-per-hour X, --no-sidecar,\n"
    "                  --seed --steps --cfg --sampler --size WxH --batch --negative --clip-skip --init --strength\n"
    "                  scheduler: --prediction-type auto|epsilon|v_prediction, --timestep-spacing auto|linspace|leading|\n"
    "                  trailing (over the model's scheduler config for every sampler; docs/single-file.md)\n"
    "                  memory: --preset 4gb|6gb|8gb|12gb|24gb|cpu (warns when the predicted peak exceeds its budget;\n"
    "                  --dry-run prints that prediction and stops, no --out needed),\n"
    "                  --device auto|cpu|cuda[:N]|balanced, --max-memory cuda:0=GB[,cuda:1=GB] (balanced: weights per GPU),\n"
    "                  --precision fp32|fp16|bf16, --attention sdpa|sdpa-math|sliced|chunked,\n"
    "                  --vae sliced|tiled|sliced+tiled, --plan JSON (docs/memory.md)\n"
    "                  LoRA: --lora NAME|PATH[:WEIGHT[:UNET_WEIGHT]] (repeatable; or <lora:name:w> in the prompt),\n"
    "                  --lora-dir DIR (repeatable; also DD_LORA_PATH), --lora-mode merge|side (docs/lora.md)\n"
    "                  SDXL refiner: --refiner PATH|none, --refiner-switch F (default 0.8), --aesthetic-score X (6),\n"
    "                  --negative-aesthetic-score X (2.5) (docs/refiner.md)\n"
    "                  ControlNet: --controlnet PATH --control-image IMG [--control-preprocessor none|canny|scribble|blur]\n"
    "                  [--control-weight W] [--control-start F] [--control-end F] [--control-thresholds A[,B]]\n"
    "                  [--control-resize MODE] (repeat for several), --controlnet-dir DIR (docs/controlnet.md)\n"
    "  batch JOBS.jsonl --out DIR [--shard I/N] [--models DIR] [--model M] [--price-per-hour X]\n"
    "                  resumable batch, one job per line (settings JSON or sidecar); see docs/batch.md\n"
    "  verify SIDECAR [--image PNG]   rerun a result and compare pixel hashes (docs/determinism.md)\n"
    "  bench --model PATH [--steps N] [--size WxH] [--batch N] [--threads N] [--device cpu|cuda[:N]] [--rows A,B]\n"
    "                  [--json FILE]   memory and speed per plan (docs/benchmarks.md); rows fp32 bf16 fp16 sdpa-math\n"
    "                  sliced chunked vae-slicing vae-tiling fp8, and with a GPU offload-model offload-sequential offload-group\n";

uint64_t bytesOnDisk(const fs::path& p) {
    if (fs::is_regular_file(p)) return fs::file_size(p);
    uint64_t total = 0;
    for (const auto& e : fs::recursive_directory_iterator(p))
        if (e.is_regular_file() && e.path().extension() == ".safetensors") total += e.file_size();
    return total;
}

int inspect(const std::string& path) {
    const Checkpoint ck = loadCheckpoint(path);
    std::cout << "model:      " << path << "\n"
              << "format:     " << (ck.format == CheckpointFormat::SingleFile ? "single file" : "diffusers folder") << "\n"
              << "family:     " << familyName(ck.family) << "\n";
    uint64_t totalParams = 0;
    for (const auto& [name, tensors] : ck.components) {
        std::map<std::string, uint64_t> dtypes;  // dtype → parameter count
        uint64_t params = 0;
        for (const auto& [_, t] : tensors) {
            dtypes[c10::toString(t.scalar_type())] += uint64_t(t.numel());
            params += uint64_t(t.numel());
        }
        totalParams += params;
        std::cout << "component:  " << name << "  " << withThousands(params) << " parameters in " << tensors.size() << " tensors (";
        bool first = true;
        for (const auto& [dtype, n] : dtypes) {
            std::cout << (first ? "" : ", ") << dtype << " " << withThousands(n);
            first = false;
        }
        std::cout << ")";
        if (ck.format == CheckpointFormat::DiffusersFolder) std::cout << "  " << humanBytes(bytesOnDisk(fs::path(path) / name));
        std::cout << "\n";
    }
    std::cout << "parameters: " << withThousands(totalParams) << "\n"
              << "size:       " << humanBytes(bytesOnDisk(path)) << "\n";
    for (const auto& note : ck.notes) std::cout << "note:       " << note << "\n";
    if (fs::is_regular_file(path)) {
        const ModelHashes h = hashModelFile(path);
        std::cout << "hash:       " << h.shortHash << "  (A1111 \"Model hash\"; legacy " << h.legacyHash << ")\n"
                  << "sha256:     " << h.sha256 << "\n";
    }
    return 0;
}

// Progress on a terminal: a bar with ETA on stderr, redrawn in place; nothing when stderr is not a TTY.
class ProgressBar : public dd::pipeline::Observer {
public:
    bool wantsPreview(int, int) override { return false; }  // a terminal shows none: the engine computes none
    void onStep(int step, int total, const dd::pipeline::Image&) override {
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

double toNumber(const std::string& flag, const std::string& v) {
    try {
        std::size_t used = 0;
        const double d = std::stod(v, &used);
        if (used == v.size()) return d;
    } catch (const std::exception&) {
    }
    throw std::invalid_argument(flag + " expects a number, got '" + v + "'");
}

bool hasImageExtension(const std::string& path) {
    std::string ext = fs::path(path).extension().string();
    for (auto& c : ext) c = char(std::tolower(static_cast<unsigned char>(c)));
    return ext == ".png" || ext == ".jpg" || ext == ".jpeg" || ext == ".webp";
}

struct GenerateOptions {
    dd::settings::GenerationSettings s;
    std::string out, nameTemplate = dd::settings::kDefaultFileNameTemplate, format, from;
    std::vector<std::string> modelFolders, loraFolders, controlNetFolders;
    bool modelGiven = false, initGiven = false, refinerGiven = false, sidecar = true, sizeGiven = false, cfgGiven = false;
    bool dryRun = false;  // --dry-run: check the settings and print the memory prediction, generate nothing
    int quality = 95;
    double pricePerHour = 0;
    dd::settings::Restored restored;
};

// Presets ship in <resources>/presets (the recipe table's rows and cpu); read once per process.
std::string shippedPresetDir() { return (dd::resourceDir() / "presets").string(); }

const std::vector<dd::memory::Preset>& shippedPresets() {
    static const std::vector<dd::memory::Preset> presets = dd::memory::loadPresets(shippedPresetDir());
    return presets;
}

dd::memory::Preset findPreset(const std::string& name) {
    std::string known;
    for (const auto& p : shippedPresets()) {
        if (p.name == name) return p;
        known += (known.empty() ? "" : ", ") + p.name;
    }
    throw std::invalid_argument("unknown preset '" + name + "' (in " + shippedPresetDir() + ": " + known + ")");
}

// Before a long run: what it will need against the preset's budget (docs/memory.md). A warning, not a refusal:
// the prediction is an estimate and the user may know better.
void warnIfTooBig(const dd::settings::GenerationSettings& s, const std::vector<std::string>& loraFolders) {
    if (s.preset.empty()) return;
    try {
        const auto preset = findPreset(s.preset);
        dd::memory::PredictInput in;
        in.width = s.width, in.height = s.height, in.batch = s.batchSize, in.plan = s.plan, in.cfg = s.cfgScale > 1;
        in.cuda = s.plan.device.rfind("cuda", 0) == 0 || s.plan.device == "balanced" || (s.plan.device == "auto" && dd::memory::cudaDeviceCount() > 0);
        std::vector<std::string> loras;
        for (const auto& tag : dd::text::extractExtraNetworks(s.prompt).loras) loras.push_back(dd::pipeline::findLoraFile(tag.name, loraFolders, false));
        for (const auto& l : s.loras)
            if (!l.fromPrompt) loras.push_back(dd::pipeline::findLoraFile(l.name, loraFolders, true));
        in.loraSidePath = s.loraMode == "side";
        in.loraBytes = dd::memory::loraExtraBytes(loras, s.plan, in.loraSidePath);
        if (s.refiner.enabled()) in.refinerBytes = dd::memory::modelWeightBytes(dd::memory::modelShapeOf(s.refiner.model), s.plan);
        std::vector<std::string> controlNets;
        for (const auto& c : s.controlnets) controlNets.push_back(c.model);
        in.controlNetParams = dd::memory::controlNetParameters(controlNets);
        const auto prediction = dd::memory::predict(dd::memory::modelShapeOf(s.model), in);
        const auto fit = dd::memory::fits(prediction, preset.budgetBytes, &shippedPresets());
        std::cerr << "predicted peak " << dd::memory::formatGb(prediction.peak()) << " (" << prediction.peakStage()
                  << "), preset " << preset.name << " budget " << dd::memory::formatGb(preset.budgetBytes) << "\n";
        if (!fit.fits) std::cerr << "warning: " << fit.message << "\n";
    } catch (const std::exception& e) {
        std::cerr << "note: no memory prediction: " << e.what() << "\n";
    }
}

// --lora NAME[:W[:UNET_W]]: trailing numbers are weights (A1111's <lora:name:te:unet> order), the rest the name.
dd::settings::LoraSetting parseLoraFlag(const std::string& v) {
    dd::settings::LoraSetting l;
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

// Flags are applied in order, so flags after --from override what the file restored.
GenerateOptions parseGenerate(const std::vector<std::string>& args) {
    GenerateOptions o;
    auto& s = o.s;
    for (std::size_t i = 1; i < args.size(); ++i) {
        const std::string& flag = args[i];
        if (flag == "--deterministic") { s.deterministic = true; continue; }
        if (flag == "--no-sidecar") { o.sidecar = false; continue; }
        if (flag == "--dry-run") { o.dryRun = true; continue; }
        if (i + 1 >= args.size()) throw std::invalid_argument(flag + " needs a value");
        const std::string& v = args[++i];
        if (flag == "--from") {
            o.from = v;
            o.restored = dd::settings::restoreFromFile(v);
            s = o.restored.settings;
            o.modelGiven = o.initGiven = o.refinerGiven = false;
        } else if (flag == "--model") s.model = v, o.modelGiven = true;
        else if (flag == "--models") o.modelFolders.push_back(v);
        else if (dd::cli::applyControlFlag(flag, v, s, o.controlNetFolders)) continue;
        else if (flag == "--lora") s.loras.push_back(parseLoraFlag(v));
        else if (flag == "--lora-dir") o.loraFolders.push_back(v);
        else if (flag == "--lora-mode") s.loraMode = v;
        else if (flag == "--refiner") s.refiner.model = v == "none" ? std::string() : v, s.refiner.hash.clear(), o.refinerGiven = true;
        else if (flag == "--refiner-switch") s.refiner.switchAt = toNumber(flag, v);
        else if (flag == "--aesthetic-score") s.refiner.aestheticScore = toNumber(flag, v);
        else if (flag == "--negative-aesthetic-score") s.refiner.negativeAestheticScore = toNumber(flag, v);
        else if (flag == "--prompt") s.prompt = v;
        else if (flag == "--negative") s.negativePrompt = v;
        else if (flag == "--seed") s.seed = int64_t(toNumber(flag, v));
        else if (flag == "--steps") s.steps = int(toNumber(flag, v));
        else if (flag == "--cfg") s.cfgScale = toNumber(flag, v), o.cfgGiven = true;
        else if (flag == "--sampler") s.sampler = v, s.scheduleType.clear();
        else if (flag == "--prediction-type") s.predictionType = v == "auto" ? "" : v == "v" ? "v_prediction" : v;
        else if (flag == "--timestep-spacing") s.timestepSpacing = v == "auto" ? "" : v;
        else if (flag == "--batch") s.batchSize = int(toNumber(flag, v));
        else if (flag == "--clip-skip") s.clipSkip = int(toNumber(flag, v));
        else if (flag == "--prompt-syntax") s.promptSyntax = v;
        else if (flag == "--emphasis") s.emphasis = v;
        else if (flag == "--init") s.initImage = v, o.initGiven = true;
        else if (flag == "--strength") s.strength = toNumber(flag, v);
        else if (flag == "--preset") dd::memory::applyPreset(findPreset(v), s);
        else if (flag == "--plan") s.plan = nlohmann::json::parse(v).get<dd::memory::MemoryPlan>();
        else if (flag == "--device") s.plan.device = v;
        else if (flag == "--max-memory") {
            // cuda:0=8,cuda:1=4.5: gigabytes (2^30 bytes) of weights each GPU may hold under --device balanced.
            s.plan.maxMemory.clear();
            for (size_t at = 0; at <= v.size();) {
                const size_t end = std::min(v.find(',', at), v.size());
                const std::string item = v.substr(at, end - at);
                const size_t eq = item.find('=');
                if (eq == std::string::npos) throw std::invalid_argument("--max-memory expects DEVICE=GB[,DEVICE=GB], e.g. cuda:0=8,cuda:1=4");
                const double gb = toNumber(flag, item.substr(eq + 1));
                if (!(gb > 0 && gb < 1e6)) throw std::invalid_argument("--max-memory: " + item + " is not a size in GB");
                s.plan.maxMemory[item.substr(0, eq)] = int64_t(gb * double(int64_t(1) << 30));
                at = end + 1;
            }
        }
        else if (flag == "--precision") {
            nlohmann::json j = {{"precision", v}};  // one name for all three networks, as in the plan's JSON
            from_json(j, s.plan);
        } else if (flag == "--attention") from_json(nlohmann::json{{"attention", v}}, s.plan);
        else if (flag == "--vae") {
            if (v == "sliced") s.plan.vaeSlicing = true;
            else if (v == "tiled") s.plan.vaeTiling = true;
            else if (v == "sliced+tiled") s.plan.vaeSlicing = s.plan.vaeTiling = true;
            else throw std::invalid_argument("--vae expects sliced, tiled or sliced+tiled");
        }
        else if (flag == "--out") o.out = v;
        else if (flag == "--name") o.nameTemplate = v;
        else if (flag == "--format") o.format = v;
        else if (flag == "--quality") o.quality = int(toNumber(flag, v));
        else if (flag == "--price-per-hour") o.pricePerHour = toNumber(flag, v);
        else if (flag == "--size") {
            const auto x = v.find('x');
            if (x == std::string::npos) throw std::invalid_argument("--size expects WxH, e.g. 512x768");
            s.width = int(toNumber(flag, v.substr(0, x)));
            s.height = int(toNumber(flag, v.substr(x + 1)));
            o.sizeGiven = true;
        } else throw std::invalid_argument("unknown option '" + flag + "'");
    }
    return o;
}

// --from: the model by hash / name (unless --model), the init image only inside the output folder.
void resolveRestored(GenerateOptions& o, const std::string& outFolder) {
    if (o.from.empty()) return;
    const auto& r = o.restored;
    if (!o.modelGiven) {
        std::vector<std::string> folders = o.modelFolders;
        if (folders.empty() && !r.modelName.empty() && r.modelName.rfind("demo:", 0) != 0)
            folders.push_back(fs::path(o.from).parent_path().empty() ? "." : fs::path(o.from).parent_path().string());
        o.s.model = dd::settings::resolveRestoredModel(r.modelName, r.modelHash, folders);
    }
    if (!o.refinerGiven && o.s.refiner.enabled()) {  // looked up like the model (docs/refiner.md)
        std::vector<std::string> folders = o.modelFolders;
        if (folders.empty()) folders.push_back(fs::path(o.from).parent_path().empty() ? "." : fs::path(o.from).parent_path().string());
        o.s.refiner.model = dd::settings::resolveRestoredRefiner(o.s.refiner.model, o.s.refiner.hash, folders);
    }
    if (!o.initGiven && !o.s.initImage.empty()) {
        const auto inside = dd::settings::resolveInsideFolder(outFolder, o.s.initImage);
        if (!inside)
            throw std::invalid_argument(o.from + " was made from the init image '" + o.s.initImage + "'; put it into the output folder " +
                                        outFolder + " or pass --init PATH");
        o.s.initImage = *inside;
    }
    dd::cli::resolveRestoredControlNets(o.s, o.controlNetFolders, outFolder);
    for (const auto& w : r.warnings) std::cerr << "note: " << w << "\n";
    if (!r.unknown.empty()) {
        std::string keys;
        for (const auto& [k, v] : r.unknown) keys += (keys.empty() ? "" : ", ") + k;
        std::cerr << "note: " << o.from << ": not used: " << keys << "\n";
    }
}

int generate(const std::vector<std::string>& args) {
    GenerateOptions o = parseGenerate(args);
    auto& s = o.s;
    if (o.out.empty() && !o.dryRun) throw std::invalid_argument("--out DIR (or FILE.png / .jpg / .webp) is required");
    const bool toFile = hasImageExtension(o.out) && !fs::is_directory(o.out);
    const std::string folder = toFile ? (fs::path(o.out).parent_path().empty() ? "." : fs::path(o.out).parent_path().string())
                                      : o.out.empty() ? "." : o.out;
    if (!fs::is_directory(folder)) throw std::invalid_argument("output folder " + folder + " does not exist");
    resolveRestored(o, folder);
    if (s.model.empty()) {
        // No model named: the built-in one, at its own size and guidance scale unless given (as the app does).
        const auto builtin = dd::installedEmbeddedModel();
        if (builtin.empty()) throw std::invalid_argument("--model is required (a model path, or demo:tiny-sd1)");
        s.model = builtin.string();
        if (!o.sizeGiven) s.width = s.height = dd::kEmbeddedModel.size;
        if (!o.cfgGiven) s.cfgScale = dd::kEmbeddedModel.cfgScale;
    }
    const auto& names = dd::sched::schedulerNames();
    if (std::find(names.begin(), names.end(), s.sampler) == names.end()) {
        std::string list;
        for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
        throw std::invalid_argument("unknown sampler '" + s.sampler + "' (known: " + list + ")");
    }
    dd::settings::validate(s);
    if (s.model != dd::pipeline::kDemoModel && !fs::exists(s.model)) throw ModelFileError(s.model, "no such file or folder");
    if (s.refiner.enabled() && !fs::exists(s.refiner.model)) throw ModelFileError(s.refiner.model, "no such file or folder (--refiner)");
    const auto format = dd::imaging::exportFormatFromName(
        !o.format.empty() ? o.format : toFile ? fs::path(o.out).extension().string() : std::string("png"));
    dd::settings::expandFileName(o.nameTemplate, {});  // a bad template fails before the run, not after it
    if (toFile && s.batchSize == 1 && fs::exists(o.out)) throw std::invalid_argument(o.out + ": already exists (never overwritten)");

    warnIfTooBig(s, o.loraFolders);
    if (o.dryRun) return 0;
    std::optional<dd::pipeline::Image> init;
    if (!s.initImage.empty()) init = dd::imaging::readImage(s.initImage);
    dd::pipeline::Engine engine;
    engine.setLoraFolders(o.loraFolders);
    dd::pipeline::CancelToken cancel;
    ProgressBar progress;
    const auto start = std::chrono::steady_clock::now();
    const auto controlImages = dd::imaging::prepareControlImages(s);
    const auto result = engine.generate(s, cancel, &progress, init ? &*init : nullptr, controlImages);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    for (std::size_t i = 0; i < result.images.size(); ++i) {
        const auto sc = dd::imaging::sidecarFor(result, int(i), wall, o.pricePerHour, DD_VERSION);
        dd::imaging::ExportedFile f;
        if (toFile) {
            fs::path p(o.out);
            if (result.images.size() > 1) p = p.parent_path() / (p.stem().string() + "-" + std::to_string(i + 1) + p.extension().string());
            f = dd::imaging::exportImageAs(p.string(), format, o.quality, result.images[i], sc, result.modelName, o.sidecar);
        } else {
            dd::imaging::ExportRequest req;
            req.folder = folder;
            req.nameTemplate = o.nameTemplate;
            req.format = format;
            req.quality = o.quality;
            req.sidecar = o.sidecar;
            f = dd::imaging::exportImage(req, result.images[i], sc, result.modelName);
        }
        std::cout << f.image << "\n";
    }
    for (const auto& w : result.warnings) std::cerr << "warning: " << w << "\n";
    double steps = 0;
    for (double t : result.timings.stepSeconds) steps += t;
    std::cerr << "load " << result.timings.loadSeconds << " s, encode " << result.timings.encodeSeconds << " s, "
              << result.timings.stepSeconds.size() << " steps " << steps << " s, decode " << result.timings.decodeSeconds << " s\n";
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    const std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty() || args[0] == "--help" || args[0] == "-h") {
        std::cout << kUsage;
        return args.empty() ? 2 : 0;
    }
    if (args[0] == "--version") {
        std::cout << "DiffusionDesk " << DD_VERSION << " (libtorch " << TORCH_VERSION << ", "
                  << dd::memory::cpuAllocatorName() << ")\n";
        return 0;
    }
    try {
        if (args[0] == "inspect") {
            if (args.size() != 2) throw std::invalid_argument("inspect takes exactly one PATH");
            return inspect(args[1]);
        }
        if (args[0] == "generate") return generate(args);
        if (args[0] == "bench") return dd::cli::benchCommand(args);
        if (args[0] == "batch") return dd::cli::batchCommand(args);
        if (args[0] == "verify") return dd::cli::verifyCommand(args);
        throw std::invalid_argument("unknown command '" + args[0] + "' (try --help)");
    } catch (const ModelFileError& e) {
        std::cerr << "error: " << e.what() << "\n";
    } catch (const std::invalid_argument& e) {
        std::cerr << "error: " << e.what() << " (see diffusiondesk-cli --help)\n";
    } catch (const std::exception& e) {
        std::cerr << "error: " << e.what() << "\n";
    }
    return 1;
}
