// Any bytes as a memory preset (presets/*.json or a user's custom preset): loaded, or rejected with a
// std::runtime_error naming the file. A loaded preset validates and survives a JSON round trip.
#include "core/memory/preset.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <string>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    // loadPreset reads a file, as the app does; one per process, rewritten each run.
    static const std::string path = "/tmp/dd_fuzz_preset_" + std::to_string(getpid()) + ".json";
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), size);
    try {
        const auto p = dd::memory::loadPreset(path);
        dd::api::validate(p.plan);
        const auto back = nlohmann::json(p).get<dd::memory::Preset>();
        if (back.budgetBytes != p.budgetBytes || nlohmann::json(back.plan) != nlohmann::json(p.plan)) __builtin_trap();
    } catch (const std::runtime_error&) {
    }
    return 0;
}
