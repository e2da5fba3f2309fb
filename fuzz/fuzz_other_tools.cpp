// Any bytes as the metadata of the other tools' readers (InvokeAI's Dream and sd-metadata, NovelAI, SwarmUI, Easy
// Diffusion, Draw Things): each returns or throws MetadataError, and a model name it returns is a bare file name.
// The first byte picks the reader.
#include "core/settings/generation_info.h"

#include <map>
#include <string>
#include <string_view>

using namespace dd::settings;

namespace {

GenerationInfo readAs(uint8_t which, std::string_view text) {
    switch (which % 6) {
    case 0: return readInvokeAiDream(text);
    case 1: return readInvokeAiSdMetadata(text);
    case 2: return readNovelAiMetadata(text, "a prompt", text.substr(0, text.size() / 2));
    case 3: return readSwarmUiParameters(text);
    case 4: {
        // Fields split at newlines: "key=value".
        std::map<std::string, std::string> fields;
        for (std::string_view rest = text; !rest.empty();) {
            const size_t nl = rest.find('\n');
            const std::string_view line = rest.substr(0, nl);
            const size_t eq = line.find('=');
            if (eq != std::string_view::npos) fields[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
            rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
        }
        return readEasyDiffusion(fields);
    }
    default: return readDrawThings(text);
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    try {
        const GenerationInfo info = readAs(data[0], std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1));
        const std::string_view name = info.modelName;
        if (name.find_first_of("/\\") != std::string_view::npos || name.find("..") != std::string_view::npos) __builtin_trap();
    } catch (const MetadataError&) {
    }
    return 0;
}
