// Ref: diffusers utils/hub_utils.py::_get_checkpoint_shard_files (reads index["weight_map"], index["metadata"]).
#include "core/io/shard_index.h"

#include "core/io/model_error.h"

#include <nlohmann/json.hpp>

#include <set>

namespace dd::io {

ShardIndex parseShardIndex(const std::string& path, std::string_view json) {
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(json.begin(), json.end());
    } catch (const nlohmann::json::exception& e) {
        throw ModelFileError(path, std::string("shard index is not valid JSON: ") + e.what());
    }
    if (!j.is_object()) throw ModelFileError(path, "shard index is not a JSON object");
    const auto map = j.find("weight_map");
    if (map == j.end() || !map->is_object()) throw ModelFileError(path, "shard index has no \"weight_map\" object");
    ShardIndex index;
    std::set<std::string> shards;
    for (const auto& [tensor, shard] : map->items()) {
        if (!shard.is_string()) throw ModelFileError(path, "shard index: weight_map entry for '" + tensor + "' is not a file name");
        const auto& name = shard.get_ref<const std::string&>();
        // A shard lives beside its index: refuse paths that would escape the folder.
        if (name.empty() || name.find('/') != std::string::npos || name.find('\\') != std::string::npos || name == "." || name == "..")
            throw ModelFileError(path, "shard index: '" + tensor + "' names shard \"" + name + "\", which is not a plain file name");
        index.weightMap[tensor] = name;
        shards.insert(name);
    }
    index.shards.assign(shards.begin(), shards.end());
    if (const auto meta = j.find("metadata"); meta != j.end() && meta->is_object()) {
        if (const auto total = meta->find("total_size"); total != meta->end() && total->is_number_unsigned())
            index.totalSize = total->get<uint64_t>();
    }
    return index;
}

} // namespace dd::io
