#pragma once
// Engine::generate: settings in, images out. Owns the loaded model between runs (one model at a time) and
// the text conditioning of recent prompts for it (a run that changes only seed, steps, CFG, sampler or size
// does not run the text encoders).
// Not thread-safe: create and use it on one worker thread (torch objects live there).
#include "core/api/errors.h"
#include "core/api/generation_result.h"
#include "core/api/run_images.h"
#include "core/memory/ledger.h"
#include "core/pipeline/latent_observer.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dd::text {
class EmbeddingVectors;
}

namespace dd::pipeline {

class Previewer;

// What Engine::load loaded.
struct LoadReport {
    std::string source;       // as asked (kDemoModel for the demo)
    std::string displayName;
    std::string family;       // "SD 1.x", ...
    std::string hash;         // A1111 short hash ("" for folders and the demo)
    double seconds = 0;
    bool alreadyLoaded = false;  // nothing to do: that model was loaded with that placement
};

// What Engine::upscale did.
struct UpscaleReport {
    api::Image image;
    std::string path, name, hash;  // the network's file, its name (the file's stem, as A1111 names it), short hash
    std::string description;       // "ESRGAN 4x, 64 features, 23 blocks"
    int scale = 1;
    int64_t tile = 0;              // input pixels per tile side (0: the whole image)
    int64_t overlap = 0;
};
struct UpscaleOptions {
    std::string device = "auto";   // auto | cpu | cuda[:N]
    int64_t tile = -1;             // -1: the largest that fits the device's memory; 0: the whole image at once
    int64_t overlap = 32;
};

struct EngineTestHooks;  // engine_test_hooks.h
struct RetryHistory;     // oom_ladder.h

class Engine {
public:
    using Log = std::function<void(const std::string&)>;
    explicit Engine(Log log = {});
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    // Throws std::invalid_argument (bad settings), dd::io::ModelFileError (bad model), Cancelled.
    // `images` holds the pixels the settings name: the init image (img2img, inpainting), the prepared mask
    // (inpainting) and the preprocessed control images (imaging::readRunImages reads them all).
    api::GenerationResult generate(const api::GenerationSettings& s, const api::CancelToken& cancel, api::Observer* observer,
                                   const api::RunImages& images = {});

    // Loads `source` (a model path or kDemoModel) placed as `plan` says, so the next generate with that model
    // and plan starts at once. `progress` is told each part (sd_model.h LoadStep, then "hash"); `cancel` is
    // checked between parts. The previous model is freed only once the new one is complete: a cancelled
    // (Cancelled) or failed (dd::io::ModelFileError, std::invalid_argument) load leaves it loaded and usable —
    // at the price of holding both while loading. `knownHash` spares hashing the file again.
    using LoadProgress = std::function<void(const std::string& part, int done, int total)>;
    LoadReport load(const std::string& source, const api::MemoryPlan& plan, const api::CancelToken& cancel,
                    const LoadProgress& progress = {}, const std::string& knownHash = {});
    // The loaded model's source ("" when none).
    std::string loadedModel() const;

    // Live previews through TAESD at `taesdPath` ("" = the latent→RGB approximation). Loads it now, on the
    // loaded model's device; throws dd::io::ModelFileError and keeps the previous choice.
    void setPreviewDecoder(const std::string& taesdPath);
    std::string previewDecoder() const;
    // Previews computed since the engine was made (the observer's wantsPreview decides).
    int64_t previewsBuilt() const;

    // An image made bigger by an upscaler network (docs/upscalers.md), named or given by file as the hires fix's
    // (setUpscalerFolders, DD_UPSCALER_PATH); the network stays loaded for the next call. `progress` is told each
    // tile, `cancel` checked between tiles. Throws dd::io::ModelFileError, std::invalid_argument, Cancelled.
    using TileProgress = std::function<void(int done, int total)>;
    UpscaleReport upscale(const api::Image& image, const std::string& upscaler, const UpscaleOptions& options,
                          const api::CancelToken& cancel, const TileProgress& progress = {});

    // Frees the loaded model, its cached conditioning and what the allocators keep (host heap, CUDA cache).
    // The next generate loads again.
    void releaseModel();
    // Prompt encodings actually computed (cache misses) since the engine was made.
    int64_t textEncoderRuns() const;
    // Folders where <lora:name> and GenerationSettings::loras names are looked up (docs/lora.md).
    void setLoraFolders(std::vector<std::string> folders);
    // Folders where textual-inversion embeddings are looked up, before the defaults (model_search.h embeddingFolders).
    void setEmbeddingFolders(std::vector<std::string> folders);
    // Folders where a hires fix's upscaler network is looked up by name, before DD_UPSCALER_PATH (docs/upscalers.md).
    void setUpscalerFolders(std::vector<std::string> folders);
    // Bytes the applied LoRAs hold beside the model (merged originals or side paths).
    int64_t loraBytes() const;
    // Parameters of the ControlNets the last run loaded (kept for the next run).
    int64_t controlNetParameters() const;
    // Bytes of weights resident per device (labels "cpu", "cuda:0"; "compute" under offloadOnCpu), updated at
    // every placement; its peaks restart at each generate.
    const memory::ResidencyLedger& ledger() const;
    void setTestHooks(EngineTestHooks hooks);

private:
    class Run;  // one generate call's run, stage by stage (engine.cpp)
    // "Only masked": a run on the mask's box, laid back over the whole init image (masked_area.h).
    api::GenerationResult generateOnlyMasked(const api::GenerationSettings& s, const api::CancelToken& cancel,
                                             api::Observer* observer, const api::RunImages& images, RetryHistory& history);
    struct Loaded;
    std::unique_ptr<Loaded> m_loaded;
    std::unique_ptr<Previewer> m_previewer;
    Log m_log;
    int64_t m_textEncoderRuns = 0;
    std::vector<std::string> m_loraFolders, m_upscalerFolders, m_embeddingFolders;
    std::unique_ptr<EngineTestHooks> m_hooks;
    // The embedding folders as last scanned, with the vectors read so far; scanned again at every run.
    text::EmbeddingVectors& embeddings();
    std::unique_ptr<text::EmbeddingVectors> m_embeddings;
};

// The model name the app opens when the user has not chosen one.
inline constexpr const char* kDemoModel = "demo:tiny-sd1";

// The image side `source` (a model path or kDemoModel) was trained at (io::nativeImageSize): the size of a run
// that names none. Maps the weights, reads none of them. Throws dd::io::ModelFileError.
int nativeImageSize(const std::string& source);

} // namespace dd::pipeline
