#include "core/settings/generation_info.h"

#include "core/settings/a1111_parameters.h"
#include "core/settings/generation_info_detail.h"
#include "core/settings/sidecar.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace dd::settings {

bool GenerationInfo::has(std::string_view field) const {
    return std::find(fields.begin(), fields.end(), field) != fields.end();
}

bool isValidUtf8(std::string_view s, std::size_t* firstBad) {
    std::size_t i = 0;
    const std::size_t n = s.size();
    while (i < n) {
        const auto c = static_cast<unsigned char>(s[i]);
        int len = 0;
        uint32_t cp = 0;
        if (c < 0x80) len = 1, cp = c;
        else if (c >= 0xC2 && c <= 0xDF) len = 2, cp = c & 0x1F;
        else if (c >= 0xE0 && c <= 0xEF) len = 3, cp = c & 0x0F;
        else if (c >= 0xF0 && c <= 0xF4) len = 4, cp = c & 0x07;
        bool ok = len > 0 && i + len <= n;
        for (int k = 1; ok && k < len; ++k) {
            const auto cc = static_cast<unsigned char>(s[i + k]);
            ok = (cc & 0xC0) == 0x80;
            cp = (cp << 6) | (cc & 0x3F);
        }
        // Overlong forms, UTF-16 surrogates and code points past U+10FFFF are not UTF-8.
        if (ok && ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF))))
            ok = false;
        if (!ok) {
            if (firstBad) *firstBad = i;
            return false;
        }
        i += len;
    }
    return true;
}

void checkUntrustedText(std::string_view name, std::string_view text) {
    if (text.size() > kMaxMetadataText)
        throw MetadataError(std::string(name) + ": " + std::to_string(text.size()) + " bytes is more than the " +
                            std::to_string(kMaxMetadataText) + "-byte limit for image metadata");
    std::size_t bad = 0;
    if (!isValidUtf8(text, &bad))
        throw MetadataError(std::string(name) + ": not valid UTF-8 (byte " + std::to_string(bad) +
                            "); the file may be damaged or use another encoding");
}

std::string safeModelName(std::string_view raw) {
    std::string_view name = detail::trim(raw);
    if (const auto s = name.find_last_of("/\\"); s != std::string_view::npos) name = detail::trim(name.substr(s + 1));
    if (name.empty() || name.size() > 255 || name.find("..") != std::string_view::npos) return {};
    if (name.size() >= 2 && name[1] == ':' && std::isalpha(static_cast<unsigned char>(name[0]))) return {};  // "C:x"
    if (std::any_of(name.begin(), name.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7F; }))
        return {};
    return std::string(name);
}

