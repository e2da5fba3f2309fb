#include "core/pipeline/model_search.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <stdexcept>

namespace dd::pipeline {
namespace fs = std::filesystem;

namespace {

std::vector<std::string> searchFolders(const std::vector<std::string>& folders, const char* variable) {
    std::vector<std::string> all = folders;
    if (const char* env = std::getenv(variable)) {
        std::stringstream in(env);
        for (std::string dir; std::getline(in, dir, ':');)
            if (!dir.empty()) all.push_back(dir);
    }
    return all;
}

std::string joined(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
}

// Files under `dir` and its sub-folders whose name `wanted` accepts, sorted (A1111 looks through sub-folders too).
template <typename Wanted>
std::vector<fs::path> filesUnder(const std::string& dir, Wanted wanted) {
    std::vector<fs::path> hits;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
        if (it->is_regular_file(ec) && wanted(it->path().filename().string())) hits.push_back(it->path());
    std::sort(hits.begin(), hits.end());
    return hits;
}

} // namespace

std::string findLoraFile(const std::string& name, const std::vector<std::string>& folders, bool allowPath) {
    std::error_code ec;
    if (allowPath) {
        for (const std::string& p : {name, name + ".safetensors"})
            if (fs::is_regular_file(p, ec)) return p;
    } else if (name.find_first_of("/\\") != std::string::npos || name.find("..") != std::string::npos) {
        throw std::invalid_argument("<lora:" + name + "> names a path; prompt tags name a file in the LoRA folders "
                                    "(give a path with --lora instead)");
    }
    const auto dirs = searchFolders(folders, "DD_LORA_PATH");
    const std::string want = name + ".safetensors";
    for (const auto& dir : dirs) {
        const auto hits = filesUnder(dir, [&](const std::string& f) { return f == want || f == name; });
        if (!hits.empty()) return hits.front().string();
    }
    throw std::invalid_argument("LoRA '" + name + "' not found (looked for " + want + " in " +
                                (dirs.empty() ? std::string("no LoRA folder: pass --lora-dir or set DD_LORA_PATH") : joined(dirs)) + ")");
}

std::string findUpscalerFile(const std::string& nameOrPath, const std::vector<std::string>& folders) {
    std::error_code ec;
    if (fs::is_regular_file(nameOrPath, ec)) return nameOrPath;
    const auto dirs = searchFolders(folders, "DD_UPSCALER_PATH");
    const std::string want = nameOrPath + ".safetensors";
    if (nameOrPath.find_first_of("/\\") == std::string::npos)
        for (const auto& dir : dirs) {
            const auto hits = filesUnder(dir, [&](const std::string& f) { return f == want || f == nameOrPath; });
            if (!hits.empty()) return hits.front().string();
        }
    throw std::invalid_argument("upscaler '" + nameOrPath + "' not found (looked for " + want + " in " +
                                (dirs.empty() ? std::string("no upscaler folder: pass --upscaler-dir or set DD_UPSCALER_PATH") : joined(dirs)) +
                                ")");
}

namespace {

std::vector<std::string> safetensorsUnder(const std::vector<std::string>& folders, const char* environment) {
    std::vector<std::string> all;
    for (const auto& dir : searchFolders(folders, environment))
        for (const auto& p : filesUnder(dir, [](const std::string& f) { return f.size() > 12 && f.ends_with(".safetensors"); }))
            all.push_back(p.string());
    return all;
}

} // namespace

std::vector<std::string> upscalerFiles(const std::vector<std::string>& folders) { return safetensorsUnder(folders, "DD_UPSCALER_PATH"); }

std::vector<std::string> loraFiles(const std::vector<std::string>& folders) { return safetensorsUnder(folders, "DD_LORA_PATH"); }

std::vector<std::string> embeddingFolders(const std::vector<std::string>& folders, const std::vector<std::string>& loraFolders) {
    std::vector<std::string> candidates = searchFolders(folders, "DD_EMBEDDINGS_PATH");
    for (const auto& lora : searchFolders(loraFolders, "DD_LORA_PATH")) {
        const fs::path dir = fs::path(lora).lexically_normal();
        const fs::path parent = (dir.has_filename() ? dir : dir.parent_path()).parent_path();
        candidates.push_back((parent / "embeddings").string());
        if (parent.filename() == "models") candidates.push_back((parent.parent_path() / "embeddings").string());
    }
    std::vector<std::string> found;
    std::error_code ec;
    for (const auto& c : candidates)
        if (fs::is_directory(c, ec) && std::find(found.begin(), found.end(), c) == found.end()) found.push_back(c);
    return found;
}

} // namespace dd::pipeline
