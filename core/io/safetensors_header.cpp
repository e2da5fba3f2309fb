// Ref: huggingface/safetensors safetensors/src/tensor.rs (SafeTensors::read_metadata, Metadata::validate).
// Stricter in one way: every problem gets its own message naming the tensor and absolute byte offsets.
#include "core/io/safetensors_header.h"

#include "core/io/model_error.h"
#include "core/io/text_format.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

namespace dd::io {
namespace {

struct DTypeEntry {
    DType dtype;
    std::string_view name;
    std::size_t size;
};
constexpr std::array<DTypeEntry, 12> kDTypes{{
    {DType::F64, "F64", 8}, {DType::F32, "F32", 4}, {DType::F16, "F16", 2}, {DType::BF16, "BF16", 2},
    {DType::F8_E4M3, "F8_E4M3", 1}, {DType::F8_E5M2, "F8_E5M2", 1}, {DType::I64, "I64", 8},
    {DType::I32, "I32", 4}, {DType::I16, "I16", 2}, {DType::I8, "I8", 1}, {DType::U8, "U8", 1},
    {DType::BOOL, "BOOL", 1},
}};

// Returns the offset of the first byte that breaks UTF-8, or npos.
std::size_t firstInvalidUtf8(const uint8_t* s, std::size_t n) {
    std::size_t i = 0;
    while (i < n) {
        const uint8_t c = s[i];
        std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
        if (len == 0 || i + len > n || (len == 2 && c < 0xC2) || (len == 4 && c > 0xF4)) return i;
        for (std::size_t k = 1; k < len; ++k)
            if ((s[i + k] & 0xC0) != 0x80) return i;
        if (len == 3) {
            const uint32_t cp = ((c & 0x0F) << 12) | ((s[i + 1] & 0x3F) << 6);
            if (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
        }
        if (len == 4) {
            const uint32_t cp = ((c & 0x07) << 18) | ((s[i + 1] & 0x3F) << 12);
            if (cp < 0x10000 || cp > 0x10FFFF) return i;
        }
        i += len;
    }
    return std::string::npos;
}

bool looksLikeGitLfsPointer(const uint8_t* p, std::size_t n) {
    static constexpr std::string_view kLfs = "version https://git-lfs";
    return n >= kLfs.size() && std::memcmp(p, kLfs.data(), kLfs.size()) == 0;
}

uint64_t readLength(const uint8_t* p) {
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | p[i];
    return n;
}

// Parses JSON and rejects duplicate keys in the top-level object (nlohmann would keep the last one silently).
nlohmann::json parseRejectingDuplicates(const std::string& path, std::string_view text) {
    std::set<std::string> seen;
    std::string duplicate;
    auto callback = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
        if (event == nlohmann::json::parse_event_t::key && depth == 1 && duplicate.empty()) {
            const auto& key = parsed.get_ref<const std::string&>();
            if (!seen.insert(key).second) duplicate = key;
        }
        return true;
    };
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text.begin(), text.end(), callback);
    } catch (const nlohmann::json::parse_error& e) {
        // e.byte is 1-based within the header; the header starts at file byte 8.
        throw ModelFileError(path, "the safetensors header is not valid JSON (at file byte " +
                                       withThousands(8 + (e.byte ? e.byte - 1 : 0)) + ")");
    } catch (const nlohmann::json::exception& e) {
        // e.g. a number too large for any JSON number type (found by fuzzing).
        throw ModelFileError(path, std::string("the safetensors header cannot be read: ") + e.what());
    }
    if (!duplicate.empty()) throw ModelFileError(path, "tensor '" + duplicate + "' appears twice in the header");
    return j;
}

std::vector<int64_t> parseShape(const std::string& path, const std::string& name, const nlohmann::json& shape) {
    if (!shape.is_array()) throw ModelFileError(path, "tensor '" + name + "': \"shape\" is not a list");
    std::vector<int64_t> dims;
    for (const auto& d : shape) {
        if (d.is_number_unsigned()) {
            const uint64_t v = d.get<uint64_t>();
            if (v > uint64_t(INT64_MAX)) throw ModelFileError(path, "tensor '" + name + "': dimension " + d.dump() + " is too large");
            dims.push_back(int64_t(v));
        } else if (d.is_number_integer()) {
            throw ModelFileError(path, "tensor '" + name + "': negative dimension " + d.dump() + " in shape " + shape.dump());
        } else {
            throw ModelFileError(path, "tensor '" + name + "': dimension " + d.dump() + " in shape " + shape.dump() +
                                           " is not a non-negative integer");
        }
    }
    return dims;
}

