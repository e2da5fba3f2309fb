#include "server/api_server.h"

#include "core/api/generation_settings.h"
#include "core/pipeline/model_search.h"
#include "core/queue/durable_file.h"
#include "core/settings/image_metadata.h"
#include "core/text/embedding_library.h"
#include "imaging/control_preprocess.h"
#include "imaging/png.h"
#include "server/a1111_request.h"
#include "server/a1111_response.h"
#include "server/base64.h"

#include <httplib.h>
#include <nlohmann/json.hpp>
#include <openssl/evp.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

namespace dd::server {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<std::pair<std::string, std::string>> parseCredentials(const std::string& text) {
    std::vector<std::pair<std::string, std::string>> out;
    std::stringstream list(text);
    for (std::string item; std::getline(list, item, ',');) {
        const auto colon = item.find(':');
        if (colon == std::string::npos || colon == 0)
            throw std::invalid_argument("--api-auth expects USER:PASS[,USER:PASS] (got '" + item + "')");
        out.emplace_back(item.substr(0, colon), item.substr(colon + 1));
    }
    return out;
}

namespace {

class BadJson : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

void answer(httplib::Response& res, const json& body, int status = 200) {
    res.status = status;
    res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

json bodyOf(const httplib::Request& req) {
    json body = json::parse(req.body, nullptr, false);
    if (body.is_discarded()) throw BadJson("the request body is not JSON");
    return body;
}

std::string sha256Hex(std::string_view bytes) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr);
    static const char* hex = "0123456789abcdef";
    std::string out;
    for (unsigned i = 0; i < length; ++i) out += hex[digest[i] >> 4], out += hex[digest[i] & 15];
    return out;
}

std::string readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    return bytes.str();
}

// /proc/meminfo's "Key: N kB" in bytes (0 when absent).
int64_t meminfo(const std::string& key) {
    std::ifstream in("/proc/meminfo");
    for (std::string line; std::getline(in, line);)
        if (line.rfind(key + ":", 0) == 0) return std::stoll(line.substr(key.size() + 1)) * 1024;
    return 0;
}

} // namespace

struct ApiServer::Impl {
    ServerOptions o;
    GenerationService& service;
    ModelCatalog& catalog;
    httplib::Server http;
    std::mutex optionsLock;
    json options;
    int port = 0;

