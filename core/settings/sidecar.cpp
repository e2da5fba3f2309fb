#include "core/settings/sidecar.h"

#include "core/api/json_value.h"
#include "core/settings/generation_info_detail.h"

#include <filesystem>
#include <nlohmann/json.hpp>

namespace dd::settings {
namespace {

using nlohmann::ordered_json;

[[noreturn]] void fail(const std::string& message) { throw SidecarError("sidecar: " + message); }

// Reads j[key] into field when present; a wrong type names the field ("timings.decode_s must be a number").
template <typename T>
void get(const nlohmann::json& j, const char* key, T& field, const std::string& path) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) return;
    try {
        api::readJsonInto(*it, field);
    } catch (const nlohmann::json::out_of_range&) {
        fail(path + key + " = " + it->dump().substr(0, 40) + " is out of range");
    } catch (const nlohmann::json::exception&) {
        fail(path + key + " has the wrong type (" + it->type_name() + ")");
    }
}

std::string fileNameOnly(const std::string& path) {
    const auto s = path.find_last_of("/\\");
    return s == std::string::npos ? path : path.substr(s + 1);
}

int schemaVersion(const nlohmann::json& j) {
    const auto it = j.find("schema");
    if (it == j.end()) fail("no \"schema\" field; this is not a DiffusionDesk sidecar");
    if (!it->is_string()) fail("\"schema\" must be a string like \"" + std::string(kSidecarSchema) + "\"");
    const auto schema = it->get<std::string>();
    const std::string prefix = "diffusiondesk.sidecar/";
    if (schema.rfind(prefix, 0) != 0)
        fail("schema is \"" + schema.substr(0, 80) + "\", not \"" + kSidecarSchema + "\"; this is not a DiffusionDesk sidecar");
    const std::string v = schema.substr(prefix.size());
    if (v.empty() || v.size() > 6 || v.find_first_not_of("0123456789") != std::string::npos)
        fail("schema version \"" + v.substr(0, 20) + "\" is not a number");
    return std::stoi(v);
}

ordered_json stagePeak(const api::StagePeak& p) { return {{"host_bytes", p.host}, {"device_bytes", p.device}}; }

void readStagePeak(const nlohmann::json& m, const char* key, api::StagePeak& p) {
    const auto it = m.find(key);
    if (it == m.end() || it->is_null()) return;
    if (!it->is_object()) fail(std::string("memory.") + key + " must be an object");
    const std::string path = std::string("memory.") + key + ".";
    get(*it, "host_bytes", p.host, path);
    get(*it, "device_bytes", p.device, path);
}

// Schema 1 had strings for every environment field and one peak; schema 2 mirrors api::Environment.
void readEnvironmentV1(const nlohmann::json& e, api::Environment& f) {
    std::string dtype, attention, offload, threads, deterministic;
    get(e, "torch_version", f.torchVersion, "environment.");
    get(e, "device", f.device, "environment.");
    get(e, "dtype", dtype, "environment.");
    get(e, "attention_backend", attention, "environment.");
    get(e, "offload_mode", offload, "environment.");
    get(e, "threads", threads, "environment.");
    get(e, "deterministic", deterministic, "environment.");
    f.precision = dtype;
    f.attention = attention;
    f.offload = offload;
    f.threads = threads.size() < 6 && !threads.empty() && threads.find_first_not_of("0123456789") == std::string::npos ? std::stoi(threads) : 0;
    f.deterministic = deterministic == "on" || deterministic == "true";
}

} // namespace

std::string writeSidecar(const Sidecar& s, SidecarParts parts) {
    const bool full = parts == SidecarParts::Full;
    nlohmann::json settings = s.settings;
    // Paths on this machine stay here: a shared image must not reveal "/home/alice/...".
    settings["model"] = fileNameOnly(s.settings.model);
    settings["init_image"] = fileNameOnly(s.settings.initImage);
    if (s.settings.inpaint.enabled()) settings["inpaint"]["mask"] = fileNameOnly(s.settings.inpaint.mask);
    const auto& t = s.timings;
    const auto& e = s.environment;
    ordered_json j;
    j["schema"] = kSidecarSchema;
    j["app_version"] = s.appVersion;
    if (full) j["created_at"] = s.createdAt;
    j["model"] = {{"name", fileNameOnly(s.modelName)}, {"hash", s.modelHash}, {"sha256", s.modelSha256}};
    j["settings"] = ordered_json::parse(settings.dump());
    j["seeds"] = s.seeds;
    j["image_index"] = s.imageIndex;
    if (full) {
        j["timings"] = {{"load_s", t.loadSeconds}, {"encode_s", t.encodeSeconds}, {"steps_s", t.stepSeconds},
                        {"decode_s", t.decodeSeconds}};
        const auto& m = s.memory;
        j["memory"] = {{"load", stagePeak(m.load)}, {"encode", stagePeak(m.encode)}, {"denoise", stagePeak(m.denoise)},
                       {"decode", stagePeak(m.decode)}};
        j["cost"] = {{"price_per_hour", s.cost.pricePerHour}, {"currency", s.cost.currency},
                     {"seconds_per_image", s.cost.secondsPerImage}, {"per_image", s.cost.perImage()}};
    }
    j["environment"] = {{"app_version", e.appVersion}, {"torch_version", e.torchVersion}, {"device", e.device},
                        {"precision", e.precision}, {"attention", e.attention}, {"offload", e.offload},
                        {"threads", e.threads}, {"deterministic", e.deterministic}};
    j["warnings"] = s.warnings;
    return j.dump(2, ' ', false, ordered_json::error_handler_t::replace) + "\n";
}