TensorInfo parseTensorEntry(const std::string& path, const std::string& name, const nlohmann::json& e) {
    if (!e.is_object()) throw ModelFileError(path, "tensor '" + name + "': header entry is not an object");
    TensorInfo t;
    t.name = name;
    const auto dtype = e.find("dtype");
    if (dtype == e.end() || !dtype->is_string()) throw ModelFileError(path, "tensor '" + name + "': missing \"dtype\"");
    const auto parsed = dtypeFromName(dtype->get_ref<const std::string&>());
    if (!parsed)
        throw ModelFileError(path, "tensor '" + name + "': unknown dtype \"" + dtype->get<std::string>() +
                                       "\" (supported: F64 F32 F16 BF16 F8_E4M3 F8_E5M2 I64 I32 I16 I8 U8 BOOL)");
    t.dtype = *parsed;
    const auto shape = e.find("shape");
    if (shape == e.end()) throw ModelFileError(path, "tensor '" + name + "': missing \"shape\"");
    t.shape = parseShape(path, name, *shape);
    const auto offsets = e.find("data_offsets");
    if (offsets == e.end() || !offsets->is_array() || offsets->size() != 2 || !(*offsets)[0].is_number_unsigned() ||
        !(*offsets)[1].is_number_unsigned())
        throw ModelFileError(path, "tensor '" + name + "': \"data_offsets\" must be two non-negative integers");
    t.begin = (*offsets)[0].get<uint64_t>();
    t.end = (*offsets)[1].get<uint64_t>();
    if (t.end < t.begin)
        throw ModelFileError(path, "tensor '" + name + "': data offsets out of order (ends at " + withThousands(t.end) +
                                       " before it begins at " + withThousands(t.begin) + ")");
    // numel × itemsize must not overflow and must equal the stated byte range.
    unsigned __int128 bytes = dtypeSize(t.dtype);
    for (int64_t d : t.shape) {
        bytes *= uint64_t(d);
        if (bytes > uint64_t(INT64_MAX))
            throw ModelFileError(path, "tensor '" + name + "': shape " + shape->dump() + " overflows (too many elements)");
    }
    if (uint64_t(bytes) != t.byteSize())
        throw ModelFileError(path, "tensor '" + name + "': shape " + shape->dump() + " of " + std::string(dtypeName(t.dtype)) +
                                       " needs " + withThousands(uint64_t(bytes)) + " bytes but its data offsets span " +
                                       withThousands(t.byteSize()));
    return t;
}

std::map<std::string, std::string> parseMetadata(const std::string& path, const nlohmann::json& m) {
    if (!m.is_object()) throw ModelFileError(path, "\"__metadata__\" is not an object of strings");
    std::map<std::string, std::string> out;
    for (const auto& [k, v] : m.items()) {
        if (!v.is_string()) throw ModelFileError(path, "\"__metadata__\" value for '" + k + "' is not a string");
        out[k] = v.get<std::string>();
    }
    return out;
}

// Sorted by offset, the tensors must tile the data section exactly: no overlap, no hole, nothing past the end.
void checkLayout(const std::string& path, const SafetensorsHeader& h, uint64_t fileSize) {
    const uint64_t dataSize = fileSize - h.dataOffset;
    uint64_t expected = 0;
    const TensorInfo* prev = nullptr;
    for (const auto& t : h.tensors) {
        const uint64_t absBegin = h.dataOffset + t.begin, absEnd = h.dataOffset + t.end;
        if (t.begin < expected)
            throw ModelFileError(path, "tensor '" + t.name + "' (bytes " + withThousands(absBegin) + "–" + withThousands(absEnd) +
                                           ") overlaps tensor '" + prev->name + "' which ends at byte " +
                                           withThousands(h.dataOffset + expected));
        if (t.begin > expected && t.begin >= dataSize)
            throw ModelFileError(path, "tensor '" + t.name + "' starts at byte " + withThousands(absBegin) +
                                           ", out of bounds: the file has " + withThousands(fileSize) + " bytes");
        if (t.begin > expected)
            throw ModelFileError(path, "hole of " + withThousands(t.begin - expected) + " unused bytes before tensor '" + t.name +
                                           "' (bytes " + withThousands(h.dataOffset + expected) + "–" + withThousands(absBegin) + ")");
        if (t.end > dataSize)
            throw ModelFileError(path, "truncated: tensor '" + t.name + "' ends at byte " + withThousands(absEnd) +
                                           " but the file has " + withThousands(fileSize) + " bytes");
        expected = t.end;
        prev = &t;
    }
    if (expected != dataSize)
        throw ModelFileError(path, "hole of " + withThousands(dataSize - expected) + " unused bytes at the end of the file (bytes " +
                                       withThousands(h.dataOffset + expected) + "–" + withThousands(fileSize) + ")");
}

} // namespace

