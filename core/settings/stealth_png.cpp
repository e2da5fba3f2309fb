// A1111 extensions' "stealth" PNG info (sd_webui_stealth_pnginfo; also Forge, SwarmUI and NovelAI's own images):
// text kept in the lowest bit of each pixel's alpha (or of R, G and B), so it survives sites that strip text
// chunks. The bits run down each column, left to right, most significant bit first: a 15-byte signature
// ("stealth_pnginfo", "stealth_pngcomp", "stealth_rgbinfo", "stealth_rgbcomp"), the payload's length in bits
// (32-bit big-endian), the payload (UTF-8, gzip-compressed for *comp).
#include "core/settings/stealth_png.h"

#include "core/settings/generation_info.h"
#include "core/settings/image_metadata.h"

#include <cstdint>
#include <cstdlib>
#include <vector>

namespace dd::settings {
namespace {

constexpr uint64_t kMaxPixels = 16ull << 20;  // 4096 × 4096
constexpr size_t kMaxText = 1u << 20;

uint32_t be32(std::string_view s, size_t at) {
    return uint32_t(uint8_t(s[at])) << 24 | uint32_t(uint8_t(s[at + 1])) << 16 | uint32_t(uint8_t(s[at + 2])) << 8 | uint8_t(s[at + 3]);
}

struct Pixels {
    uint32_t width = 0, height = 0;
    int channels = 0;          // 3 (RGB) or 4 (RGBA), 8 bits each
    std::vector<uint8_t> rgba;  // row-major, `channels` per pixel
    uint8_t at(uint32_t x, uint32_t y, int c) const { return rgba[(size_t(y) * width + x) * size_t(channels) + size_t(c)]; }
};

uint8_t paeth(int a, int b, int c) {
    const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
    return uint8_t(pa <= pb && pa <= pc ? a : pb <= pc ? b : c);
}

// 8-bit RGB or RGBA, not interlaced: what the extensions write. Anything else: nullopt (nothing hidden there).
std::optional<Pixels> decode(std::string_view png) {
    Pixels px;
    std::string idat;
    for (size_t at = 8; at + 12 <= png.size();) {
        const uint32_t len = be32(png, at);
        if (len > png.size() - at - 12) return std::nullopt;
        const std::string_view type = png.substr(at + 4, 4), data = png.substr(at + 8, len);
        at += 12 + size_t(len);
        if (type == "IHDR" && len >= 13) {
            px.width = be32(data, 0), px.height = be32(data, 4);
            const uint8_t depth = uint8_t(data[8]), color = uint8_t(data[9]), interlace = uint8_t(data[12]);
            if (depth != 8 || interlace != 0 || (color != 2 && color != 6)) return std::nullopt;
            px.channels = color == 6 ? 4 : 3;
        } else if (type == "IDAT") {
            idat.append(data);
        } else if (type == "IEND") {
            break;
        }
    }
    if (px.channels == 0 || px.width == 0 || px.height == 0 || uint64_t(px.width) * px.height > kMaxPixels) return std::nullopt;
    const size_t stride = size_t(px.width) * size_t(px.channels);
    const auto raw = inflateCapped(idat, 15, (stride + 1) * px.height);
    if (!raw || raw->size() != (stride + 1) * px.height) return std::nullopt;
    px.rgba.resize(stride * px.height);
    const int bpp = px.channels;
    for (uint32_t y = 0; y < px.height; ++y) {
        const uint8_t filter = uint8_t((*raw)[y * (stride + 1)]);
        const auto* in = reinterpret_cast<const uint8_t*>(raw->data()) + y * (stride + 1) + 1;
        uint8_t* row = px.rgba.data() + y * stride;
        const uint8_t* up = y ? row - stride : nullptr;
        for (size_t i = 0; i < stride; ++i) {
            const int a = i >= size_t(bpp) ? row[i - size_t(bpp)] : 0, b = up ? up[i] : 0, c = up && i >= size_t(bpp) ? up[i - size_t(bpp)] : 0;
            int v = in[i];
            switch (filter) {
            case 0: break;
            case 1: v += a; break;
            case 2: v += b; break;
            case 3: v += (a + b) / 2; break;
            case 4: v += paeth(a, b, c); break;
            default: return std::nullopt;
            }
            row[i] = uint8_t(v);
        }
    }
    return px;
}

// The low bits in the extensions' order: down each column, then the next; per pixel alpha, or R, G, B.
class BitReader {
public:
    BitReader(const Pixels& px, bool rgb) : m_px(px), m_rgb(rgb) {}
    uint64_t capacity() const { return uint64_t(m_px.width) * m_px.height * (m_rgb ? 3 : 1); }
    bool next() {
        const uint64_t perPixel = m_rgb ? 3 : 1, pixel = m_bit / perPixel;
        const int channel = m_rgb ? int(m_bit % perPixel) : 3;
        ++m_bit;
        return m_px.at(uint32_t(pixel / m_px.height), uint32_t(pixel % m_px.height), channel) & 1;
    }
    std::string bytes(uint64_t n) {
        std::string out(n, '\0');
        for (auto& ch : out)
            for (int i = 0; i < 8; ++i) ch = char((uint8_t(ch) << 1) | uint8_t(next()));
        return out;
    }
    uint64_t remaining() const { return capacity() - m_bit; }

private:
    const Pixels& m_px;
    bool m_rgb;
    uint64_t m_bit = 0;
};

} // namespace

std::optional<std::string> readStealthPngInfo(std::string_view png) {
    const auto px = decode(png);
    if (!px) return std::nullopt;
    for (const bool rgb : {false, true}) {
        if (!rgb && px->channels != 4) continue;
        BitReader bits(*px, rgb);
        if (bits.capacity() < 15 * 8 + 32) return std::nullopt;
        const std::string signature = bits.bytes(15);
        const std::string kind = rgb ? "stealth_rgb" : "stealth_png";
        if (signature != kind + "info" && signature != kind + "comp") continue;
        const std::string length = bits.bytes(4);
        const uint64_t payloadBits = be32(length, 0);
        if (payloadBits % 8 || payloadBits > bits.remaining()) throw MetadataError("stealth PNG info: its length runs past the image");
        const std::string payload = bits.bytes(payloadBits / 8);
        if (signature.ends_with("info")) {
            if (payload.size() > kMaxText) throw MetadataError("stealth PNG info: over 1 MiB of text");
            return payload;
        }
        auto text = inflateCapped(payload, 31, kMaxText);
        if (!text) throw MetadataError("stealth PNG info: its gzip data is broken or inflates past 1 MiB");
        return text;
    }
    return std::nullopt;
}

} // namespace dd::settings
