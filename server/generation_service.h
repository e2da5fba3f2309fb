#pragma once
// What the API server asks of whoever runs the engine: the CLI's `serve` (server/engine_service.h: its own
// engine and durable queue) or the window (its queue, so API jobs appear there and in its library). Every call
// is thread-safe: the HTTP threads call them side by side.
#include "core/api/generation_settings.h"
#include "core/api/image.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dd::server {

struct ServiceJob {
    std::string id;                     // "" = a new job; a known id answers that job (waiting if it still runs)
    api::GenerationSettings settings;   // the model resolved to a path; the seed fixed
    int iterations = 1;                 // A1111's n_iter: batches one after the other, seeds continuing
};

struct ServiceImage {
    std::string file;      // saved in the output folder, with its sidecar; in the library
    std::string infotext;  // its A1111 parameters text
    int64_t seed = 0;
    int64_t variationSeed = 0;
};

struct ServiceResult {
    std::string id;
    std::vector<ServiceImage> images;  // the finished ones (also those made before an interrupt)
    api::GenerationSettings settings;  // as run: the model as resolved, hashes filled in
    std::string modelName, modelHash;
    bool interrupted = false;
    std::string error;                 // "" = done; else the failure in api::failureMessage's words
    std::vector<std::string> warnings; // what the engine changed to make the run work
    std::string jobTimestamp;          // "20250131120000", when it started
};

struct ServiceProgress {
    bool busy = false;
    std::string jobId, jobTimestamp;
    int step = 0, steps = 0;            // of the current iteration
    int iteration = 0, iterations = 0;  // 0-based index, count
    double elapsedSeconds = 0;          // since the job started
    int queued = 0;                     // jobs waiting behind it
    bool interrupted = false, skipped = false;
    api::Image preview;                 // the latest live preview (empty before the first)
};

class GenerationService {
public:
    virtual ~GenerationService() = default;
    // Queues the job and blocks until it finished, failed or was interrupted. Never throws for a failed run.
    virtual ServiceResult run(const ServiceJob& job) = 0;
    virtual ServiceProgress progress() const = 0;
    virtual void interrupt() = 0;  // stops the running job (its finished images are kept)
    virtual void skip() = 0;       // stops the running job's current iteration; the next one starts
};

} // namespace dd::server
