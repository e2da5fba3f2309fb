#include "core/memory/balanced.h"

#include <algorithm>

namespace dd::memory {

BalancedPlacement placeBalanced(std::vector<ComponentSize> components, std::vector<DeviceCap> devices) {
    // Stable sorts: equal sizes keep the caller's order, as Python's sorted does.
    std::stable_sort(components.begin(), components.end(), [](const auto& a, const auto& b) { return a.bytes > b.bytes; });
    std::stable_sort(devices.begin(), devices.end(), [](const auto& a, const auto& b) { return a.capBytes > b.capBytes; });
    std::vector<size_t> cycle;
    for (size_t i = 0; i < devices.size(); ++i) cycle.push_back(i);
    for (size_t i = devices.size(); i-- > 0;) cycle.push_back(i);

    BalancedPlacement out;
    std::vector<int64_t> left;
    for (const auto& d : devices) left.push_back(d.capBytes);
    size_t next = 0;
    for (const auto& c : components) {
        if (cycle.empty() || c.bytes > left[cycle[next % cycle.size()]]) {
            out.deviceOf[c.name] = "cpu";
            out.usedBytes["cpu"] += c.bytes;
            continue;
        }
        const size_t d = cycle[next % cycle.size()];
        out.deviceOf[c.name] = devices[d].device;
        out.usedBytes[devices[d].device] += c.bytes;
        left[d] -= c.bytes;
        ++next;
    }
    return out;
}

} // namespace dd::memory