Sidecar readSidecar(std::string_view text) {
    try {
        checkUntrustedText("sidecar", text);
        detail::checkJsonDepth(text, "sidecar");
    } catch (const MetadataError& e) {
        throw SidecarError(e.what());
    }
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {  // parse errors and out-of-range numbers alike
        fail(std::string("not valid JSON (") + e.what() + ")");
    }
    if (!j.is_object()) fail("the top level must be a JSON object");
    const int version = schemaVersion(j);
    if (version > kSidecarSchemaVersion)
        fail("written by a newer DiffusionDesk (schema " + std::to_string(version) + "); this version reads schema " +
             std::to_string(kSidecarSchemaVersion) + " — update DiffusionDesk to read it");
    if (version < 1) fail("schema version " + std::to_string(version) + " does not exist");

    Sidecar s;
    get(j, "app_version", s.appVersion, "");
    get(j, "created_at", s.createdAt, "");
    if (const auto m = j.find("model"); m != j.end() && !m->is_null()) {
        if (!m->is_object()) fail("model must be an object with name, hash and sha256");
        get(*m, "name", s.modelName, "model.");
        get(*m, "hash", s.modelHash, "model.");
        get(*m, "sha256", s.modelSha256, "model.");
        s.modelName = safeModelName(s.modelName);
    }
    if (const auto st = j.find("settings"); st != j.end()) {
        if (!st->is_object()) fail("settings must be an object");
        try {
            st->get_to(s.settings);
        } catch (const nlohmann::json::out_of_range& e) {  // a whole number past its field's range
            fail("settings: " + api::jsonReason(e));
        } catch (const std::exception& e) {  // nlohmann type errors, unknown enum names in memory_plan
            fail(std::string("settings has a field of the wrong type (") + e.what() + ")");
        }
        s.settings.model = s.settings.model.rfind("demo:", 0) == 0 ? s.settings.model : safeModelName(s.settings.model);
        s.settings.initImage = safeModelName(s.settings.initImage);
        s.settings.inpaint.mask = safeModelName(s.settings.inpaint.mask);
    } else {
        fail("no \"settings\" object");
    }
    get(j, "seeds", s.seeds, "");
    if (const auto it = j.find("image_index"); it != j.end() && it->is_number_float()) fail("image_index must be an integer");
    get(j, "image_index", s.imageIndex, "");
    if (s.imageIndex < 0 || s.imageIndex > 4096) fail("image_index " + std::to_string(s.imageIndex) + " is out of range");
    if (const auto t = j.find("timings"); t != j.end() && t->is_object()) {
        get(*t, "load_s", s.timings.loadSeconds, "timings.");
        get(*t, "encode_s", s.timings.encodeSeconds, "timings.");
        get(*t, "steps_s", s.timings.stepSeconds, "timings.");
        get(*t, "decode_s", s.timings.decodeSeconds, "timings.");
    }
    if (const auto e = j.find("environment"); e != j.end() && e->is_object()) {
        auto& f = s.environment;
        if (version == 1) {
            readEnvironmentV1(*e, f);
        } else {
            if (const auto th = e->find("threads"); th != e->end() && th->is_number_float()) fail("environment.threads must be an integer");
            get(*e, "app_version", f.appVersion, "environment.");
            get(*e, "torch_version", f.torchVersion, "environment.");
            get(*e, "device", f.device, "environment.");
            get(*e, "precision", f.precision, "environment.");
            get(*e, "attention", f.attention, "environment.");
            get(*e, "offload", f.offload, "environment.");
            get(*e, "threads", f.threads, "environment.");
            get(*e, "deterministic", f.deterministic, "environment.");
        }
    }
    if (version == 1) {
        double peak = 0;  // schema 1: one accelerator peak for the whole run, read as the denoise stage's
        get(j, "peak_memory_bytes", peak, "");
        if (peak > 0 && peak < 9.2e18) s.memory.denoise.device = int64_t(peak);
    } else if (const auto m = j.find("memory"); m != j.end() && !m->is_null()) {
        if (!m->is_object()) fail("memory must be an object with load, encode, denoise and decode");
        readStagePeak(*m, "load", s.memory.load);
        readStagePeak(*m, "encode", s.memory.encode);
        readStagePeak(*m, "denoise", s.memory.denoise);
        readStagePeak(*m, "decode", s.memory.decode);
    }
    if (const auto c = j.find("cost"); c != j.end() && c->is_object()) {
        get(*c, "price_per_hour", s.cost.pricePerHour, "cost.");
        get(*c, "currency", s.cost.currency, "cost.");
        get(*c, "seconds_per_image", s.cost.secondsPerImage, "cost.");
    }
    get(j, "warnings", s.warnings, "");
    return s;
}

std::string sidecarPathFor(const std::string& imagePath) {
    return std::filesystem::path(imagePath).replace_extension(".json").string();
}

std::string sourcePathFor(const std::string& imagePath, const std::string& role, const std::string& sourcePath) {
    const std::filesystem::path image(imagePath);
    return (image.parent_path() / (image.stem().string() + "." + role + std::filesystem::path(sourcePath).extension().string())).string();
}

bool isSourceFile(const std::string& path) {
    const std::string stem = std::filesystem::path(path).stem().string();
    return stem.ends_with(".init") || stem.ends_with(".mask");
}

} // namespace dd::settings
