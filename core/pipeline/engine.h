#pragma once
// Engine::generate: settings in, images out. Owns the loaded models between runs (one model at a time).
// Not thread-safe: create and use it on one worker thread (torch objects live there).
#include "core/pipeline/generation.h"

#include <functional>
#include <memory>
#include <string>

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

private:
    GenerationResult run(const settings::GenerationSettings& s, const CancelToken& cancel, Observer* observer,
                         const Image* initImage);
    struct Loaded;
    std::unique_ptr<Loaded> m_loaded;
    Log m_log;
};

// The model name the app opens when the user has not chosen one.
inline constexpr const char* kDemoModel = "demo:tiny-sd1";

} // namespace dd::pipeline
