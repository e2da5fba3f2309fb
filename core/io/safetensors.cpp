// Ref: huggingface/safetensors bindings/python (safe_open: mmap + frombuffer) and src/tensor.rs (serialize).
#include "core/io/safetensors.h"

#include "core/io/atomic_file.h"
#include "core/io/model_error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dd::io {
namespace {

// Every live mapping, so releaseMappedPages can tell a file view from heap memory (MADV_DONTNEED on the heap
// would zero it).
struct LiveMappings {
    std::mutex mutex;
    std::map<uintptr_t, std::size_t> ranges;  // start → size
};
LiveMappings& liveMappings() {
    static LiveMappings m;
    return m;
}

struct Mapping {
    void* addr = nullptr;
    std::size_t size = 0;
    void publish() {
        auto& live = liveMappings();
        std::lock_guard lock(live.mutex);
        live.ranges[reinterpret_cast<uintptr_t>(addr)] = size;
    }
    ~Mapping() {
        if (!addr || addr == MAP_FAILED) return;
        {
            auto& live = liveMappings();
            std::lock_guard lock(live.mutex);
            live.ranges.erase(reinterpret_cast<uintptr_t>(addr));
        }
        munmap(addr, size);
    }
};

std::string systemError(const std::string& what) { return what + ": " + std::strerror(errno); }

// Whether every page in [first, last) is still the file's: the mapping is private, so a page written through a
// view became the process's own copy, and MADV_DONTNEED would throw that write away. /proc/self/pagemap says,
// per page: bit 63 present, 62 swapped, 61 file-backed. Unreadable: not known to be clean.
bool onlyFilePages(uintptr_t first, uintptr_t last, uintptr_t page) {
    const int fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    std::vector<uint64_t> entries(4096);
    bool clean = true;
    for (uintptr_t at = first; clean && at < last;) {
        const std::size_t n = std::min<std::size_t>(entries.size(), (last - at) / page);
        const auto bytes = ssize_t(n * sizeof(uint64_t));
        if (::pread(fd, entries.data(), std::size_t(bytes), off_t(at / page * sizeof(uint64_t))) != bytes) clean = false;
        for (std::size_t i = 0; clean && i < n; ++i) {
            const uint64_t e = entries[i];
            const bool present = (e >> 63) & 1, swapped = (e >> 62) & 1, file = (e >> 61) & 1;
            clean = !swapped && (!present || file);
        }
        at += n * page;
    }
    ::close(fd);
    return clean;
}

} // namespace

void releaseMappedPages(const torch::Tensor& t) {
    if (!t.defined() || !t.device().is_cpu() || t.numel() == 0 || !t.is_contiguous()) return;
    const auto begin = reinterpret_cast<uintptr_t>(t.data_ptr());
    const auto end = begin + uintptr_t(t.numel()) * t.element_size();
    auto& live = liveMappings();
    std::lock_guard lock(live.mutex);  // held so the mapping cannot be unmapped meanwhile
    auto it = live.ranges.upper_bound(begin);
    if (it == live.ranges.begin()) return;
    --it;
    if (end > it->first + it->second) return;  // not inside a mapping
    const auto page = uintptr_t(sysconf(_SC_PAGESIZE));
    const uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
    if (last > first && onlyFilePages(first, last, page)) madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

torch::ScalarType toTorch(DType d) {
    switch (d) {
    case DType::F64: return torch::kFloat64;
    case DType::F32: return torch::kFloat32;
    case DType::F16: return torch::kFloat16;
    case DType::BF16: return torch::kBFloat16;
    case DType::F8_E4M3: return torch::kFloat8_e4m3fn;
    case DType::F8_E5M2: return torch::kFloat8_e5m2;
    case DType::I64: return torch::kInt64;
    case DType::I32: return torch::kInt32;
    case DType::I16: return torch::kInt16;
    case DType::I8: return torch::kInt8;
    case DType::U8: return torch::kUInt8;
    case DType::BOOL: return torch::kBool;
    }
    return torch::kFloat32;
}

std::optional<DType> fromTorch(torch::ScalarType t) {
    for (DType d : {DType::F64, DType::F32, DType::F16, DType::BF16, DType::F8_E4M3, DType::F8_E5M2, DType::I64,
                    DType::I32, DType::I16, DType::I8, DType::U8, DType::BOOL})
        if (toTorch(d) == t) return d;
    return std::nullopt;
}

std::shared_ptr<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw ModelFileError(path, systemError("cannot open"));
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        throw ModelFileError(path, "not a regular file");
    }
    auto mapping = std::make_shared<Mapping>();
    mapping->size = std::size_t(st.st_size);
    if (mapping->size > 0) {
        // Private + writable: tensors are zero-copy views, and an in-place op on one copies the page
        // instead of touching the file.
        mapping->addr = mmap(nullptr, mapping->size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
        if (mapping->addr == MAP_FAILED) {
            ::close(fd);
            throw ModelFileError(path, systemError("cannot memory-map"));
        }
        mapping->publish();
    }
    ::close(fd);

    auto file = std::shared_ptr<SafetensorsFile>(new SafetensorsFile());
    file->m_path = path;
    file->m_size = mapping->size;
    file->m_base = static_cast<const uint8_t*>(mapping->addr);
    // At least 64 bytes so that a Git LFS pointer is recognised whatever its first 8 bytes claim.
    const uint64_t need = std::min<uint64_t>(
        file->m_size, std::max<uint64_t>(64, safetensorsHeaderBytesNeeded(file->m_base, file->m_size)));
    file->m_header = parseSafetensorsHeader(path, file->m_base, need, file->m_size);
    file->m_mapping = mapping;
    return file;
}