    Impl(ServerOptions options_, GenerationService& s, ModelCatalog& c) : o(std::move(options_)), service(s), catalog(c) {
        options = {{"sd_model_checkpoint", o.startModel}, {"CLIP_stop_at_last_layers", 1}, {"samples_format", "png"},
                   {"sd_vae", "Automatic"}};
        // Every request waiting for its image holds a thread: enough that progress and interrupt still get one.
        http.new_task_queue = [] { return new httplib::ThreadPool(64); };
        http.set_payload_max_length(o.maxBodyBytes);
        http.set_read_timeout(30);
        http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) { return authorize(req, res); });
        http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
            std::string message = "unknown error";
            try {
                std::rethrow_exception(ep);
            } catch (const std::exception& e) {
                message = e.what();
            } catch (...) {
            }
            answer(res, failureBody("RuntimeError", message), 500);
        });
        routes();
    }

    httplib::Server::HandlerResponse authorize(const httplib::Request& req, httplib::Response& res) {
        if (o.credentials.empty()) return httplib::Server::HandlerResponse::Unhandled;
        const std::string header = req.get_header_value("Authorization");
        if (header.rfind("Basic ", 0) == 0) {
            try {
                const std::string pair = fromBase64(header.substr(6));
                const auto colon = pair.find(':');
                for (const auto& [user, pass] : o.credentials)
                    if (colon != std::string::npos && pair.substr(0, colon) == user && pair.substr(colon + 1) == pass)
                        return httplib::Server::HandlerResponse::Unhandled;
            } catch (const std::invalid_argument&) {
            }
        }
        res.set_header("WWW-Authenticate", "Basic");
        answer(res, {{"detail", "Incorrect username or password"}}, 401);
        return httplib::Server::HandlerResponse::Handled;
    }

    // Runs a handler; a bad request is answered 422 in FastAPI's shape, naming the field.
    template <class F>
    httplib::Server::Handler guarded(F f) {
        return [f](const httplib::Request& req, httplib::Response& res) {
            try {
                f(req, res);
            } catch (const BadJson& e) {
                answer(res, validationError("0", e.what(), "value_error.jsondecode"), 422);
            } catch (const FieldError& e) {
                answer(res, validationError(e.field(), e.message(), e.type()), 422);
            }
        };
    }

    // A request's image kept under inputFolder by its content's hash (the same image twice is one file), resized
    // to the run's size as A1111's resize_mode does when it differs (-1: as it is).
    std::string keepInput(const std::string& base64, const std::string& field, int width, int height, int resizeMode) {
        std::string bytes;
        try {
            bytes = fromBase64(base64);
        } catch (const std::invalid_argument&) {
            throw FieldError(field, "not a base64-encoded image");
        }
        const auto format = settings::detectImageFormat(bytes);
        if (format == settings::ImageFormat::Unknown) throw FieldError(field, "not a PNG, JPEG or WebP image");
        const std::string hash = sha256Hex(bytes);
        fs::create_directories(o.inputFolder);
        const std::string path = (fs::path(o.inputFolder) / (hash + "." + settings::imageFormatName(format))).string();
        if (!fs::exists(path)) {
            try {
                queue::writeFileDurably(path, bytes);
            } catch (const queue::FileExistsError&) {  // another request with the same image wrote it first
            }
        }
        api::Image image;
        try {
            image = imaging::readImage(path);
        } catch (const std::exception&) {
            throw FieldError(field, "the image cannot be decoded");
        }
        if (resizeMode < 0 || (image.width == width && image.height == height)) return path;
        static const char* modes[] = {"Just Resize", "Crop and Resize", "Resize and Fill", "Just Resize"};
        const std::string resized = (fs::path(o.inputFolder) / (hash + "-" + std::to_string(width) + "x" + std::to_string(height) +
                                                                "-" + std::to_string(resizeMode) + ".png")).string();
        if (!fs::exists(resized)) imaging::writePng(resized, imaging::resizeForControl(image, width, height, modes[resizeMode]));
        return resized;
    }

    std::string modelPath(const std::string& title, const std::string& field) {
        const auto model = catalog.find(title);
        if (!model) throw FieldError(field, "no model '" + title + "' among the server's models (GET /sdapi/v1/sd-models)");
        return model->path;
    }

    void generate(const httplib::Request& req, httplib::Response& res, bool img2img) {
        const json body = bodyOf(req);
        ApiRun run = img2img ? readImg2Img(body) : readTxt2Img(body);
        auto& s = run.settings;
        {
            std::lock_guard<std::mutex> g(optionsLock);
            s.model = modelPath(run.checkpoint.empty() ? options["sd_model_checkpoint"].get<std::string>() : run.checkpoint,
                                run.checkpoint.empty() ? "sd_model_checkpoint" : "override_settings.sd_model_checkpoint");
            s.clipSkip = run.clipSkip ? run.clipSkip : options["CLIP_stop_at_last_layers"].get<int>();
        }
        if (o.threads > 0) s.plan.threads = o.threads;
        if (!run.refinerCheckpoint.empty()) s.refiner.model = modelPath(run.refinerCheckpoint, "refiner_checkpoint");
        if (s.hires.enabled && api::isUpscalerNetwork(s.hires.upscaler)) {  // refused now, not after waiting in the queue
            try {
                pipeline::findUpscalerFile(s.hires.upscaler, o.upscalerFolders);
            } catch (const std::invalid_argument& e) {
                throw FieldError("hr_upscaler", e.what());
            }
        }
        if (img2img) {
            // "Only masked" works on the picture as it came and answers at its size, as A1111 does.
            const bool asItCame = s.inpaint.onlyMasked && !run.mask.empty();
            s.initImage = keepInput(run.initImages.front(), "init_images", s.width, s.height, asItCame ? -1 : run.resizeMode);
            if (!run.mask.empty()) s.inpaint.mask = keepInput(run.mask, "mask", 0, 0, -1);
        }
        const ServiceResult result = service.run({run.taskId, s, run.iterations});
        if (!result.error.empty()) return answer(res, failureBody("RuntimeError", result.error), 500);
        json images = json::array();
        if (run.sendImages)
            for (const auto& image : result.images) images.push_back(toBase64(readFile(image.file)));
        json parameters = body;
        if (img2img && !body.value("include_init_images", false)) parameters["init_images"] = nullptr, parameters["mask"] = nullptr;
        answer(res, {{"images", images}, {"parameters", parameters}, {"info", runInfo(run, result, o.version).dump(-1, ' ', false, json::error_handler_t::replace)}});
    }

    json progress(const httplib::Request& req) {
        const ServiceProgress p = service.progress();
        const double fraction = p.busy ? (p.iteration + (p.steps ? double(p.step) / p.steps : 0)) / std::max(1, p.iterations) : 0;
        json image = nullptr;
        if (p.busy && !p.preview.rgb.empty() && req.get_param_value("skip_current_image") != "true")
            image = toBase64(imaging::encodePng(p.preview, {}));
        return {{"progress", fraction},
                {"eta_relative", fraction > 0.01 ? p.elapsedSeconds / fraction - p.elapsedSeconds : 0.0},
                {"state", {{"skipped", p.skipped}, {"interrupted", p.interrupted}, {"stopping_generation", false},
                           {"job", p.busy ? json(p.jobId) : json("")}, {"job_count", p.busy ? p.iterations : 0},
                           {"job_timestamp", p.jobTimestamp}, {"job_no", p.iteration}, {"sampling_step", p.step},
                           {"sampling_steps", p.steps}}},
                {"current_image", image},
                {"textinfo", p.queued ? json(std::to_string(p.queued) + " queued") : json(nullptr)},
                {"current_task", p.busy ? json(p.jobId) : json(nullptr)}};
    }

    void setOptions(const json& body) {
        if (!body.is_object()) throw FieldError("__root__", "the options must be a JSON object", "type_error.dict");
        std::lock_guard<std::mutex> g(optionsLock);
        json next = options;
        for (const auto& [key, value] : body.items()) {
            if (key == "sd_model_checkpoint") {
                if (!value.is_string()) throw FieldError(key, "str type expected", "type_error.str");
                const auto model = catalog.find(value.get<std::string>());
                if (!model) throw FieldError(key, "no model '" + value.get<std::string>() + "' among the server's models");
                next[key] = model->title;
            } else if (key == "CLIP_stop_at_last_layers") {
                if (!value.is_number_integer() || value.get<int>() < 1 || value.get<int>() > 12)
                    throw FieldError(key, "must be a whole number from 1 to 12", "value_error");
                next[key] = value;
            } else {
                next[key] = value;  // kept and read back, as A1111 does; only the two above change a run here
            }
        }
        options = std::move(next);
    }

    json modelList() {
        json out = json::array();
        for (const auto& m : catalog.models())
            out.push_back({{"title", m.title}, {"model_name", m.name}, {"hash", nullptr}, {"sha256", nullptr},
                           {"filename", m.path}, {"config", nullptr}});
        return out;
    }

    // A1111's textual-inversion list. Which of them fit the model is decided per run, so every readable file is
    // "loaded" (A1111's SDXL shape: clip_l's and clip_g's widths added); the refused ones are "skipped".
    json embeddingList() const {
        const auto lib = text::EmbeddingLibrary::scan(pipeline::embeddingFolders(o.embeddingFolders, o.loraFolders));
        const auto entry = [](int64_t shape, int vectors) {
            return json{{"step", nullptr}, {"sd_checkpoint", nullptr}, {"sd_checkpoint_name", nullptr}, {"shape", shape}, {"vectors", vectors}};
        };
        json loaded = json::object(), skipped = json::object();
        for (const auto& f : lib.files) loaded[f.name] = entry(f.isXlPair() ? f.widthL + f.widthG : f.width, f.vectors);
        for (const auto& p : lib.problems) skipped[p.name] = entry(0, 0);
        return {{"loaded", loaded}, {"skipped", skipped}};
    }

    json fileList(const std::vector<std::string>& files, bool lora) {
        json out = json::array();
        for (const auto& f : files) {
            const std::string name = fs::path(f).stem().string();
            if (lora) out.push_back({{"name", name}, {"alias", name}, {"path", f}, {"metadata", json::object()}});
            else out.push_back({{"name", name}, {"model_name", name}, {"model_path", f}, {"model_url", nullptr}, {"scale", nullptr}});
        }
        return out;
    }

    void routes();
};

