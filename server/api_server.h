#pragma once
// AUTOMATIC1111's web API (/sdapi/v1/...) in front of a GenerationService, so the clients written for it (the
// webuiapi package, Krita and Photoshop plugins, openOutpaint) drive DiffusionDesk. HTTP is cpp-httplib (a
// Debian package, one header and a small library, no event loop to integrate), JSON nlohmann_json; docs/api.md.
//
//   EngineService service({.outFolder = out});
//   ApiServer server({.port = 7860, .inputFolder = out + "/api-inputs"}, service, catalog);
//   server.bind();     // 127.0.0.1 unless host says otherwise
//   server.serve();    // until stop()
#include "server/generation_service.h"
#include "server/model_catalog.h"

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace dd::server {

struct ServerOptions {
    std::string host = "127.0.0.1";  // --listen: 0.0.0.0
    int port = 7860;                  // 0: any free port (bind() says which)
    std::vector<std::pair<std::string, std::string>> credentials;  // --api-auth user:pass[,user:pass]: HTTP basic
    size_t maxBodyBytes = size_t(64) << 20;  // larger requests are answered 413
    std::string inputFolder;          // where the init images and masks of requests are kept (by content hash)
    std::string startModel;           // the title of the model runs use until options change it
    std::vector<std::string> loraFolders, upscalerFolders, embeddingFolders;
    int threads = 0;                  // CPU threads of every run (0: they follow the machine's load)
    std::string version;              // "DiffusionDesk 0.1.0"
};

// "user:pass,user2:pass2" → pairs. Throws std::invalid_argument for an entry without ':'.
std::vector<std::pair<std::string, std::string>> parseCredentials(const std::string& text);

class ApiServer {
public:
    ApiServer(ServerOptions options, GenerationService& service, ModelCatalog& catalog);
    ~ApiServer();
    ApiServer(const ApiServer&) = delete;
    ApiServer& operator=(const ApiServer&) = delete;

    // Returns the port bound. Throws std::runtime_error naming host and port when it cannot bind.
    int bind();
    void serve();  // answers requests until stop()
    void stop();   // from any thread

private:
    struct Impl;
    std::unique_ptr<Impl> m;
};

} // namespace dd::server
