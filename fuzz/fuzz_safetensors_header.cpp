// Any bytes as a whole safetensors file: the parser must either accept or throw ModelFileError.
#include "core/io/model_error.h"
#include "core/io/safetensors_header.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const auto h = dd::io::parseSafetensorsHeader("fuzz.safetensors", data, size, size);
        // Accepted headers must describe tensors that lie inside the input.
        for (const auto& t : h.tensors)
            if (h.dataOffset + t.end > size) __builtin_trap();
    } catch (const dd::io::ModelFileError&) {
    }
    return 0;
}
