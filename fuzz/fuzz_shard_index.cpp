// Any bytes as a *.safetensors.index.json: accepted, or rejected with ModelFileError.
#include "core/io/model_error.h"
#include "core/io/shard_index.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const auto index = dd::io::parseShardIndex("fuzz.index.json", {reinterpret_cast<const char*>(data), size});
        for (const auto& [tensor, shard] : index.weightMap)
            if (shard.find('/') != std::string::npos) __builtin_trap();
    } catch (const dd::io::ModelFileError&) {
    }
    return 0;
}
