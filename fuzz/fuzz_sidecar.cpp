// Any bytes as a DiffusionDesk sidecar (<image>.json): read, or rejected with SidecarError; what is read
// writes back and reads again to the same settings.
#include "core/settings/sidecar.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const auto s = dd::settings::readSidecar({reinterpret_cast<const char*>(data), size});
        const auto again = dd::settings::readSidecar(dd::settings::writeSidecar(s));
        if (again.settings.prompt != s.settings.prompt || again.settings.seed != s.settings.seed) __builtin_trap();
    } catch (const dd::settings::MetadataError&) {
    }
    return 0;
}
