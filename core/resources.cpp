#include "core/resources.h"

#include <cstdlib>
#include <mutex>
#include <optional>

namespace dd {

std::filesystem::path resourceDir() {
    if (const char* env = std::getenv("DD_RESOURCE_DIR"); env && *env) return env;
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) return "share/diffusiondesk";
    return exe.parent_path().parent_path() / "share" / "diffusiondesk";
}

text::ClipTokenizer bundledClipTokenizer(text::ClipPad pad) {
    static std::mutex mutex;
    static std::filesystem::path readFrom;
    static std::optional<text::ClipTokenizer> bundled;
    const auto file = resourceDir() / "clip" / "bpe_simple_vocab_16e6.txt.gz";
    std::lock_guard lock(mutex);
    if (!bundled || readFrom != file) {
        bundled = text::ClipTokenizer::fromBundledVocab(file);
        readFrom = file;
    }
    return bundled->withPad(pad);
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
