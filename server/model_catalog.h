#pragma once
// The models an API client may choose (/sdapi/v1/sd-models, options' sd_model_checkpoint): the ones given at
// start (the built-in model, --model) and every checkpoint file and diffusers folder under the model folders.
// A client names a model by its title, never by a path, so requests reach only these.
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace dd::server {

struct CatalogModel {
    std::string title;  // what clients send back: the path under its folder ("sd15/v1-5.safetensors"), or a name
    std::string name;   // without folder and extension (A1111's model_name)
    std::string path;   // the file or folder, or "demo:…"
};

// The models a server offers before its folders: `chosen` (a path or "demo:…"; "" = none) titled by its file name,
// then the built-in model when this install has it and it is not `chosen`.
std::vector<CatalogModel> startModels(const std::string& chosen);

class ModelCatalog {
public:
    ModelCatalog(std::vector<CatalogModel> fixed, std::vector<std::string> folders);
    void refresh();  // looks at the folders again (/sdapi/v1/refresh-checkpoints)
    std::vector<CatalogModel> models() const;
    // By title, by file name or by name; A1111's " [hash]" suffix is ignored. nullopt when none matches.
    std::optional<CatalogModel> find(const std::string& title) const;
    const std::vector<std::string>& folders() const { return m_folders; }

private:
    std::vector<CatalogModel> m_fixed;
    std::vector<std::string> m_folders;
    mutable std::mutex m_lock;
    std::vector<CatalogModel> m_models;
};

} // namespace dd::server
