#pragma once
// Engine::generate: settings in, images out. Owns the loaded model between runs (one model at a time) and
// the text conditioning of recent prompts for it (a run that changes only seed, steps, CFG, sampler or size
// does not run the text encoders).
// Not thread-safe: create and use it on one worker thread (torch objects live there).
#include "core/pipeline/generation.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dd::pipeline {

class Engine {
public:
    using Log = std::function<void(const std::string&)>;
    explicit Engine(Log log = {});
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    // Throws std::invalid_argument (bad settings), dd::io::ModelFileError (bad model), Cancelled.
    // img2img (settings.initImage set) takes the init image's pixels, already at settings' width × height.
    GenerationResult generate(const settings::GenerationSettings& s, const CancelToken& cancel, Observer* observer,
                              const Image* initImage = nullptr);

    // Frees the loaded model, its cached conditioning and what the allocators keep (host heap, CUDA cache).
    // The next generate loads again.
    void releaseModel();
    // Prompt encodings actually computed (cache misses) since the engine was made.
    int64_t textEncoderRuns() const;
    // Folders where <lora:name> and GenerationSettings::loras names are looked up (docs/lora.md).
    void setLoraFolders(std::vector<std::string> folders);
    // Bytes the applied LoRAs hold beside the model (merged originals or side paths).
    int64_t loraBytes() const;

private:
    GenerationResult run(const settings::GenerationSettings& s, const CancelToken& cancel, Observer* observer,
                         const Image* initImage);
    struct Loaded;
    std::unique_ptr<Loaded> m_loaded;
    Log m_log;
    int64_t m_textEncoderRuns = 0;
    std::vector<std::string> m_loraFolders;
};

// The model name the app opens when the user has not chosen one.
inline constexpr const char* kDemoModel = "demo:tiny-sd1";

} // namespace dd::pipeline
