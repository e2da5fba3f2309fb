// diffusiondesk-cli serve: AUTOMATIC1111's web API on this machine (docs/api.md), so that A1111 clients (the
// webuiapi package, Krita and Photoshop plugins) drive DiffusionDesk. Jobs wait in a durable queue in --out; every
// image is saved there with its sidecar and added to the library, also when its client has gone.
#include "app/cli_commands.h"
#include "app/cli_library.h"

#include "core/pipeline/engine.h"
#include "server/api_server.h"
#include "server/engine_service.h"

#include <csignal>
#include <filesystem>
#include <iostream>
#include <thread>

namespace dd::cli {
namespace {

namespace fs = std::filesystem;

class Serve : public Command {
public:
    OptionTable options() override;
    int run() override;

private:
    server::ServerOptions o;
    std::string out = "outputs", model, auth;
    std::vector<std::string> modelFolders;
    bool listen = false, library = true;
};

OptionTable Serve::options() {
    auto text = [](std::string& field) { return [&field](const std::string& v) { field = v; }; };
    auto add = [](std::vector<std::string>& list) { return [&list](const std::string& v) { list.push_back(v); }; };
    return OptionTable("serve", "[--port N] [--listen] [--api-auth USER:PASS] [options]",
                       "AUTOMATIC1111's web API (/sdapi/v1/txt2img, img2img, progress, options...) for its clients.\n"
                       "Binds 127.0.0.1 unless --listen; stop it with Ctrl+C (docs/api.md).")
        .value("--port", "N", "the port (7860, A1111's; 0: any free one, printed at start)",
               [this](const std::string& v) { o.port = toInt("--port", v); })
        .flag("--listen", "answer other machines too (binds 0.0.0.0)", [this] { listen = true; })
        .value("--api-auth", "USER:PASS[,USER:PASS]", "require HTTP basic authentication, as A1111's flag", text(auth))
        .value("--out", "DIR", "where images, sidecars, the queue and requests' input images are kept (outputs)",
               text(out), Complete::Folder)
        .value("--model", "PATH", "the model runs use until a client chooses another (default: the built-in one)",
               text(model), Complete::File)
        .value("--models", "DIR", "where the models clients may choose are (repeatable)", add(modelFolders), Complete::Folder)
        .value("--lora-dir", "DIR", "where LoRAs are found by name (repeatable; also DD_LORA_PATH)", add(o.loraFolders),
               Complete::Folder)
        .value("--upscaler-dir", "DIR", "where hires upscaler networks are found (repeatable; also DD_UPSCALER_PATH)",
               add(o.upscalerFolders), Complete::Folder)
        .value("--embeddings-dir", "DIR", "where textual-inversion embeddings are found (repeatable; also DD_EMBEDDINGS_PATH)",
               add(o.embeddingFolders), Complete::Folder)
        .value("--threads", "N", "CPU threads of every run (0, the default: they follow the load; docs/cli.md)",
               [this](const std::string& v) { o.threads = toInt("--threads", v); })
        .value("--max-body", "MB", "the largest request accepted (64)",
               [this](const std::string& v) { o.maxBodyBytes = size_t(toPositiveInt("--max-body", v)) << 20; })
        .flag("--no-library", "do not add the images to the window's image library", [this] { library = false; });
}

int Serve::run() {
    if (o.port < 0 || o.port > 65535) throw std::invalid_argument("--port must be between 0 and 65535");
    if (!auth.empty()) o.credentials = server::parseCredentials(auth);
    o.host = listen ? "0.0.0.0" : "127.0.0.1";
    fs::create_directories(out);
    o.inputFolder = (fs::path(out) / "api-inputs").string();
    o.version = versionLine();

    if (!model.empty() && model != pipeline::kDemoModel && !fs::exists(model))
        throw std::invalid_argument("--model " + model + ": no such file or folder");
    const auto fixed = server::startModels(model);
    if (fixed.empty()) throw std::invalid_argument("--model is required (this install has no built-in model)");
    o.startModel = fixed.front().title;
    server::ModelCatalog catalog(fixed, modelFolders);

    // Ctrl+C and SIGTERM are taken by sigwait below: blocked here, before any thread starts, so every thread
    // inherits the mask and none is interrupted inside the engine.
    sigset_t stopSignals;
    sigemptyset(&stopSignals);
    sigaddset(&stopSignals, SIGINT);
    sigaddset(&stopSignals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);

    server::EngineServiceOptions so{out, o.loraFolders, o.upscalerFolders, o.embeddingFolders, {}};
    if (library) so.addToLibrary = addToLibrary;
    server::EngineService service(so);
    for (const auto& w : service.queueWarnings()) std::cerr << "note: " << w << "\n";
    server::ApiServer api(o, service, catalog);
    const int port = api.bind();
    std::cout << "DiffusionDesk serves the A1111 API on http://" << o.host << ":" << port << "/sdapi/v1 (model: " << o.startModel
              << ", images in " << out << ")" << std::endl;
    std::thread http([&] { api.serve(); });
    int signal = 0;
    sigwait(&stopSignals, &signal);
    std::cerr << "serve: stopping (the running job's images are kept; queued jobs run at the next start)\n";
    api.stop();
    http.join();
    return 0;
}

} // namespace

std::unique_ptr<Command> makeServeCommand() { return std::make_unique<Serve>(); }

} // namespace dd::cli
