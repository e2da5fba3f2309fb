#include "core/settings/model_lookup.h"

#include "core/io/model_hash.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <stdexcept>

namespace dd::settings {
namespace fs = std::filesystem;
namespace {

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return s;
}

bool nameMatches(const fs::path& p, const std::string& name) {
    if (name.empty()) return false;
    return p.filename().string() == name || p.stem().string() == name;
}

} // namespace

std::vector<std::string> listModelFiles(const std::string& folder) {
    std::vector<std::string> out;
    std::error_code ec;
    fs::recursive_directory_iterator it(folder, fs::directory_options::follow_directory_symlink |
                                                    fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it.depth() > 4) {
            it.disable_recursion_pending();
            continue;
        }
        const std::string ext = lower(it->path().extension().string());
        if ((ext == ".safetensors" || ext == ".ckpt" || ext == ".sft") && it->is_regular_file(ec)) out.push_back(it->path().string());
    }
    std::sort(out.begin(), out.end());
    return out;
}

ModelMatch findModelByHash(const std::vector<std::string>& candidates, const std::string& hash, const std::string& name) {
    const std::string want = lower(hash);
    std::vector<std::string> order;
    for (const auto& c : candidates) if (nameMatches(c, name)) order.push_back(c);
    for (const auto& c : candidates) if (!nameMatches(c, name)) order.push_back(c);
    if (want.empty()) {
        if (!order.empty() && nameMatches(order.front(), name)) return {order.front(), "name '" + name + "' (no hash to check)"};
    } else {
        for (const auto& path : order) {
            try {
                const io::ModelHashes h = io::hashModelFile(path);
                if (want == h.shortHash || want == h.legacyHash || (want.size() > 10 && h.sha256.rfind(want, 0) == 0))
                    return {path, "hash " + hash};
            } catch (const std::exception&) {
                // unreadable candidate: try the next
            }
        }
    }
    std::string need = "needs model '" + (name.empty() ? std::string("(unnamed)") : name) + "'";
    if (!hash.empty()) need += " (A1111 hash " + hash + ")";
    need += candidates.empty() ? "; no models were given to search"
                               : "; it is not among the " + std::to_string(candidates.size()) + " models searched";
    return {"", need + " — download it or pass its path with --model"};
}

std::string resolveRestoredModel(const std::string& name, const std::string& hash, const std::vector<std::string>& folders) {
    if (name.rfind("demo:", 0) == 0) return name;
    std::vector<std::string> candidates;
    for (const auto& f : folders) {
        const auto files = listModelFiles(f);
        candidates.insert(candidates.end(), files.begin(), files.end());
    }
    ModelMatch m = findModelByHash(candidates, hash, name);
    if (m.path.empty()) {
        std::string where;
        for (const auto& f : folders) where += (where.empty() ? " in " : ", ") + f;
        throw std::invalid_argument(m.message + (folders.empty() ? " (or --models DIR to search)" : where));
    }
    return m.path;
}

std::string resolveRestoredRefiner(const std::string& recorded, const std::string& hash, const std::vector<std::string>& folders) {
    std::error_code ec;
    if (recorded.empty() || std::filesystem::exists(recorded, ec)) return recorded;
    try {
        return resolveRestoredModel(std::filesystem::path(recorded).filename().string(), hash, folders);
    } catch (const std::invalid_argument& e) {
        std::string why = e.what();
        if (const auto at = why.find("--model"); at != std::string::npos) why.replace(at, 7, "--refiner");
        throw std::invalid_argument("the refiner: " + why);
    }
}

} // namespace dd::settings
