#include "core/memory/offload.h"

#include <torch/torch.h>

// Device-generic streams, events, guards and allocator: CUDA's implementations of them are registered by
// libtorch_cuda, which no program links (memory/cuda_backend.h).
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include "core/io/safetensors.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <functional>
#include <limits>
#include <stdexcept>
#include <unistd.h>

namespace dd::memory {

// The side stream and one "copy done" event per group, for prefetching on CUDA.
struct NetworkOffload::Streams {
    explicit Streams(torch::Device d, size_t groups)
        : guard(d.type()), side(guard.getStreamFromGlobalPool(d, /*isHighPriority=*/false)) {
        for (size_t g = 0; g < groups; ++g) ready.push_back(std::make_unique<c10::Event>(d.type()));
    }
    c10::impl::VirtualGuardImpl guard;
    c10::Stream side;
    std::vector<std::unique_ptr<c10::Event>> ready;
};

namespace {

int64_t bytesOf(const std::vector<torch::Tensor>& ts, std::optional<torch::ScalarType> as = std::nullopt) {
    int64_t n = 0;
    for (const auto& t : ts) n += t.numel() * int64_t(c10::elementSize(as ? *as : t.scalar_type()));
    return n;
}

// What a parameter holds between uses: one NaN on the CPU, broadcast to the parameter's shape (no memory).
// A forward that bypassed the guard gives NaN (on CUDA, a device mismatch) instead of stale numbers. (A meta
// tensor would be the natural choice, but set_data refuses to swap a CPU tensor's data for a meta one.)
torch::Tensor placeholder(const torch::Tensor& p, torch::ScalarType dtype) {
    return torch::full({1}, std::numeric_limits<double>::quiet_NaN(), torch::dtype(dtype)).expand(p.sizes());
}

bool hasModuleList(const torch::nn::Module& m) {
    for (const auto& c : m.children())
        if (dynamic_cast<const torch::nn::ModuleListImpl*>(c.get()) || hasModuleList(*c)) return true;
    return false;
}

} // namespace

std::optional<torch::ScalarType> fp8DtypeOf(const std::string& name) {
    if (name.empty()) return std::nullopt;
    if (name == "e4m3fn") return torch::kFloat8_e4m3fn;
    if (name == "e5m2") return torch::kFloat8_e5m2;
    throw std::invalid_argument("fp8 storage '" + name + "' is unknown (use e4m3fn or e5m2)");
}

bool castsToFp8(const std::string& name, const torch::nn::Module& leaf) {
    // diffusers _GO_LC_SUPPORTED_PYTORCH_LAYERS (conv, linear, embedding) minus DEFAULT_SKIP_MODULES_PATTERN
    // and UNet2DConditionModel's _skip_layerwise_casting_patterns ("norm"), matched with re.search.
    const bool supported = dynamic_cast<const torch::nn::LinearImpl*>(&leaf) || dynamic_cast<const torch::nn::Conv2dImpl*>(&leaf) ||
                           dynamic_cast<const torch::nn::EmbeddingImpl*>(&leaf);
    if (!supported) return false;
    for (const char* p : {"norm", "pos_embed", "patch_embed"})
        if (name.find(p) != std::string::npos) return false;
    return name != "proj_in" && name != "proj_out";
}

NetworkOffload::NetworkOffload(torch::nn::Module& net, const OffloadConfig& config, ResidencyLedger& ledger)
    : m_config(config), m_ledger(ledger) {
    torch::NoGradGuard noGrad;
    try {
        storeLeaves(net);
        if (!m_config.diskFolder.empty() && !sameHome()) moveStoredCopiesToDisk();
    } catch (...) {
        undoStoring();  // out of memory or disk: the network gets its weights back and no hook points here
        throw;
    }
    buildGroups(net);
    for (auto& l : m_leaves) {
        m_ledger.place(&l.stored, m_config.homeLabel, l.storedBytes);
        release(l);
    }
    if (m_config.compute.is_cuda() && m_config.mode == api::Offload::Group)
        m_streams = std::make_unique<Streams>(m_config.compute, m_groups.size());
    // Home is the compute device: the stored copies are what runs, always "on the device".
    if (sameHome())
        for (size_t g = 0; g < m_groups.size(); ++g) onload(int(g), false);
}

NetworkOffload::~NetworkOffload() {
    torch::NoGradGuard noGrad;
    for (auto& l : m_leaves) {
        if (auto* hooked = dynamic_cast<nn::HookedLeaf*>(l.module); hooked && hooked->leafHook == this) hooked->leafHook = nullptr;
        for (size_t i = 0; i < l.params.size(); ++i) l.params[i].set_data(l.stored[i]);
        m_ledger.remove(&l.stored);
        m_ledger.remove(&l.onDevice);
        m_ledger.remove(&l.params);
    }
}

void NetworkOffload::storeLeaves(torch::nn::Module& net) {
    const bool pin = m_config.compute.is_cuda() && m_config.mode == api::Offload::Group && m_config.diskFolder.empty();
    for (const auto& item : net.named_modules("", /*include_self=*/true)) {
        auto* hooked = dynamic_cast<nn::HookedLeaf*>(item.value().get());
        if (!hooked) {
            if (!item.value()->parameters(false).empty() || !item.value()->buffers(false).empty())
                throw std::logic_error("offload: module '" + item.key() + "' owns weights outside a guarded leaf layer");
            continue;
        }
        m_leafIndex[item.value().get()] = m_leaves.size();
        Leaf& l = m_leaves.emplace_back();
        l.module = item.value().get();
        l.name = item.key();
        for (auto& p : l.module->parameters(false)) l.params.push_back(p);
        for (auto& b : l.module->buffers(false)) l.params.push_back(b);
        l.storageDtype = m_config.fp8 && castsToFp8(l.name, *l.module) ? *m_config.fp8 : m_config.computeDtype;
        for (auto& p : l.params) {
            auto s = p.detach().to(m_config.home, l.storageDtype);
            if (pin) s = s.pin_memory();
            l.stored.push_back(s);
            l.placeholders.push_back(placeholder(p, m_config.computeDtype));
            // A converted copy (fp8, another device) replaces the loaded weight at once, so the network is never
            // held twice (a memory-mapped weight also gives its file pages back).
            if (!s.is_alias_of(p)) {
                io::releaseMappedPages(p);
                p.set_data(l.placeholders.back());
            }
        }
        l.storedBytes = bytesOf(l.stored);
        l.computeBytes = bytesOf(l.stored, m_config.computeDtype);
        hooked->leafHook = this;
    }
}

void NetworkOffload::undoStoring() noexcept {
    try {
        for (auto& l : m_leaves) {
            if (auto* hooked = dynamic_cast<nn::HookedLeaf*>(l.module); hooked && hooked->leafHook == this) hooked->leafHook = nullptr;
            for (size_t i = 0; i < l.stored.size(); ++i)
                if (!l.stored[i].is_alias_of(l.params[i])) l.params[i].set_data(l.stored[i].to(m_config.computeDtype));
        }
    } catch (...) {
        // Nothing left to give the weights back with: the engine reloads a model whose setup failed.
    }
}

void NetworkOffload::moveStoredCopiesToDisk() {
    static std::atomic<int> serial{0};
    namespace fs = std::filesystem;
    const fs::path file = fs::path(m_config.diskFolder) /
                          ("diffusiondesk-offload-" + std::to_string(::getpid()) + "-" + std::to_string(serial++) + ".safetensors");
    io::TensorMap tensors;
    for (const auto& l : m_leaves)
        for (size_t i = 0; i < l.stored.size(); ++i) tensors.emplace(l.name + "#" + std::to_string(i), l.stored[i]);
    io::writeSafetensors(file.string(), tensors);
    std::shared_ptr<io::SafetensorsFile> mapped;
    try {
        mapped = io::SafetensorsFile::open(file.string());
    } catch (...) {
        std::error_code ec;
        fs::remove(file, ec);
        throw;
    }
    std::error_code ec;
    fs::remove(file, ec);  // the mapping keeps the data; the name goes now, so no crash can leave it behind
    tensors.clear();
    for (auto& l : m_leaves) {
        for (size_t i = 0; i < l.stored.size(); ++i) {
            l.stored[i] = mapped->tensor(l.name + "#" + std::to_string(i));  // untouched: no RAM until read
        }
    }
}

void NetworkOffload::buildGroups(torch::nn::Module& net) {
    // Group 0: leaves outside any group (diffusers' "unmatched" modules; for Model, all of them).
    m_groups.assign(1, Group{});
    m_groups[0].sticky = true;
    auto addUnder = [&](const torch::nn::Module& m, int g) {
        for (const auto& sub : m.modules(/*include_self=*/true))
            if (const auto it = m_leafIndex.find(sub.get()); it != m_leafIndex.end()) m_leaves[it->second].group = g;
    };
    const bool perLeaf = m_config.mode == api::Offload::Sequential || m_config.mode == api::Offload::None ||
                         (m_config.mode == api::Offload::Group && m_config.groupBlocks == 0);
    if (perLeaf) {
        for (size_t i = 0; i < m_leaves.size(); ++i) {
            m_leaves[i].group = int(m_groups.size());
            m_groups.emplace_back();
        }
    } else if (m_config.mode == api::Offload::Group) {
        const int n = std::max(1, m_config.groupBlocks);
        std::function<void(const torch::nn::Module&)> walk = [&](const torch::nn::Module& m) {
            for (const auto& child : m.children()) {
                if (const auto* list = dynamic_cast<const torch::nn::ModuleListImpl*>(child.get())) {
                    for (size_t i = 0; i < list->size(); ++i) {
                        if (i % size_t(n) == 0) m_groups.emplace_back();
                        addUnder(*list->ptr(i), int(m_groups.size() - 1));
                    }
                } else if (hasModuleList(*child)) {
                    walk(*child);
                }
            }
        };
        walk(net);
    }
    for (size_t i = 0; i < m_leaves.size(); ++i) {
        auto& g = m_groups[size_t(m_leaves[i].group)];
        g.leaves.push_back(i);
        g.storedBytes += m_leaves[i].storedBytes;
    }
}

int64_t NetworkOffload::storedBytes() const {
    int64_t n = 0;
    for (const auto& l : m_leaves) n += l.storedBytes;
    return n;
}

int64_t NetworkOffload::largestLeafComputeBytes() const {
    int64_t n = 0;
    for (const auto& l : m_leaves) n = std::max(n, l.computeBytes);
    return n;
}

int64_t NetworkOffload::groupBound() const {
    std::vector<int64_t> sizes;
    for (size_t g = 1; g < m_groups.size(); ++g) {
        int64_t n = 0;
        for (size_t i : m_groups[g].leaves) n += m_leaves[i].computeBytes;
        sizes.push_back(n);
    }
    std::sort(sizes.rbegin(), sizes.rend());
    int64_t bound = 0;
    for (size_t i : m_groups[0].leaves) bound += m_leaves[i].computeBytes;
    for (size_t i = 0; i < std::min<size_t>(2, sizes.size()); ++i) bound += sizes[i];
    return bound;
}

void NetworkOffload::materialise(Leaf& l) {
    for (size_t i = 0; i < l.params.size(); ++i) {
        auto t = l.onDevice[i];
        if (castsPerUse(l)) t = t.to(m_config.computeDtype);
        l.params[i].set_data(t);
    }
    if (castsPerUse(l)) m_ledger.place(&l.params, m_config.computeLabel, l.computeBytes);
    l.materialised = true;
}

void NetworkOffload::release(Leaf& l) noexcept {
    for (size_t i = 0; i < l.params.size(); ++i) l.params[i].set_data(l.placeholders[i]);
    m_ledger.remove(&l.params);
    l.materialised = false;
}

void NetworkOffload::onload(int g, bool prefetch) {
    auto& group = m_groups[size_t(g)];
    if (group.onDevice) return;
    torch::NoGradGuard noGrad;
    const bool copy = !sameHome();
    std::optional<c10::StreamGuard> onSide;
    if (m_streams && prefetch && copy) onSide.emplace(m_streams->side);
    try {
        for (size_t i : group.leaves) {
            auto& l = m_leaves[i];
            l.onDevice.clear();
            for (const auto& s : l.stored) {
                auto t = copy ? s.to(m_config.compute, l.storageDtype, /*non_blocking=*/s.is_pinned(), /*copy=*/true) : s;
                if (copy && !m_config.diskFolder.empty()) io::releaseMappedPages(s);  // read once per onload
                if (m_config.channelsLast && t.dim() == 4) t = t.contiguous(at::MemoryFormat::ChannelsLast);
                l.onDevice.push_back(t);
            }
            if (copy) m_ledger.place(&l.onDevice, m_config.computeLabel, l.storedBytes);
            // A leaf that computes in its storage dtype uses the device copy directly.
            if (!castsPerUse(l)) materialise(l);
        }
    } catch (...) {
        // Out of memory halfway: give back what was copied, so the retry starts from a clean state.
        group.onDevice = true;
        offload(g);
        throw;
    }
    if (onSide) {
        m_streams->ready[size_t(g)]->record(m_streams->side);
        group.pending = true;
    }
    group.onDevice = true;
}

void NetworkOffload::waitForPrefetch(int g) {
    auto& group = m_groups[size_t(g)];
    if (!group.pending) return;
    // The compute stream waits for the copy; the copies' memory is marked as used by the compute stream, so
    // the caching allocator does not hand it to the next prefetch while kernels still read it.
    const auto current = m_streams->guard.getStream(m_config.compute);
    m_streams->ready[size_t(g)]->block(current);
    auto* allocator = c10::getDeviceAllocator(m_config.compute.type());
    for (size_t i : group.leaves)
        for (const auto& t : m_leaves[i].onDevice) allocator->recordStream(t.storage().data_ptr(), current);
    group.pending = false;
}

void NetworkOffload::offload(int g) {
    auto& group = m_groups[size_t(g)];
    if (!group.onDevice || sameHome()) return;
    for (size_t i : group.leaves) {
        auto& l = m_leaves[i];
        release(l);
        l.onDevice.clear();
        m_ledger.remove(&l.onDevice);
    }
    group.onDevice = group.pending = false;
}

void NetworkOffload::begin() {
    m_inUse = true;
    if (m_config.mode == api::Offload::Model) onload(0, false);
}

void NetworkOffload::end() {
    for (size_t g = 0; g < m_groups.size(); ++g) offload(int(g));
    m_current = -1;
    m_inUse = false;
}

void NetworkOffload::setComputeDtype(torch::ScalarType dtype) {
    end();
    for (auto& l : m_leaves) {
        for (size_t i = 0; i < l.params.size(); ++i)
            l.placeholders[i] = placeholder(l.params[i], dtype);
        release(l);
    }
    m_config.computeDtype = dtype;
    for (auto& l : m_leaves) l.computeBytes = bytesOf(l.stored, dtype);
    for (auto& g : m_groups) g.onDevice = false;
    if (sameHome())
        for (size_t g = 0; g < m_groups.size(); ++g) onload(int(g), false);
}

void NetworkOffload::enter(torch::nn::Module& module) {
    auto& l = m_leaves[m_leafIndex.at(&module)];
    const int g = l.group;
    if (m_config.mode == api::Offload::Group && g != 0 && g != m_current) {
        if (m_current > 0) m_next[m_current] = g;
        // Only this group and the one expected next stay on the device.
        const auto next = m_next.find(g);
        const int keep = next == m_next.end() ? -1 : next->second;
        for (size_t other = 1; other < m_groups.size(); ++other)
            if (int(other) != g && int(other) != keep) offload(int(other));
        onload(g, false);
        waitForPrefetch(g);
        if (keep > 0) onload(keep, /*prefetch=*/true);
        m_current = g;
    } else {
        onload(g, false);
        waitForPrefetch(g);
    }
    if (!l.materialised) materialise(l);
}

void NetworkOffload::exit(torch::nn::Module& module) noexcept {
    auto& l = m_leaves[m_leafIndex.at(&module)];
    if (castsPerUse(l)) release(l);
    if (m_config.mode == api::Offload::Sequential) offload(l.group);
}

} // namespace dd::memory
