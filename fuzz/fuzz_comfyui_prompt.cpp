// Any bytes as the JSON text this reader gets from an image: it returns or throws MetadataError, and a model
// name it returns is a bare file name.
#include "core/settings/generation_info.h"

#include <string_view>

using namespace dd::settings;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const GenerationInfo info = readComfyUiPrompt(std::string_view(reinterpret_cast<const char*>(data), size));
        const std::string_view name = info.modelName;
        if (name.find_first_of("/\\") != std::string_view::npos || name.find("..") != std::string_view::npos) __builtin_trap();
    } catch (const MetadataError&) {
    }
    return 0;
}
