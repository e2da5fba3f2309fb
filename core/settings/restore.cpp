#include "core/settings/restore.h"

#include "core/settings/a1111_parameters.h"
#include "core/settings/generation_info_detail.h"
#include "core/settings/image_metadata.h"
#include "core/settings/stealth_png.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace dd::settings {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool looksLikeComfyGraph(const json& j) {
    for (const auto& [id, node] : j.items())
        if (node.is_object() && node.contains("class_type")) return true;
    return false;
}

// A GenerationSettings JSON object (a job line, a saved settings file): every key it names.
GenerationInfo fromSettingsJson(const json& j, std::string_view name) {
    GenerationInfo info;
    info.format = "diffusiondesk";
    const json known = [] {  // every key to_json can write: the optional parts are written only when used
        api::GenerationSettings all;
        all.loras.emplace_back();
        all.embeddings.emplace_back();
        all.rng = "NV";
        all.ensd = 1;
        all.loraMode = "side";
        all.refiner.model = all.initImageHash = all.inpaint.mask = "x";
        all.controlnets.emplace_back();
        return json(all);
    }();
    for (const auto& [k, v] : j.items()) {
        if (known.contains(k)) info.fields.push_back(k);
        else info.unknown.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump(-1, ' ', false, json::error_handler_t::replace));
    }
    // The sidecar reader holds the range checks and the type messages: reuse it on {"schema", "settings"}.
    const json wrapped = {{"schema", kSidecarSchema}, {"settings", j}};
    try {
        const Sidecar sc = readSidecar(wrapped.dump(-1, ' ', false, json::error_handler_t::replace));
        info.settings = sc.settings;
    } catch (const SidecarError& e) {
        std::string what = e.what();
        if (what.rfind("sidecar: ", 0) == 0) what = what.substr(9);
        throw MetadataError(std::string(name) + ": settings JSON: " + what);
    }
    info.modelName = info.settings.model;  // already a bare name, or "demo:..."
    info.settings.model.clear();
    return info;
}

Restored fromJsonText(std::string_view text, std::string_view name) {
    detail::checkJsonDepth(text, name);
    const json j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw MetadataError(std::string(name) + ": not a JSON object");
    Restored r;
    if (j.contains("schema")) {
        Sidecar sc;
        try {
            sc = readSidecar(text);
        } catch (const SidecarError& e) {
            throw MetadataError(std::string(name) + ": " + e.what());
        }
        static_cast<GenerationInfo&>(r) = sidecarToInfo(sc);
        r.sidecar = std::move(sc);
        r.source = "sidecar";
    } else if (looksLikeComfyGraph(j)) {
        static_cast<GenerationInfo&>(r) = readComfyUiPrompt(text);
        r.source = "comfyui-json";
    } else if (j.contains("nodes") && j.contains("links")) {
        static_cast<GenerationInfo&>(r) = readComfyUiWorkflow(text);
        r.source = "comfyui-workflow-json";
    } else if (j.contains("generation_mode") || j.contains("positive_prompt") || j.contains("positive_conditioning")) {
        static_cast<GenerationInfo&>(r) = readInvokeAiMetadata(text);
        r.source = "invokeai-json";
    } else if (j.contains("Prompt") || j.contains("guidance_scale") || j.contains("base_model") || j.contains("Base Model")) {
        static_cast<GenerationInfo&>(r) = readFooocusMetadata(text);
        r.source = "fooocus-json";
    } else {
        static_cast<GenerationInfo&>(r) = fromSettingsJson(j, name);
        r.source = "settings-json";
    }
    return r;
}

// Text hidden in the pixels: A1111's parameters, or NovelAI's chunks as a JSON object of strings.
std::optional<GenerationInfo> fromStealthText(std::string_view png) {
    const auto text = readStealthPngInfo(png);
    if (!text) return std::nullopt;
    std::map<std::string, std::string> chunks;
    const bool object = detail::trim(*text).substr(0, 1) == "{";
    if (object) detail::checkJsonDepth(*text, "stealth PNG info");
    const json j = object ? json::parse(*text, nullptr, false) : json();
    if (j.is_object()) {
        for (const auto& [k, v] : j.items()) chunks[k] = v.is_string() ? v.get<std::string>() : v.dump();
    } else {
        chunks["parameters"] = *text;
    }
    auto info = readGenerationInfo(chunks);
    if (info) info->warnings.insert(info->warnings.begin(), "read from the text hidden in the image's pixels (stealth PNG info)");
    return info;
}

} // namespace