void ApiServer::Impl::routes() {
    const std::string v1 = "/sdapi/v1/";
    const auto get = [&](const std::string& path, std::function<json(const httplib::Request&)> f) {
        http.Get(v1 + path, guarded([f](const httplib::Request& req, httplib::Response& res) { answer(res, f(req)); }));
    };
    const auto post = [&](const std::string& path, std::function<json(const httplib::Request&)> f) {
        http.Post(v1 + path, guarded([f](const httplib::Request& req, httplib::Response& res) { answer(res, f(req)); }));
    };
    http.Post(v1 + "txt2img", guarded([this](const httplib::Request& q, httplib::Response& r) { generate(q, r, false); }));
    http.Post(v1 + "img2img", guarded([this](const httplib::Request& q, httplib::Response& r) { generate(q, r, true); }));
    get("progress", [this](const httplib::Request& q) { return progress(q); });
    post("interrupt", [this](const httplib::Request&) { service.interrupt(); return json::object(); });
    post("skip", [this](const httplib::Request&) { service.skip(); return json::object(); });
    get("options", [this](const httplib::Request&) { std::lock_guard<std::mutex> g(optionsLock); return options; });
    post("options", [this](const httplib::Request& q) { setOptions(bodyOf(q)); return json(nullptr); });
    get("sd-models", [this](const httplib::Request&) { return modelList(); });
    post("refresh-checkpoints", [this](const httplib::Request&) { catalog.refresh(); return json(nullptr); });
    get("samplers", [](const httplib::Request&) { return samplerList(); });
    get("schedulers", [](const httplib::Request&) { return schedulerList(); });
    get("loras", [this](const httplib::Request&) { return fileList(pipeline::loraFiles(o.loraFolders), true); });
    post("refresh-loras", [](const httplib::Request&) { return json(nullptr); });
    get("embeddings", [this](const httplib::Request&) { return embeddingList(); });
    post("refresh-embeddings", [](const httplib::Request&) { return json(nullptr); });  // the folders are read per run
    get("upscalers", [this](const httplib::Request&) {
        json out = json::array();  // A1111 lists its resizers first
        for (const auto& name : api::resizeUpscalers())
            out.push_back({{"name", name}, {"model_name", nullptr}, {"model_path", nullptr}, {"model_url", nullptr}, {"scale", 4}});
        for (auto& network : fileList(pipeline::upscalerFiles(o.upscalerFolders), false)) out.push_back(std::move(network));
        return out;
    });
    get("latent-upscale-modes", [](const httplib::Request&) {
        json out = json::array();
        for (const auto& name : api::hiresUpscalers()) out.push_back({{"name", name}});
        return out;
    });
    get("embeddings", [](const httplib::Request&) { return json{{"loaded", json::object()}, {"skipped", json::object()}}; });
    get("memory", [](const httplib::Request&) {
        const int64_t total = meminfo("MemTotal"), free = meminfo("MemAvailable");
        return json{{"ram", {{"free", free}, {"used", total - free}, {"total", total}}}, {"cuda", {{"error", "no CUDA memory is reported"}}}};
    });
    get("scripts", [](const httplib::Request&) { return json{{"txt2img", json::array()}, {"img2img", json::array()}}; });
    for (const char* empty : {"sd-vae", "prompt-styles", "face-restorers", "hypernetworks", "realesrgan-models"})
        get(empty, [](const httplib::Request&) { return json::array(); });
    get("cmd-flags", [this](const httplib::Request&) { return json{{"api", true}, {"listen", o.host != "127.0.0.1"}, {"port", port}}; });
    post("png-info", [](const httplib::Request& q) {
        const json body = bodyOf(q);
        if (!body.is_object() || !body.contains("image") || !body["image"].is_string())
            throw FieldError("image", "field required", "value_error.missing");
        std::string bytes;
        try {
            bytes = fromBase64(body["image"].get<std::string>());
        } catch (const std::invalid_argument&) {
            throw FieldError("image", "not a base64-encoded image");
        }
        try {
            return pngInfo(settings::readImageText(bytes, "image").text);
        } catch (const std::exception& e) {
            throw FieldError("image", e.what());
        }
    });
}

ApiServer::ApiServer(ServerOptions options, GenerationService& service, ModelCatalog& catalog)
    : m(std::make_unique<Impl>(std::move(options), service, catalog)) {}

ApiServer::~ApiServer() { stop(); }

int ApiServer::bind() {
    const bool ok = m->o.port == 0 ? (m->port = m->http.bind_to_any_port(m->o.host)) > 0
                                   : m->http.bind_to_port(m->o.host, m->port = m->o.port);
    if (!ok) throw std::runtime_error("cannot listen on " + m->o.host + ":" + std::to_string(m->o.port) + " (in use, or not an address of this machine)");
    return m->port;
}

void ApiServer::serve() { m->http.listen_after_bind(); }

void ApiServer::stop() { m->http.stop(); }

} // namespace dd::server
