// Any template and prompt: the result is one safe file name (no separators, no leading dot, not empty,
// at most 150 bytes) or std::invalid_argument.
#include "core/settings/file_name_template.h"

#include <stdexcept>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string in(reinterpret_cast<const char*>(data), size);
    const auto split = in.find('\n');
    dd::settings::FileNameFields f;
    f.date = "2025-01-31";
    f.prompt = split == std::string::npos ? in : in.substr(split + 1);
    f.model = f.prompt;
    f.sampler = f.prompt;
    try {
        const std::string name = dd::settings::expandFileName(in.substr(0, split), f);
        if (name.empty() || name.size() > 150 || name[0] == '.' || name.find_first_of("/\\") != std::string::npos) __builtin_trap();
        for (const char c : name)
            if (static_cast<unsigned char>(c) < 0x20) __builtin_trap();
    } catch (const std::invalid_argument&) {
    }
    return 0;
}