Restored restoreFromBytes(std::string_view bytes, std::string_view name) {
    const ImageFormat format = detectImageFormat(bytes);
    Restored r;
    if (format != ImageFormat::Unknown) {
        ImageText t = readImageText(bytes, name);
        std::optional<GenerationInfo> info;
        try {
            info = readGenerationInfo(t.text);
            if (!info && format == ImageFormat::Png) info = fromStealthText(bytes);
        } catch (const MetadataError& e) {
            throw MetadataError(std::string(name) + ": " + e.what());
        }
        if (!info)
            throw MetadataError(std::string(name) + ": no generation settings in this " + imageFormatName(format) +
                                " (no A1111 'parameters', DiffusionDesk, ComfyUI, InvokeAI, NovelAI, SwarmUI, "
                                "Easy Diffusion, Draw Things or Fooocus metadata)");
        static_cast<GenerationInfo&>(r) = std::move(*info);
        r.source = imageFormatName(format);
        if (r.format == "diffusiondesk" && t.text.count(kSidecarPngKey)) {
            try {
                r.sidecar = readSidecar(t.text[kSidecarPngKey]);
            } catch (const MetadataError&) {
            }
        }
        if (r.format == "a1111" && r.version.rfind("Fooocus", 0) == 0) r.format = "fooocus";
        r.warnings.insert(r.warnings.begin(), t.warnings.begin(), t.warnings.end());
    } else {
        try {
            checkUntrustedText(name, bytes);
        } catch (const MetadataError& e) {
            throw MetadataError(std::string(e.what()) + " (not a PNG, JPEG or WebP either)");
        }
        if (detail::trim(bytes).substr(0, 1) == "{") {
            r = fromJsonText(bytes, name);
        } else {
            static_cast<GenerationInfo&>(r) = parseA1111Parameters(bytes);
            r.source = "a1111-text";
            if (r.version.rfind("Fooocus", 0) == 0) r.format = "fooocus";
        }
    }
    // A DiffusionDesk result made outside determinism mode reruns on the thread count it ran on (its plan named
    // none: the count followed the load): how torch splits a sum depends on the count, so this makes the rerun the
    // same picture to the bit on the same machine (docs/cli.md). Determinism mode pins its own count.
    if (r.sidecar && !r.settings.deterministic && r.settings.plan.threads <= 0 && r.sidecar->environment.threads > 0)
        r.settings.plan.threads = r.sidecar->environment.threads;
    // No path from metadata survives (readers already reduce names; this is the one place that guarantees it).
    r.settings.model.clear();
    r.settings.initImage = safeModelName(r.settings.initImage);
    r.settings.inpaint.mask = safeModelName(r.settings.inpaint.mask);
    r.modelName = safeModelName(r.modelName);  // "demo:tiny-sd1" is a bare name too; "demo:../x" is not
    // LoRAs by file name only: they are looked up in the LoRA folders (docs/lora.md); a name that is nothing else
    // ("..", a drive) is dropped.
    std::erase_if(r.settings.loras, [](api::LoraSetting& l) { return (l.name = safeModelName(l.name)).empty(); });
    std::erase_if(r.settings.embeddings, [](api::EmbeddingSetting& e) { return (e.name = safeModelName(e.name)).empty(); });
    // The refiner likewise: a name (and hash) to look up in the model folders.
    if (r.settings.refiner.enabled()) r.settings.refiner.model = safeModelName(r.settings.refiner.model);
    // ControlNets likewise: the model and the control image by file name (docs/controlnet.md).
    std::erase_if(r.settings.controlnets, [](api::ControlNetSetting& c) {
        c.image = safeModelName(c.image);
        return (c.model = safeModelName(c.model)).empty();
    });
    return r;
}

Restored restoreFromFile(const std::string& path) {
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    if (ec) throw MetadataError(path + ": cannot read (" + ec.message() + ")");
    if (size > kMaxRestoreFileBytes)
        throw MetadataError(path + ": " + std::to_string(size) + " bytes is too large to read settings from");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw MetadataError(path + ": cannot open");
    std::string bytes(size, '\0');
    in.read(bytes.data(), std::streamsize(size));
    if (!in) throw MetadataError(path + ": read failed");
    return restoreFromBytes(bytes, path);
}

std::optional<std::string> resolveInsideFolder(const std::string& folder, const std::string& name) {
    const std::string bare = safeModelName(name);
    if (bare.empty() || bare != name) return std::nullopt;
    std::error_code ec;
    const fs::path dir = fs::weakly_canonical(folder, ec);
    if (ec) return std::nullopt;
    const fs::path candidate = fs::weakly_canonical(dir / bare, ec);
    if (ec || candidate.parent_path() != dir || !fs::is_regular_file(candidate, ec)) return std::nullopt;
    return candidate.string();
}

} // namespace dd::settings
