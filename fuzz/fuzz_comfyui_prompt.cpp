// Any bytes as the JSON text these readers get from an image (ComfyUI's API prompt and its UI workflow): each returns
// or throws MetadataError, and a model name it returns is a bare file name.
#include "core/settings/generation_info.h"

#include <string_view>

using namespace dd::settings;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    for (auto* read : {&readComfyUiPrompt, &readComfyUiWorkflow}) {  // the API prompt and the UI workflow
        try {
            const GenerationInfo info = read(text);
            const std::string_view name = info.modelName;
            if (name.find_first_of("/\\") != std::string_view::npos || name.find("..") != std::string_view::npos) __builtin_trap();
        } catch (const MetadataError&) {
        }
    }
    return 0;
}
