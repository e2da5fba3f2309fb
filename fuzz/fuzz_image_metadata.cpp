// Any bytes as a dropped file: PNG / JPEG / WebP containers (chunks, segments, EXIF IFDs, XMP), then every
// metadata reader through restoreFromBytes. It returns or throws MetadataError; no path survives.
#include "core/settings/image_metadata.h"
#include "core/settings/restore.h"

#include <string_view>

using namespace dd::settings;

namespace {
bool isPath(std::string_view s) { return s.find_first_of("/\\") != std::string_view::npos || s.find("..") != std::string_view::npos; }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    try {
        const Restored r = restoreFromBytes(bytes, "fuzz");
        if (!r.settings.model.empty() || isPath(r.settings.initImage) || isPath(r.modelName)) __builtin_trap();
    } catch (const MetadataError&) {
    }
    try {  // the EXIF and XMP parsers on their own, without a container around them
        exifUserComment(bytes, "fuzz");
    } catch (const MetadataError&) {
    }
    xmpProperty(bytes, "diffusiondesk:settings");
    return 0;
}
