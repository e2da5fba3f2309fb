#include "core/memory/ledger.h"

#include <algorithm>
#include <cstdio>

namespace dd::memory {

void ResidencyLedger::place(const void* owner, const std::string& device, int64_t bytes) {
    remove(owner);
    m_records[owner] = {device, bytes};
    auto& now = m_resident[device];
    now += bytes;
    auto& top = m_peak[device];
    top = std::max(top, now);
}

void ResidencyLedger::remove(const void* owner) {
    const auto it = m_records.find(owner);
    if (it == m_records.end()) return;
    m_resident[it->second.device] -= it->second.bytes;
    m_records.erase(it);
}

int64_t ResidencyLedger::resident(const std::string& device) const {
    const auto it = m_resident.find(device);
    return it == m_resident.end() ? 0 : it->second;
}

int64_t ResidencyLedger::peak(const std::string& device) const {
    const auto it = m_peak.find(device);
    return it == m_peak.end() ? 0 : it->second;
}

void ResidencyLedger::resetPeaks() { m_peak = m_resident; }

std::map<std::string, int64_t> ResidencyLedger::residentByDevice() const { return m_resident; }

std::string ResidencyLedger::summary() const {
    std::string s;
    for (const auto& [device, bytes] : m_resident) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "%s%s %.2f GB", s.empty() ? "" : ", ", device.c_str(), double(bytes) / double(1LL << 30));
        s += buf;
    }
    return s;
}

} // namespace dd::memory
