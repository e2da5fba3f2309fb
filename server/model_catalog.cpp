#include "server/model_catalog.h"

#include "core/resources.h"
#include "core/settings/model_lookup.h"

#include <algorithm>

#include <filesystem>

namespace dd::server {

namespace fs = std::filesystem;

namespace {

// Diffusers folders (a model_index.json) up to two levels under `folder`.
std::vector<fs::path> diffusersFolders(const fs::path& folder) {
    std::vector<fs::path> out;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(folder, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it.depth() > 1) it.disable_recursion_pending();
        if (it->is_directory(ec) && fs::exists(it->path() / "model_index.json", ec)) {
            out.push_back(it->path());
            it.disable_recursion_pending();
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

} // namespace

std::vector<CatalogModel> startModels(const std::string& chosen) {
    std::vector<CatalogModel> out;
    if (!chosen.empty())
        out.push_back({chosen.rfind("demo:", 0) == 0 ? chosen : fs::path(chosen).filename().string(), fs::path(chosen).stem().string(), chosen});
    if (const auto builtin = installedEmbeddedModel(); !builtin.empty() && (chosen.empty() || !isEmbeddedModel(chosen)))
        out.push_back({"shapes (built-in)", "shapes", builtin.string()});
    return out;
}

ModelCatalog::ModelCatalog(std::vector<CatalogModel> fixed, std::vector<std::string> folders)
    : m_fixed(std::move(fixed)), m_folders(std::move(folders)) {
    refresh();
}

void ModelCatalog::refresh() {
    std::vector<CatalogModel> all = m_fixed;
    const auto add = [&](const fs::path& root, const fs::path& p) {
        const std::string title = fs::relative(p, root).generic_string();
        for (const auto& m : all)
            if (m.title == title || fs::path(m.path) == p) return;
        all.push_back({title, p.stem().string(), p.string()});
    };
    for (const auto& folder : m_folders) {
        for (const auto& file : settings::listModelFiles(folder)) add(folder, file);
        for (const auto& dir : diffusersFolders(folder)) add(folder, dir);
    }
    std::lock_guard<std::mutex> g(m_lock);
    m_models = std::move(all);
}

std::vector<CatalogModel> ModelCatalog::models() const {
    std::lock_guard<std::mutex> g(m_lock);
    return m_models;
}

std::optional<CatalogModel> ModelCatalog::find(const std::string& title) const {
    std::string want = title;
    if (const auto bracket = want.rfind(" ["); bracket != std::string::npos && want.back() == ']') want.resize(bracket);
    std::lock_guard<std::mutex> g(m_lock);
    for (const auto& m : m_models)
        if (m.title == want) return m;
    for (const auto& m : m_models)
        if (fs::path(m.title).filename() == want || m.name == want) return m;
    return std::nullopt;
}

} // namespace dd::server
