// Ref: Mikubill/sd-webui-controlnet scripts/infotext.py (Infotext.write_infotext: "ControlNet {i}" = the unit's
// infotext fields joined by ", "; parse_unit), scripts/enums.py (Control Mode and Resize Mode labels).
#include "core/settings/a1111_controlnet.h"

#include "core/settings/generation_info_detail.h"

#include <cmath>
#include <filesystem>

namespace dd::settings {
namespace {

// Our preprocessor names ↔ sd-webui-controlnet module names.
std::string moduleName(const std::string& preprocessor) { return preprocessor == "blur" ? "blur_gaussian" : preprocessor; }
std::optional<std::string> preprocessorOf(const std::string& module) {
    if (module == "none" || module == "canny" || module == "scribble") return module;
    if (module == "blur_gaussian" || module == "blur") return std::string("blur");
    return std::nullopt;
}

std::string modelLabel(const api::ControlNetSetting& c) {
    std::string name = std::filesystem::path(c.model).filename().string();
    if (name.empty()) name = std::filesystem::path(c.model).parent_path().filename().string();
    if (const auto dot = name.rfind(".safetensors"); dot != std::string::npos && dot + 12 == name.size()) name.resize(dot);
    // The unit text is split at ", " and ": " when read back: keep those out of the name.
    for (auto& ch : name)
        if (ch == ',' || ch == ':' || ch == '"' || ch == '\n' || ch == '\r') ch = '_';
    return c.hash.empty() ? name : name + " [" + c.hash + "]";
}

// "Key: value, Key: value" → pairs (a value runs to the next ", Key:"; there are no nested quotes).
std::vector<std::pair<std::string, std::string>> unitFields(const std::string& text) {
    std::vector<std::pair<std::string, std::string>> out;
    size_t at = 0;
    while (at < text.size()) {
        const auto colon = text.find(": ", at);
        if (colon == std::string::npos) break;
        auto end = text.find(", ", colon + 2);
        // A value may itself contain ", " (Resize Mode never does; a name could): the next field starts at a ", "
        // followed by a capitalised key and ": ".
        while (end != std::string::npos) {
            const auto nextColon = text.find(": ", end + 2);
            const auto nextComma = text.find(", ", end + 2);
            if (nextColon != std::string::npos && (nextComma == std::string::npos || nextColon < nextComma)) break;
            end = nextComma;
        }
        out.emplace_back(text.substr(at, colon - at), text.substr(colon + 2, end == std::string::npos ? std::string::npos : end - colon - 2));
        at = end == std::string::npos ? text.size() : end + 2;
    }
    return out;
}

std::optional<double> number(const std::string& v) {
    try {
        size_t used = 0;
        const double d = std::stod(v, &used);
        if (used == v.size() && std::isfinite(d)) return d;
    } catch (const std::exception&) {
    }
    return std::nullopt;
}

} // namespace

std::vector<std::pair<std::string, std::string>> a1111ControlNetParameters(const api::GenerationSettings& s) {
    std::vector<std::pair<std::string, std::string>> out;
    for (size_t i = 0; i < s.controlnets.size(); ++i) {
        const auto& c = s.controlnets[i];
        double a = c.thresholdA, b = c.thresholdB;
        api::defaultThresholds(c.preprocessor, a, b);
        // The preprocessor ran at the run's size (imaging/control_preprocess): A1111's "Processor Res" is the short side.
        const int res = c.preprocessor == "none" ? -1 : std::min(s.width, s.height);
        const std::string text = "Module: " + moduleName(c.preprocessor) + ", Model: " + modelLabel(c) +
                                 ", Weight: " + detail::formatNumber(c.weight) + ", Resize Mode: " + c.resizeMode +
                                 ", Low Vram: False, Processor Res: " + std::to_string(res) +
                                 ", Threshold A: " + detail::formatNumber(a) + ", Threshold B: " + detail::formatNumber(b) +
                                 ", Guidance Start: " + detail::formatNumber(c.guidanceStart) +
                                 ", Guidance End: " + detail::formatNumber(c.guidanceEnd) +
                                 ", Pixel Perfect: False, Control Mode: Balanced";
        out.emplace_back("ControlNet " + std::to_string(i), text);
    }
    return out;
}

void readA1111ControlNets(const std::function<std::optional<std::string>(std::string_view)>& take, GenerationInfo& info) {
    for (int i = 0; i < 16; ++i) {
        const std::string key = "ControlNet " + std::to_string(i);
        const auto v = take(key);
        if (!v) continue;
        api::ControlNetSetting c;
        bool ok = true;
        for (const auto& [k, value] : unitFields(*v)) {
            if (k == "Module") {
                if (const auto p = preprocessorOf(value)) c.preprocessor = *p;
                else {
                    c.preprocessor = "none";
                    info.warnings.push_back(key + ": preprocessor '" + value.substr(0, 40) +
                                            "' is not available in DiffusionDesk; give it an already preprocessed control image");
                }
            } else if (k == "Model") {
                std::string name = value;
                if (const auto open = name.rfind(" ["); open != std::string::npos && name.ends_with("]")) {
                    c.hash = name.substr(open + 2, name.size() - open - 3);
                    name.resize(open);
                }
                // Only what the writer can write back unchanged: a bare name without the characters it replaces.
                if (name.find_first_of(",:\"\n\r/\\") != std::string::npos || name.ends_with(".safetensors") ||
                    c.hash.find_first_of(",:\"\n\r") != std::string::npos)
                    ok = false;
                c.model = name;
            } else if (k == "Weight" || k == "Guidance Start" || k == "Guidance End" || k == "Threshold A" || k == "Threshold B") {
                const auto d = number(value);
                if (!d) {
                    ok = false;
                    break;
                }
                (k == "Weight" ? c.weight : k == "Guidance Start" ? c.guidanceStart : k == "Guidance End" ? c.guidanceEnd
                 : k == "Threshold A" ? c.thresholdA : c.thresholdB) = *d;
            } else if (k == "Resize Mode") {
                c.resizeMode = value;
            } else if (k == "Control Mode" && value != "Balanced") {
                info.warnings.push_back(key + ": Control Mode '" + value.substr(0, 40) + "' is not available; Balanced is used");
            }
        }
        // -1 means the preprocessor's default; the writer writes the value used, so read it as that value.
        api::defaultThresholds(c.preprocessor, c.thresholdA, c.thresholdB);
        if (c.resizeMode != "Crop and Resize" && c.resizeMode != "Just Resize" && c.resizeMode != "Resize and Fill")
            c.resizeMode = "Crop and Resize";
        try {
            if (ok) validate(c, size_t(i));
        } catch (const std::invalid_argument&) {
            ok = false;
        }
        if (!ok || c.model.empty()) {
            info.warnings.push_back("'" + key + ": " + v->substr(0, 80) + "' is not a valid ControlNet unit; ignored");
            continue;
        }
        info.settings.controlnets.push_back(std::move(c));
    }
    if (!info.settings.controlnets.empty()) detail::found(info, "controlnets");
}

} // namespace dd::settings
