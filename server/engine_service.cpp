#include "server/engine_service.h"
#include "server/saved_images.h"

#include "core/api/errors.h"
#include "core/pipeline/engine.h"
#include "core/queue/job_queue.h"
#include "imaging/export.h"
#include "imaging/run_images.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

namespace dd::server {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr size_t kResultsKept = 256;  // older results are read back from their files

bool finished(queue::JobState s) {
    return s == queue::JobState::Done || s == queue::JobState::Failed || s == queue::JobState::Cancelled ||
           s == queue::JobState::Interrupted;
}

std::string timestampNow() {
    const auto now = imaging::utcNow();  // "2025-01-31", "120000"
    std::string d = now.date;
    d.erase(std::remove(d.begin(), d.end(), '-'), d.end());
    return d + now.time;
}

// A job finished by an earlier process: its images and their texts, read back from the saved files.
ServiceResult resultFromFiles(const queue::Job& job) {
    ServiceResult r;
    r.id = job.id;
    r.error = job.state == queue::JobState::Failed ? job.error : "";
    r.interrupted = job.state == queue::JobState::Cancelled || job.state == queue::JobState::Interrupted;
    if (job.spec.contains("settings")) r.settings = job.spec["settings"].get<api::GenerationSettings>();
    addSavedImages(job.files, r);
    return r;
}

} // namespace

struct EngineService::State : api::Observer {
    EngineServiceOptions options;
    mutable std::mutex lock;
    std::condition_variable changed;
    queue::JobQueue jobs;
    std::map<std::string, ServiceResult> results;
    std::deque<std::string> resultOrder;
    ServiceProgress now;
    std::chrono::steady_clock::time_point started;
    api::CancelToken cancel;
    bool interruptAsked = false, skipAsked = false, stopping = false;
    pipeline::Engine engine;  // the worker's alone
    std::thread worker;

    explicit State(EngineServiceOptions o)
        : options(std::move(o)), jobs((fs::path(options.outFolder) / ".diffusiondesk-api-queue.jsonl").string()) {
        engine.setLoraFolders(options.loraFolders);
        engine.setUpscalerFolders(options.upscalerFolders);
        engine.setEmbeddingFolders(options.embeddingFolders);
    }

    bool wantsPreview(int step, int total) override { return step % 4 == 0 || step == total; }
    void onStep(int step, int total, const api::Image& preview) override {
        std::lock_guard<std::mutex> g(lock);
        now.step = step, now.steps = total;
        if (!preview.rgb.empty()) now.preview = preview;
    }

    void keep(ServiceResult r) {
        resultOrder.push_back(r.id);
        results[r.id] = std::move(r);
        while (resultOrder.size() > kResultsKept) results.erase(resultOrder.front()), resultOrder.pop_front();
    }

    // One iteration: a batch through the engine, each image saved with its sidecar.
    void generateOnce(const api::GenerationSettings& s, ServiceResult& r) {
        const auto start = std::chrono::steady_clock::now();
        const auto result = engine.generate(s, cancel, this, imaging::readRunImages(s));
        const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::vector<std::string> saved;
        for (size_t k = 0; k < result.images.size(); ++k) {
            const auto sc = imaging::sidecarFor(result, int(k), wall, 0, DD_VERSION);
            imaging::ExportRequest req;
            req.folder = options.outFolder;
            const auto file = imaging::exportImage(req, result.images[k], sc, result.modelName);
            const api::ImageSeeds seeds = api::imageSeeds(s, int64_t(k));
            r.images.push_back({file.image, imaging::metadataFor(sc, result.modelName).parameters, seeds.seed, seeds.variationSeed});
            saved.push_back(file.image);
        }
        r.settings = result.settings, r.modelName = result.modelName, r.modelHash = result.modelHash;
        r.warnings.insert(r.warnings.end(), result.warnings.begin(), result.warnings.end());
        if (options.addToLibrary) options.addToLibrary(saved);
    }

