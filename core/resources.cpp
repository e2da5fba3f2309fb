#include "core/resources.h"

#include <cstdlib>

namespace dd {

std::filesystem::path resourceDir() {
    if (const char* env = std::getenv("DD_RESOURCE_DIR"); env && *env) return env;
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) return "share/diffusiondesk";
    return exe.parent_path().parent_path() / "share" / "diffusiondesk";
}

std::filesystem::path embeddedModelDir() { return resourceDir() / "models" / "shapes"; }

std::filesystem::path installedEmbeddedModel() {
    const auto dir = embeddedModelDir();
    std::error_code ec;
    return std::filesystem::exists(dir / "model_index.json", ec) ? dir : std::filesystem::path();
}

bool isEmbeddedModel(const std::filesystem::path& path) {
    std::error_code ec;  // a path that does not exist (or "demo:tiny-sd1") is simply not it
    return !path.empty() && std::filesystem::equivalent(path, embeddedModelDir(), ec);
}

} // namespace dd