SafetensorsFile::~SafetensorsFile() = default;

torch::Tensor SafetensorsFile::tensor(std::string_view name) const {
    const TensorInfo* info = m_header.find(name);
    if (!info) throw ModelFileError(m_path, "no tensor named '" + std::string(name) + "'");
    const auto type = toTorch(info->dtype);
    auto options = torch::TensorOptions().dtype(type).device(torch::kCPU);
    if (info->byteSize() == 0) return torch::empty(info->shape, options);
    auto* bytes = const_cast<uint8_t*>(data(*info));
    if (reinterpret_cast<uintptr_t>(bytes) % dtypeSize(info->dtype) != 0) {
        // safetensors pads only the header, so a tensor may sit misaligned: copy it out.
        auto t = torch::empty(info->shape, options);
        std::memcpy(t.data_ptr(), bytes, info->byteSize());
        return t;
    }
    auto keepAlive = m_mapping;  // the view keeps the mapping alive, not the whole file object
    return torch::from_blob(bytes, info->shape, [keepAlive](void*) {}, options);
}

TensorMap SafetensorsFile::all() const {
    TensorMap out;
    for (const auto& t : m_header.tensors) out.emplace(t.name, tensor(t.name));
    return out;
}

void writeSafetensors(const std::string& path, const TensorMap& tensors, const std::map<std::string, std::string>& metadata) {
    struct Entry {
        const std::string* name;
        torch::Tensor data;  // contiguous CPU
        DType dtype;
    };
    std::vector<Entry> entries;
    for (const auto& [name, t] : tensors) {
        const auto d = fromTorch(t.scalar_type());
        if (!d) throw ModelFileError(path, "tensor '" + name + "' has a dtype safetensors cannot store");
        entries.push_back({&name, t.to(torch::kCPU).contiguous(), *d});
    }
    // Largest alignment first keeps every tensor naturally aligned (the reference writer's order).
    std::stable_sort(entries.begin(), entries.end(),
                     [](const Entry& a, const Entry& b) { return dtypeSize(a.dtype) > dtypeSize(b.dtype); });

    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    if (!metadata.empty()) header["__metadata__"] = metadata;
    uint64_t offset = 0;
    for (const auto& e : entries) {
        const uint64_t bytes = uint64_t(e.data.numel()) * dtypeSize(e.dtype);
        header[*e.name] = {{"dtype", dtypeName(e.dtype)}, {"shape", e.data.sizes().vec()}, {"data_offsets", {offset, offset + bytes}}};
        offset += bytes;
    }
    std::string json = header.dump();
    json.append((8 - json.size() % 8) % 8, ' ');

    writeFileAtomically(path, [&](std::ostream& out) {
        uint8_t len[8];
        for (int i = 0; i < 8; ++i) len[i] = uint8_t(uint64_t(json.size()) >> (8 * i));
        out.write(reinterpret_cast<const char*>(len), 8);
        out.write(json.data(), std::streamsize(json.size()));
        for (const auto& e : entries)
            out.write(static_cast<const char*>(e.data.data_ptr()), std::streamsize(e.data.numel() * dtypeSize(e.dtype)));
    });
}

} // namespace dd::io