    ServiceResult execute(const std::string& id, const json& spec) {
        ServiceResult r;
        r.id = id;
        r.jobTimestamp = timestampNow();
        try {
            const auto s = spec.at("settings").get<api::GenerationSettings>();
            r.settings = s;
            const int iterations = spec.value("iterations", 1);
            for (int it = 0; it < iterations; ++it) {
                {
                    std::lock_guard<std::mutex> g(lock);
                    if (interruptAsked) break;
                    skipAsked = false;
                    cancel.reset();
                    now.iteration = it, now.step = 0, now.skipped = false;
                }
                const api::GenerationSettings one = api::fromImage(s, int64_t(it) * s.batchSize);
                try {
                    generateOnce(one, r);
                } catch (const api::Cancelled&) {
                    std::lock_guard<std::mutex> g(lock);
                    if (!skipAsked || interruptAsked) {
                        r.interrupted = true;
                        break;
                    }
                }
            }
        } catch (const std::exception& e) {
            r.error = api::failureMessage(e);
        }
        return r;
    }

    void loop() {
        std::unique_lock<std::mutex> l(lock);
        for (;;) {
            changed.wait(l, [&] { return stopping || jobs.next(); });
            if (stopping) return;
            const queue::Job job = *jobs.next();
            jobs.start(job.id);
            cancel.reset();
            interruptAsked = skipAsked = false;
            now = ServiceProgress{};
            now.busy = true, now.jobId = job.id, now.iterations = job.spec.value("iterations", 1);
            now.jobTimestamp = timestampNow();
            started = std::chrono::steady_clock::now();
            l.unlock();
            ServiceResult r = execute(job.id, job.spec);
            l.lock();
            std::vector<std::string> files;
            for (const auto& i : r.images) files.push_back(i.file);
            if (!r.error.empty()) jobs.fail(job.id, r.error);
            else if (r.interrupted && files.empty()) jobs.cancel(job.id);
            else jobs.done(job.id, files);
            keep(std::move(r));
            now = ServiceProgress{};
            changed.notify_all();
        }
    }
};

EngineService::EngineService(EngineServiceOptions options) : m(std::make_unique<State>(std::move(options))) {
    m->worker = std::thread([this] { m->loop(); });
}

EngineService::~EngineService() {
    {
        std::lock_guard<std::mutex> g(m->lock);
        m->stopping = true;
        m->interruptAsked = true;
        m->cancel.cancel();
    }
    m->changed.notify_all();
    m->worker.join();
}

ServiceResult EngineService::run(const ServiceJob& job) {
    std::unique_lock<std::mutex> l(m->lock);
    std::string id = job.id;
    const queue::Job* known = id.empty() ? nullptr : m->jobs.find(id);
    if (!known) {
        id = m->jobs.enqueue(id, json{{"settings", job.settings}, {"iterations", job.iterations}}, "");
    } else if (known->state == queue::JobState::Interrupted || known->state == queue::JobState::Failed ||
               known->state == queue::JobState::Cancelled) {
        m->results.erase(id);  // asked again: run it again
        m->jobs.retry(id);
    }
    m->changed.notify_all();
    m->changed.wait(l, [&] {
        const queue::Job* j = m->jobs.find(id);
        return m->stopping || !j || finished(j->state);
    });
    if (const auto r = m->results.find(id); r != m->results.end()) return r->second;
    if (const queue::Job* j = m->jobs.find(id)) return resultFromFiles(*j);
    ServiceResult gone;
    gone.id = id;
    gone.error = "the server stopped before the job ran";
    return gone;
}

ServiceProgress EngineService::progress() const {
    std::lock_guard<std::mutex> g(m->lock);
    ServiceProgress p = m->now;
    if (p.busy) p.elapsedSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - m->started).count();
    for (const auto& j : m->jobs.jobs()) p.queued += j.state == queue::JobState::Pending;
    return p;
}

void EngineService::interrupt() {
    std::lock_guard<std::mutex> g(m->lock);
    if (!m->now.busy) return;
    m->interruptAsked = m->now.interrupted = true;
    m->cancel.cancel();
}

void EngineService::skip() {
    std::lock_guard<std::mutex> g(m->lock);
    if (!m->now.busy) return;
    m->skipAsked = m->now.skipped = true;
    m->cancel.cancel();
}

std::vector<std::string> EngineService::queueWarnings() const {
    std::lock_guard<std::mutex> g(m->lock);
    return m->jobs.warnings();
}

} // namespace dd::server
