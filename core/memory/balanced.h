#pragma once
// Multi-device placement, diffusers' device_map="balanced" for pipelines
// (pipelines/pipeline_loading_utils.py _assign_components_to_devices, _get_final_device_map): components
// largest first, devices largest cap first, visited in the zig-zag order d0 d1 … dn dn … d1 d0 d0 …; a
// component that does not fit in the next device's remaining cap goes to the CPU (diffusers keeps only the
// last such component in its map, a bug; here every one is kept) and does not advance the cycle.
// Pure: the engine does not use it yet (one compute device per run).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dd::memory {

struct ComponentSize {
    std::string name;   // "unet", "text_encoder", ...
    int64_t bytes = 0;
};

struct DeviceCap {
    std::string device; // "cuda:0"
    int64_t capBytes = 0;
};

struct BalancedPlacement {
    std::map<std::string, std::string> deviceOf;  // component → device ("cpu" when no cap fits it)
    std::map<std::string, int64_t> usedBytes;     // per device
};

BalancedPlacement placeBalanced(std::vector<ComponentSize> components, std::vector<DeviceCap> devices);

} // namespace dd::memory