std::string_view dtypeName(DType d) {
    for (const auto& e : kDTypes)
        if (e.dtype == d) return e.name;
    return "?";
}

std::optional<DType> dtypeFromName(std::string_view name) {
    for (const auto& e : kDTypes)
        if (e.name == name) return e.dtype;
    return std::nullopt;
}

std::size_t dtypeSize(DType d) {
    for (const auto& e : kDTypes)
        if (e.dtype == d) return e.size;
    return 0;
}

int64_t TensorInfo::numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

const TensorInfo* SafetensorsHeader::find(std::string_view name) const {
    for (const auto& t : tensors)
        if (t.name == name) return &t;
    return nullptr;
}

uint64_t safetensorsHeaderBytesNeeded(const uint8_t* first8, std::size_t size) {
    if (size < 8) return 8;
    const uint64_t n = readLength(first8);
    return n > kMaxHeaderLength ? 8 : 8 + n;
}

SafetensorsHeader parseSafetensorsHeader(const std::string& path, const uint8_t* prefix, std::size_t prefixSize,
                                         uint64_t fileSize) {
    if (looksLikeGitLfsPointer(prefix, prefixSize))
        throw ModelFileError(path, "this is a Git LFS pointer, not the model: the real file was never downloaded "
                                   "(run `git lfs pull` in its repository, or download the file itself)");
    if (fileSize < 8)
        throw ModelFileError(path, "file is " + withThousands(fileSize) + " bytes, too short to be safetensors (needs at least 8)");
    SafetensorsHeader h;
    h.headerLength = readLength(prefix);
    if (h.headerLength > kMaxHeaderLength)
        throw ModelFileError(path, "header length " + withThousands(h.headerLength) + " bytes exceeds the 100,000,000-byte limit "
                                   "(not a safetensors file, or a corrupted one)");
    if (h.headerLength > fileSize - 8)
        throw ModelFileError(path, "header length " + withThousands(h.headerLength) + " bytes runs past the end of the file (" +
                                       withThousands(fileSize) + " bytes)");
    h.dataOffset = 8 + h.headerLength;
    if (prefixSize < h.dataOffset) throw ModelFileError(path, "internal: header bytes not supplied");
    const uint8_t* json = prefix + 8;
    if (h.headerLength == 0 || json[0] != '{')
        throw ModelFileError(path, "header does not start with '{' (not a safetensors file)");
    if (auto bad = firstInvalidUtf8(json, h.headerLength); bad != std::string::npos)
        throw ModelFileError(path, "header is not valid UTF-8 (byte " + withThousands(8 + bad) + ")");

    const auto j = parseRejectingDuplicates(path, {reinterpret_cast<const char*>(json), h.headerLength});
    if (!j.is_object()) throw ModelFileError(path, "header is not a JSON object");
    for (const auto& [name, entry] : j.items()) {
        if (name == "__metadata__")
            h.metadata = parseMetadata(path, entry);
        else
            h.tensors.push_back(parseTensorEntry(path, name, entry));
    }
    std::stable_sort(h.tensors.begin(), h.tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    checkLayout(path, h, fileSize);
    return h;
}

SafetensorsHeader readSafetensorsHeader(const std::string& path) {
    std::error_code ec;
    const uint64_t size = std::filesystem::file_size(path, ec);
    if (ec) throw ModelFileError(path, "cannot be read (" + ec.message() + ")");
    std::ifstream in(path, std::ios::binary);
    std::vector<uint8_t> prefix(8);
    if (!in.read(reinterpret_cast<char*>(prefix.data()), std::streamsize(std::min<uint64_t>(size, 8))))
        return parseSafetensorsHeader(path, prefix.data(), 0, size);  // too short: says so
    prefix.resize(std::min<uint64_t>(size, safetensorsHeaderBytesNeeded(prefix.data(), 8)));
    if (prefix.size() > 8 && !in.read(reinterpret_cast<char*>(prefix.data() + 8), std::streamsize(prefix.size() - 8)))
        throw ModelFileError(path, "cannot be read");
    return parseSafetensorsHeader(path, prefix.data(), prefix.size(), size);
}

} // namespace dd::io
