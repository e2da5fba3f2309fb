// Any bytes as PNG text chunks for every reader: the first byte picks the chunk keyword(s), the rest is the
// text. Readers either return or throw MetadataError; a returned model name is never a path. A sidecar that
// reads must write and read back unchanged.
#include "core/settings/generation_info.h"
#include "core/settings/sidecar.h"

#include <nlohmann/json.hpp>

#include <string_view>

using namespace dd::settings;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    static const char* kKeys[] = {"parameters", "prompt", "invokeai_metadata", kSidecarPngKey};
    const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
    std::map<std::string, std::string> chunks;
    if (data[0] < 4) chunks[kKeys[data[0]]] = text;
    else for (const char* k : kKeys) chunks[k] = text;
    try {
        if (const auto info = readGenerationInfo(chunks)) {
            const std::string_view name = info->modelName;
            if (name.find_first_of("/\\") != std::string_view::npos || name.find("..") != std::string_view::npos)
                __builtin_trap();
        }
    } catch (const MetadataError&) {
    }
    try {
        const Sidecar s = readSidecar(text);
        const std::string once = writeSidecar(s);
        if (writeSidecar(readSidecar(once)) != once) __builtin_trap();
    } catch (const MetadataError&) {
    }
    return 0;
}
