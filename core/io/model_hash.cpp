// Ref: AUTOMATIC1111 modules/hashes.py (calculate_sha256, first 10 hex) and modules/sd_models.py::model_hash
// (legacy: sha256 of 0x10000 bytes at 0x100000, first 8 hex).
#include "core/io/model_hash.h"

#include "core/io/model_error.h"

#include <openssl/evp.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

namespace dd::io {
namespace {

using Digest = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;

Digest newSha256() {
    Digest ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
    if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) throw std::runtime_error("OpenSSL SHA-256 unavailable");
    return ctx;
}

std::string finishHex(EVP_MD_CTX* ctx) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_DigestFinal_ex(ctx, md, &len);
    static const char* hex = "0123456789abcdef";
    std::string out;
    for (unsigned i = 0; i < len; ++i) out += {hex[md[i] >> 4], hex[md[i] & 15]};
    return out;
}

} // namespace

ModelHashes hashModelFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ModelFileError(path, std::string("cannot open: ") + std::strerror(errno));
    constexpr uint64_t kLegacyBegin = 0x100000, kLegacyEnd = 0x110000;
    auto whole = newSha256();
    auto legacy = newSha256();
    std::vector<char> buf(1 << 20);
    uint64_t pos = 0;
    while (in) {
        in.read(buf.data(), std::streamsize(buf.size()));
        const auto n = uint64_t(in.gcount());
        if (n == 0) break;
        EVP_DigestUpdate(whole.get(), buf.data(), n);
        // The legacy window may straddle buffer boundaries: feed the overlap of [pos, pos+n).
        const uint64_t lo = std::max(pos, kLegacyBegin), hi = std::min(pos + n, kLegacyEnd);
        if (lo < hi) EVP_DigestUpdate(legacy.get(), buf.data() + (lo - pos), hi - lo);
        pos += n;
    }
    if (in.bad()) throw ModelFileError(path, "read error while hashing");
    ModelHashes h;
    h.sha256 = finishHex(whole.get());
    h.shortHash = h.sha256.substr(0, 10);
    h.legacyHash = finishHex(legacy.get()).substr(0, 8);
    return h;
}

std::string loraShortHash(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ModelFileError(path, std::string("cannot open: ") + std::strerror(errno));
    unsigned char size[8] = {};
    in.read(reinterpret_cast<char*>(size), 8);
    uint64_t headerBytes = 0;
    for (int i = 7; i >= 0; --i) headerBytes = headerBytes << 8 | size[i];
    in.seekg(std::streamoff(8 + headerBytes));
    if (in.gcount() != 8 || !in) throw ModelFileError(path, "not a safetensors file (the header is cut short)");
    auto sha = newSha256();
    std::vector<char> buf(1 << 20);
    while (in) {
        in.read(buf.data(), std::streamsize(buf.size()));
        if (in.gcount() > 0) EVP_DigestUpdate(sha.get(), buf.data(), size_t(in.gcount()));
    }
    if (in.bad()) throw ModelFileError(path, "read error while hashing");
    return finishHex(sha.get()).substr(0, 12);
}

} // namespace dd::io
