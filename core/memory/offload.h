#pragma once
// Offloading and fp8 layerwise storage for one network, driven by the guard points of its leaf layers
// (core/nn/layers.h). Ref: sd_reference.md §10.3 (accelerate's CpuOffload / AlignDevicesHook, diffusers'
// group offloading), diffusers hooks/layerwise_casting.py.
//
// Every leaf keeps a stored copy of its weights at home (the CPU, pinned for group offload on CUDA) in its
// storage dtype (the compute dtype, or fp8). Between uses the leaf's parameters are placeholders (one NaN
// broadcast to the shape, on the CPU), so a forward that bypassed the guard gives NaN (or, on CUDA, a device
// mismatch) instead of silently using stale weights. Units:
//   Model       the whole network is one group: onloaded by begin(), offloaded by end();
//   Sequential  each leaf is a group: onloaded on entry, offloaded on exit (at most one leaf resident);
//   Group       N consecutive children of every ModuleList form a group (groupBlocks = 0: each leaf is one);
//               entering a group onloads it and prefetches the group that ran after it last time (side CUDA
//               stream, pinned memory; synchronous on the CPU); every other group goes home, so at most two
//               groups plus the "unmatched" leaves outside any ModuleList (kept for the whole use) are resident;
//   None        weights stay on the compute device (home == compute); only fp8 leaves are hooked.
// fp8 leaves (Linear, Conv2d, Embedding whose names match none of diffusers' skip patterns: "norm",
// "pos_embed", "patch_embed", "^proj_in$", "^proj_out$") are upcast to the compute dtype on entry and the
// upcast copy is dropped on exit. Every placement is written to the ResidencyLedger.
// With a disk folder the stored copies are written once to a file there and memory-mapped (the file is unlinked
// at once, so nothing is left behind even after a crash); after each onload the copied pages are given back,
// so the host holds only what the page cache keeps: the "disk" row of the ledger.
#include "core/api/memory_plan.h"
#include "core/memory/ledger.h"
#include "core/nn/layers.h"

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace dd::memory {

struct OffloadConfig {
    api::Offload mode = api::Offload::None;
    int groupBlocks = 1;                             // Group: blocks per group, 0 = leaf level
    torch::Device home = torch::kCPU;                // where the stored copies live
    torch::Device compute = torch::kCPU;             // where the network runs
    torch::ScalarType computeDtype = torch::kFloat32;
    std::optional<torch::ScalarType> fp8;            // fp8 layerwise storage
    bool channelsLast = false;
    std::string diskFolder;                          // non-empty: stored copies in a memory-mapped file here
    // Ledger labels. Home and compute are the same place when the labels are equal (no copies are made);
    // on the CPU tests give the compute side its own label to prove the residency bounds.
    std::string homeLabel = "cpu", computeLabel = "cpu";
};

// "e4m3fn" / "e5m2" → the fp8 dtype; "" → nullopt.
std::optional<torch::ScalarType> fp8DtypeOf(const std::string& name);
// diffusers' layerwise-casting rule for one leaf (full dotted name, e.g. "down_blocks.0.resnets.0.norm1").
bool castsToFp8(const std::string& leafName, const torch::nn::Module& leaf);

class NetworkOffload final : public nn::LeafHook {
public:
    // `net`'s weights must be at config.home in config.computeDtype (how loadSdModel placed them).
    NetworkOffload(torch::nn::Module& net, const OffloadConfig& config, ResidencyLedger& ledger);
    ~NetworkOffload() override;  // unhooks the leaves and gives them their stored copies back
    NetworkOffload(const NetworkOffload&) = delete;
    NetworkOffload& operator=(const NetworkOffload&) = delete;

    void begin();  // a stage starts using the network
    void end();    // ... and is done with it: everything goes home
    // Compute in another dtype from now on (the NaN retry in fp32); the stored copies do not change.
    void setComputeDtype(torch::ScalarType dtype);
    torch::ScalarType computeDtype() const { return m_config.computeDtype; }

    const OffloadConfig& config() const { return m_config; }
    size_t groupCount() const { return m_groups.size(); }
    int64_t storedBytes() const;              // all stored copies
    int64_t largestLeafComputeBytes() const;  // one leaf's weights in the compute dtype
    // Bytes the unmatched group plus the two largest other groups take on the compute device.
    int64_t groupBound() const;

    void enter(torch::nn::Module& leaf) override;
    void exit(torch::nn::Module& leaf) noexcept override;

private:
    struct Leaf {
        torch::nn::Module* module = nullptr;
        std::string name;
        std::vector<torch::Tensor> params, stored, onDevice, placeholders;
        torch::ScalarType storageDtype = torch::kFloat32;
        int group = 0;
        int64_t storedBytes = 0, computeBytes = 0;
        bool materialised = false;
    };
    struct Group {
        std::vector<size_t> leaves;
        bool onDevice = false, sticky = false, pending = false;
        int64_t storedBytes = 0;
    };
    struct Streams;

    bool sameHome() const { return m_config.homeLabel == m_config.computeLabel; }
    bool castsPerUse(const Leaf& l) const { return l.storageDtype != m_config.computeDtype; }
    void storeLeaves(torch::nn::Module& net);
    void undoStoring() noexcept;
    void moveStoredCopiesToDisk();
    void buildGroups(torch::nn::Module& net);
    void onload(int group, bool prefetch);
    void offload(int group);
    void materialise(Leaf& l);
    void release(Leaf& l) noexcept;
    void waitForPrefetch(int group);

    OffloadConfig m_config;
    ResidencyLedger& m_ledger;
    std::vector<Leaf> m_leaves;
    std::vector<Group> m_groups;
    std::unordered_map<const torch::nn::Module*, size_t> m_leafIndex;
    std::unordered_map<int, int> m_next;  // group → the group entered after it last time
    int m_current = -1;
    bool m_inUse = false;
    std::unique_ptr<Streams> m_streams;   // CUDA prefetch (null on the CPU)
};

// begin() / end() around one use of a network (no-op for a null offload).
class NetworkUse {
public:
    explicit NetworkUse(NetworkOffload* o) : m_o(o) {
        if (m_o) m_o->begin();
    }
    ~NetworkUse() {
        if (m_o) m_o->end();
    }
    NetworkUse(const NetworkUse&) = delete;
    NetworkUse& operator=(const NetworkUse&) = delete;

private:
    NetworkOffload* m_o;
};

} // namespace dd::memory
