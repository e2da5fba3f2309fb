#pragma once
// `*.safetensors.index.json` of sharded checkpoints (diffusers / transformers save_pretrained).
// Pure C++ so that the fuzz target links no torch.
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace dd::io {

struct ShardIndex {
    std::map<std::string, std::string> weightMap;  // tensor name → shard file name (relative to the index)
    std::vector<std::string> shards;               // distinct shard names, sorted
    uint64_t totalSize = 0;                        // metadata.total_size when present
};

// Throws ModelFileError naming `path` for anything that is not a usable index.
ShardIndex parseShardIndex(const std::string& path, std::string_view json);

} // namespace dd::io
