#pragma once
// Parsing and validation of a safetensors header. Pure C++ (no torch) so that the fuzz target and
// the malformed-file tests build in seconds. Format: ../shared/reference/sd_reference.md §1.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dd::io {

enum class DType { F64, F32, F16, BF16, F8_E4M3, F8_E5M2, I64, I32, I16, I8, U8, BOOL };

std::string_view dtypeName(DType d);          // "F32"
std::optional<DType> dtypeFromName(std::string_view name);
std::size_t dtypeSize(DType d);                // bytes per element

struct TensorInfo {
    std::string name;
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    uint64_t begin = 0;  // relative to the start of the data section
    uint64_t end = 0;    // one past the last byte
    int64_t numel() const;
    uint64_t byteSize() const { return end - begin; }
};

struct SafetensorsHeader {
    uint64_t headerLength = 0;   // N, the JSON length
    uint64_t dataOffset = 0;     // 8 + N: where the data section starts in the file
    std::vector<TensorInfo> tensors;                 // in data-offset order
    std::map<std::string, std::string> metadata;     // "__metadata__"
    const TensorInfo* find(std::string_view name) const;
};

inline constexpr uint64_t kMaxHeaderLength = 100'000'000;

// Validates everything that can be checked from the first bytes and the total file size.
// `prefix` must hold at least min(fileSize, 8 + N) bytes. Throws ModelFileError naming `path`.
SafetensorsHeader parseSafetensorsHeader(const std::string& path, const uint8_t* prefix, std::size_t prefixSize,
                                         uint64_t fileSize);

// Reads only the first bytes of the file at `path` and validates them as above. Throws ModelFileError.
SafetensorsHeader readSafetensorsHeader(const std::string& path);

// Number of bytes parseSafetensorsHeader needs: 8 + N (or 8 when the file is too short to say).
uint64_t safetensorsHeaderBytesNeeded(const uint8_t* first8, std::size_t size);

} // namespace dd::io
