// Ref: PNG specification (ISO/IEC 15948) §11.3.4 textual chunks; Pillow PngImagePlugin.PngInfo.add_text
// (tEXt when the text encodes as Latin-1, else iTXt); A1111 modules/images.py (save_image_with_geninfo).
#include "imaging/png.h"

#include "core/queue/durable_file.h"
#include "core/settings/image_metadata.h"

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <zlib.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <stdexcept>

namespace dd::imaging {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& problem) { throw std::runtime_error(path + ": " + problem); }

void putU32(std::string& out, uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) out += char(uint8_t(v >> s));
}

std::string chunk(const std::string& type, const std::string& data) {
    std::string out;
    putU32(out, uint32_t(data.size()));
    const std::string body = type + data;
    out += body;
    putU32(out, uint32_t(crc32(0, reinterpret_cast<const Bytef*>(body.data()), uInt(body.size()))));
    return out;
}

// UTF-8 -> Latin-1, or nullopt when a character is past U+00FF (or the text is not UTF-8).
std::optional<std::string> toLatin1(const std::string& s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        const auto c = uint8_t(s[i]);
        if (c < 0x80) out += char(c);
        else if ((c == 0xC2 || c == 0xC3) && i + 1 < s.size() && (uint8_t(s[i + 1]) & 0xC0) == 0x80)
            out += char(((c & 0x03) << 6) | (uint8_t(s[++i]) & 0x3F));
        else return std::nullopt;
    }
    return out;
}

} // namespace

std::string encodePng(const api::Image& image, const std::vector<std::pair<std::string, std::string>>& text,
                      const std::vector<std::string>& alwaysItxt) {
    if (image.width <= 0 || image.height <= 0 || image.rgb.size() != std::size_t(image.width) * image.height * 3)
        throw std::runtime_error("image buffer does not match its size");
    cv::Mat rgb(image.height, image.width, CV_8UC3, const_cast<uint8_t*>(image.rgb.data()));
    cv::Mat bgr;
    cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
    std::vector<uchar> encoded;
    if (!cv::imencode(".png", bgr, encoded)) throw std::runtime_error("PNG encoding failed");
    std::string png(encoded.begin(), encoded.end());
    // Signature (8) + IHDR chunk (4 length + 4 type + 13 data + 4 CRC) = 33 bytes; text goes right after.
    std::string chunks;
    for (const auto& [k, v] : text) {
        const bool itxt = std::find(alwaysItxt.begin(), alwaysItxt.end(), k) != alwaysItxt.end();
        const auto latin1 = itxt ? std::nullopt : toLatin1(v);
        if (latin1) chunks += chunk("tEXt", k + '\0' + *latin1);
        // iTXt: keyword, NUL, compression flag 0, method 0, empty language tag NUL, empty translated keyword NUL.
        else chunks += chunk("iTXt", k + std::string(5, '\0') + v);
    }
    png.insert(33, chunks);
    return png;
}

void writePng(const std::string& path, const api::Image& image, const std::map<std::string, std::string>& text) {
    std::string png;
    try {
        png = encodePng(image, {text.begin(), text.end()});
    } catch (const std::runtime_error& e) {
        fail(path, e.what());
    }
    queue::writeFileDurably(path, png, queue::Replace::Allowed);
}

api::Image readImage(const std::string& path) {
    const cv::Mat bgr = cv::imread(path, cv::IMREAD_COLOR);
    if (bgr.empty()) fail(path, "cannot read as an image (missing, or not a format OpenCV reads)");
    cv::Mat rgb;
    cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
    api::Image img{rgb.cols, rgb.rows, {}};
    img.rgb.assign(rgb.data, rgb.data + rgb.total() * 3);
    return img;
}

std::map<std::string, std::string> readPngText(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(path, "cannot open");
    const std::string s((std::istreambuf_iterator<char>(in)), {});
    if (settings::detectImageFormat(s) != settings::ImageFormat::Png) fail(path, "not a PNG file");
    return settings::readImageText(s, path).text;
}

} // namespace dd::imaging
