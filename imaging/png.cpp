// Ref: PNG specification (ISO/IEC 15948) §11.3.4 textual chunks; A1111 modules/images.py (save_image_with_geninfo).
#include "imaging/png.h"

#include "core/io/atomic_file.h"

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <zlib.h>

#include <fstream>
#include <stdexcept>

namespace dd::imaging {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& problem) { throw std::runtime_error(path + ": " + problem); }

void putU32(std::string& out, uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) out += char(uint8_t(v >> s));
}

uint32_t getU32(const std::string& s, std::size_t at) {
    return uint32_t(uint8_t(s[at])) << 24 | uint32_t(uint8_t(s[at + 1])) << 16 | uint32_t(uint8_t(s[at + 2])) << 8 |
           uint32_t(uint8_t(s[at + 3]));
}

std::string chunk(const std::string& type, const std::string& data) {
    std::string out;
    putU32(out, uint32_t(data.size()));
    const std::string body = type + data;
    out += body;
    putU32(out, uint32_t(crc32(0, reinterpret_cast<const Bytef*>(body.data()), uInt(body.size()))));
    return out;
}

// iTXt: keyword, NUL, compression flag 0, method 0, empty language tag NUL, empty translated keyword NUL, text.
std::string itxt(const std::string& key, const std::string& text) {
    return chunk("iTXt", key + std::string(5, '\0') + text);
}

std::string inflate(const std::string& data) {
    std::string out(std::max<std::size_t>(data.size() * 4, 1024), '\0');
    for (;;) {
        uLongf len = uLongf(out.size());
        const int rc = uncompress(reinterpret_cast<Bytef*>(out.data()), &len, reinterpret_cast<const Bytef*>(data.data()), uLong(data.size()));
        if (rc == Z_OK) return out.substr(0, len);
        if (rc != Z_BUF_ERROR || out.size() > (64u << 20)) throw std::runtime_error("bad compressed text chunk");
        out.resize(out.size() * 4);
    }
}

} // namespace

void writePng(const std::string& path, const pipeline::Image& image, const std::map<std::string, std::string>& text) {
    if (image.rgb.size() != std::size_t(image.width) * image.height * 3) fail(path, "image buffer does not match its size");
    cv::Mat rgb(image.height, image.width, CV_8UC3, const_cast<uint8_t*>(image.rgb.data()));
    cv::Mat bgr;
    cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
    std::vector<uchar> encoded;
    if (!cv::imencode(".png", bgr, encoded)) fail(path, "PNG encoding failed");
    std::string png(encoded.begin(), encoded.end());
    // Signature (8) + IHDR chunk (4 length + 4 type + 13 data + 4 CRC) = 33 bytes; text goes right after.
    std::string chunks;
    for (const auto& [k, v] : text) chunks += itxt(k, v);
    png.insert(33, chunks);

    io::writeFileAtomically(path, [&](std::ostream& out) { out.write(png.data(), std::streamsize(png.size())); });
}

pipeline::Image readImage(const std::string& path) {
    const cv::Mat bgr = cv::imread(path, cv::IMREAD_COLOR);
    if (bgr.empty()) fail(path, "cannot read as an image (missing, or not a format OpenCV reads)");
    cv::Mat rgb;
    cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
    pipeline::Image img{rgb.cols, rgb.rows, {}};
    img.rgb.assign(rgb.data, rgb.data + rgb.total() * 3);
    return img;
}

std::map<std::string, std::string> readPngText(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(path, "cannot open");
    const std::string s((std::istreambuf_iterator<char>(in)), {});
    if (s.size() < 8 || s.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) fail(path, "not a PNG file");
    std::map<std::string, std::string> out;
    for (std::size_t at = 8; at + 12 <= s.size();) {
        const uint32_t len = getU32(s, at);
        if (at + 12 + uint64_t(len) > s.size()) fail(path, "truncated PNG chunk");
        const std::string type = s.substr(at + 4, 4), data = s.substr(at + 8, len);
        at += 12 + len;
        const auto nul = data.find('\0');
        if (nul == std::string::npos) continue;
        const std::string key = data.substr(0, nul);
        try {
            if (type == "tEXt") {
                out[key] = data.substr(nul + 1);
            } else if (type == "zTXt" && nul + 2 <= data.size()) {
                out[key] = inflate(data.substr(nul + 2));
            } else if (type == "iTXt" && nul + 3 <= data.size()) {
                const bool compressed = data[nul + 1] != 0;
                const auto lang = data.find('\0', nul + 3);
                const auto trans = lang == std::string::npos ? lang : data.find('\0', lang + 1);
                if (trans == std::string::npos) continue;
                const std::string body = data.substr(trans + 1);
                out[key] = compressed ? inflate(body) : body;
            }
        } catch (const std::runtime_error& e) {
            fail(path, std::string("chunk '") + key + "': " + e.what());
        }
        if (type == "IEND") break;
    }
    return out;
}

} // namespace dd::imaging
