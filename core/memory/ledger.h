#pragma once
// Bytes of weights resident per device, updated at every placement (load, onload, offload). The engine and
// the offloaders write it; tests and the memory report read it. Pure: no torch.
//
// An owner (a network, a leaf, a group) has at most one record: placing it again replaces its record.
// Devices are labels ("cpu", "cuda:0"; on the CPU, tests give the compute side its own label so residency
// on it can be told apart from the home copies).
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>

namespace dd::memory {

class ResidencyLedger {
public:
    void place(const void* owner, const std::string& device, int64_t bytes);
    void remove(const void* owner);

    int64_t resident(const std::string& device) const;  // bytes there now
    int64_t peak(const std::string& device) const;      // most bytes there since the last resetPeaks
    void resetPeaks();                                  // peaks start again from what is resident now
    std::map<std::string, int64_t> residentByDevice() const;
    // "cuda:0 1.23 GB, cpu 4.56 GB" (GB = 2^30 bytes)
    std::string summary() const;

private:
    struct Record {
        std::string device;
        int64_t bytes = 0;
    };
    std::unordered_map<const void*, Record> m_records;
    std::map<std::string, int64_t> m_resident, m_peak;
};

} // namespace dd::memory
