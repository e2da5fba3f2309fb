#include "app/cli_control.h"

#include "app/cli_options.h"

#include "core/settings/restore.h"

#include <filesystem>
#include <stdexcept>

namespace fs = std::filesystem;

namespace dd::cli {
bool applyControlFlag(const std::string& flag, const std::string& v, api::GenerationSettings& s,
                      std::vector<std::string>& folders) {
    if (flag == "--controlnet") {
        api::ControlNetSetting c;
        c.model = v;
        s.controlnets.push_back(c);
        return true;
    }
    if (flag == "--controlnet-dir") {
        folders.push_back(v);
        return true;
    }
    if (flag.rfind("--control-", 0) != 0) return false;
    if (s.controlnets.empty()) throw std::invalid_argument(flag + " must follow the --controlnet it belongs to");
    auto& c = s.controlnets.back();
    if (flag == "--control-image") c.image = v;
    else if (flag == "--control-preprocessor") c.preprocessor = v;
    else if (flag == "--control-weight") c.weight = toNumber(flag, v);
    else if (flag == "--control-start") c.guidanceStart = toNumber(flag, v);
    else if (flag == "--control-end") c.guidanceEnd = toNumber(flag, v);
    else if (flag == "--control-resize") c.resizeMode = v;
    else if (flag == "--control-thresholds") {
        const auto comma = v.find(',');
        c.thresholdA = toNumber(flag, v.substr(0, comma));
        if (comma != std::string::npos) c.thresholdB = toNumber(flag, v.substr(comma + 1));
    } else {
        return false;
    }
    return true;
}

void resolveRestoredControlNets(api::GenerationSettings& s, const std::vector<std::string>& folders,
                                const std::string& outFolder) {
    for (auto& c : s.controlnets) {
        if (fs::exists(c.model)) continue;  // given on the command line
        std::string found;
        for (const auto& dir : folders)
            for (const std::string& name : {c.model, c.model + ".safetensors"})
                if (found.empty() && fs::exists(fs::path(dir) / name)) found = (fs::path(dir) / name).string();
        if (found.empty())
            throw std::invalid_argument("the restored settings use ControlNet '" + c.model +
                                        "': pass --controlnet-dir DIR (the folder holding it) or --controlnet PATH");
        c.model = found;
        if (!c.image.empty() && !fs::exists(c.image)) {
            const auto inside = settings::resolveInsideFolder(outFolder, c.image);
            if (!inside)
                throw std::invalid_argument("the restored ControlNet '" + c.model + "' used the control image '" + c.image +
                                            "'; put it into the output folder " + outFolder);
            c.image = *inside;
        }
    }
}

} // namespace dd::cli
