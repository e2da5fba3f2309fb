#pragma once
// The API's runs on an engine of its own (diffusiondesk-cli serve): one worker thread, a durable queue in the
// output folder (core/queue/job_queue.h), every image saved there with its sidecar. A request whose client went
// away still finishes and is saved; jobs a previous process left queued run when it starts; one it left running
// is "interrupted" and runs again only when its client asks again with the same force_task_id.
#include "server/generation_service.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dd::server {

struct EngineServiceOptions {
    std::string outFolder;
    std::vector<std::string> loraFolders, upscalerFolders, embeddingFolders;
    std::function<void(const std::vector<std::string>&)> addToLibrary;  // called with each job's saved images
};

class EngineService : public GenerationService {
public:
    // Throws queue::FileWriteError when the queue's journal cannot be opened.
    explicit EngineService(EngineServiceOptions options);
    ~EngineService() override;  // waits for the running job's current step, then stops

    ServiceResult run(const ServiceJob& job) override;
    ServiceProgress progress() const override;
    void interrupt() override;
    void skip() override;

    std::vector<std::string> queueWarnings() const;  // lines of the journal that could not be read

private:
    struct State;
    std::unique_ptr<State> m;
};

} // namespace dd::server