namespace detail {

std::string_view trim(std::string_view s) {
    const auto b = s.find_first_not_of(" \t\n\r\f\v");
    if (b == std::string_view::npos) return {};
    return s.substr(b, s.find_last_not_of(" \t\n\r\f\v") - b + 1);
}

std::string formatNumber(double v) {
    if (!std::isfinite(v)) return v != v ? "nan" : (v > 0 ? "inf" : "-inf");
    if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
    std::string sci(buf, r.ptr);  // shortest round-trip digits: "-1.2345e-05"
    const auto e = sci.find('e');
    const int exp = std::stoi(sci.substr(e + 1));
    std::string sign = sci[0] == '-' ? "-" : "";
    std::string digits = sci.substr(sign.size(), e - sign.size());
    digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
    if (exp < -4 || exp >= 16) {  // Python repr: "1e-05", "1.5e+16"
        std::string m = digits.substr(0, 1) + (digits.size() > 1 ? "." + digits.substr(1) : "");
        std::snprintf(buf, sizeof buf, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
        return sign + m + buf;
    }
    if (exp < 0) return sign + "0." + std::string(std::size_t(-exp - 1), '0') + digits;
    if (digits.size() <= std::size_t(exp) + 1) return sign + digits + std::string(exp + 1 - digits.size(), '0') + ".0";
    return sign + digits.substr(0, exp + 1) + "." + digits.substr(exp + 1);
}

std::optional<double> parseNumber(std::string_view text) {
    text = trim(text);
    if (!text.empty() && text[0] == '+') text.remove_prefix(1);
    double v = 0;
    const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size() || !std::isfinite(v)) return std::nullopt;
    return v;
}

std::optional<int64_t> parseInteger(std::string_view text) {
    text = trim(text);
    int64_t i = 0;
    const auto r = std::from_chars(text.data(), text.data() + text.size(), i);
    if (!text.empty() && r.ec == std::errc() && r.ptr == text.data() + text.size()) return i;
    const auto d = parseNumber(text);  // "20.0", as float() accepts
    if (!d || *d != std::floor(*d) || std::fabs(*d) > 9.0e15) return std::nullopt;
    return static_cast<int64_t>(*d);
}

void checkJsonDepth(std::string_view text, std::string_view what, int maxDepth) {
    int depth = 0;
    bool inString = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (inString) {
            if (c == '\\') ++i;
            else if (c == '"') inString = false;
        } else if (c == '"') {
            inString = true;
        } else if (c == '[' || c == '{') {
            if (++depth > maxDepth)
                throw MetadataError(std::string(what) + ": JSON nested more than " + std::to_string(maxDepth) + " levels deep");
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
}

nlohmann::json parseJsonObject(std::string_view text, const char* what) {
    checkUntrustedText(what, text);
    checkJsonDepth(text, what);
    nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw MetadataError(std::string(what) + ": not a JSON object");
    return j;
}

std::string jsonString(const nlohmann::json& j, const char* key) {
    const auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

} // namespace detail

namespace {

GenerationInfo fromParameters(std::string_view text) {
    if (detail::trim(text).substr(0, 1) == "{") {
        if (text.find("\"sui_image_params\"") != std::string_view::npos) return readSwarmUiParameters(text);
        if (text.find("\"use_stable_diffusion_model\"") != std::string_view::npos) {  // Easy Diffusion's JPEG / WebP
            std::map<std::string, std::string> fields;
            const nlohmann::json j = detail::parseJsonObject(text, "Easy Diffusion metadata");  // items() must not outlive it
            for (const auto& [k, v] : j.items()) fields[k] = v.is_string() ? v.get<std::string>() : v.dump();
            return readEasyDiffusion(fields);
        }
        return readFooocusMetadata(text);  // Fooocus' own scheme
    }
    return parseA1111Parameters(text);
}

} // namespace

GenerationInfo sidecarToInfo(const Sidecar& sc) {
    GenerationInfo info;
    info.format = "diffusiondesk";
    info.settings = api::fromImage(sc.settings, sc.imageIndex);  // this file's image, as A1111's "Seed: seed + i"
    info.settings.model.clear();
    for (const char* f : {"prompt", "negative_prompt", "seed", "steps", "cfg_scale", "guidance_rescale", "sampler",
                          "schedule_type", "width", "height", "batch_size", "clip_skip", "prompt_syntax", "emphasis",
                          "init_image", "strength", "preset", "memory_plan", "deterministic", "prediction_type",
                          "timestep_spacing"})
        info.fields.emplace_back(f);
    // A settings.model of "demo:..." is the built-in model; anything else is only a name to look up.
    info.modelName = sc.settings.model.rfind("demo:", 0) == 0 ? sc.settings.model : safeModelName(sc.modelName);
    info.modelHash = sc.modelHash;
    info.version = sc.appVersion;
    return info;
}

namespace {

GenerationInfo fromSidecar(std::string_view json) { return sidecarToInfo(readSidecar(json)); }

} // namespace

std::optional<GenerationInfo> readGenerationInfo(const std::map<std::string, std::string>& pngText) {
    using Text = std::map<std::string, std::string>;
    struct Reader {
        const char* key;                             // the chunk that holds the format
        bool (*applies)(const Text&);                // nullptr: the key alone says so
        GenerationInfo (*read)(const Text&);
    };
    static const Reader kReaders[] = {
        {kSidecarPngKey, nullptr, [](const Text& t) { return fromSidecar(t.at(kSidecarPngKey)); }},
        {"parameters", nullptr, [](const Text& t) { return fromParameters(t.at("parameters")); }},
        {"invokeai_metadata", nullptr, [](const Text& t) { return readInvokeAiMetadata(t.at("invokeai_metadata")); }},
        {"sd-metadata", nullptr, [](const Text& t) { return readInvokeAiSdMetadata(t.at("sd-metadata")); }},
        {"Dream", nullptr, [](const Text& t) { return readInvokeAiDream(t.at("Dream")); }},
        {"Comment", [](const Text& t) { return t.count("Software") && t.at("Software").rfind("NovelAI", 0) == 0; },
         [](const Text& t) {
             const auto get = [&](const char* k) { return t.count(k) ? std::string_view(t.at(k)) : std::string_view(); };
             return readNovelAiMetadata(get("Comment"), get("Description"), get("Source"));
         }},
        {"negative_prompt", [](const Text& t) { return t.count("use_stable_diffusion_model") || t.count("num_inference_steps") > 0; },
         readEasyDiffusion},
        {"Negative Prompt", [](const Text& t) { return t.count("Stable Diffusion model") > 0; }, readEasyDiffusion},
        {"prompt", nullptr, [](const Text& t) { return readComfyUiPrompt(t.at("prompt")); }},
        {"workflow", nullptr, [](const Text& t) { return readComfyUiWorkflow(t.at("workflow")); }},  // when "prompt" is not there or unread
        {"XML:com.adobe.xmp", [](const Text& t) { return t.at("XML:com.adobe.xmp").find("exif:UserComment") != std::string::npos; },
         [](const Text& t) { return readDrawThings(t.at("XML:com.adobe.xmp")); }},
    };
    std::vector<std::string> failures;
    for (const auto& r : kReaders) {
        const auto it = pngText.find(r.key);
        if (it == pngText.end() || (r.applies && !r.applies(pngText))) continue;
        try {
            checkUntrustedText(std::string("PNG text '") + r.key + "'", it->second);
            GenerationInfo info = r.read(pngText);
            info.warnings.insert(info.warnings.begin(), failures.begin(), failures.end());
            return info;
        } catch (const MetadataError& e) {
            failures.emplace_back(e.what());
        }
    }
    if (failures.empty()) return std::nullopt;
    std::string all;
    for (const auto& f : failures) all += (all.empty() ? "" : "; ") + f;
    throw MetadataError(all);
}

} // namespace dd::settings
