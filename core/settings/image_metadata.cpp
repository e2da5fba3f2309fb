// Ref: PNG (ISO/IEC 15948) §11.3.4 tEXt/zTXt/iTXt; JPEG (ITU T.81) marker segments; EXIF 2.32 §4.6.5
// UserComment; WebP container (RIFF, EXIF and "XMP " chunks); XMP part 1 (rdf:Description properties).
#include "core/settings/image_metadata.h"

#include "core/settings/generation_info.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <optional>

namespace dd::settings {
namespace {

constexpr std::size_t kMaxTotalText = 64u << 20;  // Pillow's MAX_TEXT_MEMORY
constexpr int kMaxChunks = 4096;

[[noreturn]] void broken(std::string_view name, const std::string& what) {
    throw MetadataError(std::string(name) + ": " + what);
}

uint32_t be32(std::string_view s, std::size_t at) {
    return uint32_t(uint8_t(s[at])) << 24 | uint32_t(uint8_t(s[at + 1])) << 16 | uint32_t(uint8_t(s[at + 2])) << 8 |
           uint32_t(uint8_t(s[at + 3]));
}
uint32_t le32(std::string_view s, std::size_t at) {
    return uint32_t(uint8_t(s[at])) | uint32_t(uint8_t(s[at + 1])) << 8 | uint32_t(uint8_t(s[at + 2])) << 16 |
           uint32_t(uint8_t(s[at + 3])) << 24;
}

void appendUtf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out += char(cp);
    } else if (cp < 0x800) {
        out += char(0xC0 | (cp >> 6));
        out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += char(0xE0 | (cp >> 12));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    } else {
        out += char(0xF0 | (cp >> 18));
        out += char(0x80 | ((cp >> 12) & 0x3F));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    }
}

std::string latin1ToUtf8(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (const char c : s) appendUtf8(out, uint8_t(c));
    return out;
}

} // namespace

std::optional<std::string> inflateCapped(std::string_view data, int windowBits, std::size_t cap, bool* tooLarge) {
    z_stream z{};
    if (inflateInit2(&z, windowBits) != Z_OK) return std::nullopt;
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    z.avail_in = uInt(data.size());
    std::string out;
    char buf[16384];
    int rc = Z_OK;
    while (rc == Z_OK) {
        z.next_out = reinterpret_cast<Bytef*>(buf);
        z.avail_out = sizeof buf;
        rc = inflate(&z, Z_NO_FLUSH);
        out.append(buf, sizeof buf - z.avail_out);
        if (out.size() > cap) {
            if (tooLarge) *tooLarge = true;
            inflateEnd(&z);
            return std::nullopt;
        }
        if (rc == Z_BUF_ERROR && z.avail_in == 0) break;
    }
    inflateEnd(&z);
    if (rc != Z_STREAM_END) return std::nullopt;
    return out;
}

namespace {

class TextSink {
public:
    TextSink(ImageText& t, std::string_view name) : m_t(t), m_name(name) {}
    void add(const std::string& key, std::string value) {
        if (value.size() > kMaxMetadataText) {
            m_t.warnings.push_back(std::string(m_name) + ": text '" + key.substr(0, 80) + "' has " +
                                   std::to_string(value.size()) + " bytes, more than the 1 MiB limit; ignored");
            return;
        }
        if (m_total + value.size() > kMaxTotalText) {
            m_t.warnings.push_back(std::string(m_name) + ": more than 64 MiB of text; the rest is ignored");
            return;
        }
        m_total += value.size();
        m_t.text[key] = std::move(value);
    }
    void warn(const std::string& w) { m_t.warnings.push_back(std::string(m_name) + ": " + w); }

private:
    ImageText& m_t;
    std::string_view m_name;
    std::size_t m_total = 0;
};

void readPng(std::string_view s, TextSink& sink) {
    int chunks = 0;
    for (std::size_t at = 8; at < s.size(); ++chunks) {
        if (chunks >= kMaxChunks) return sink.warn("more than 4096 chunks; the rest is ignored");
        if (s.size() - at < 12) return sink.warn("truncated after byte " + std::to_string(at));
        const uint32_t len = be32(s, at);
        if (len > 0x7FFFFFFFu || s.size() - at - 12 < len)
            return sink.warn("chunk at byte " + std::to_string(at) + " runs past the end of the file (truncated?)");
        const std::string_view type = s.substr(at + 4, 4);
        const std::string_view data = s.substr(at + 8, len);
        at += 12 + std::size_t(len);
        if (type == "IEND") break;
        if (type != "tEXt" && type != "zTXt" && type != "iTXt") continue;
        const auto nul = data.find('\0');
        if (nul == std::string_view::npos || nul == 0 || nul > 79) {
            sink.warn(std::string(type) + " chunk without a valid keyword; ignored");
            continue;
        }
        const std::string key = latin1ToUtf8(data.substr(0, nul));
        const std::string_view rest = data.substr(nul + 1);
        bool tooLarge = false;
        if (type == "tEXt") {
            sink.add(key, latin1ToUtf8(rest));
            continue;
        }
        std::optional<std::string> text;
        if (type == "zTXt") {
            if (rest.empty() || rest[0] != 0) { sink.warn("zTXt '" + key + "': unknown compression; ignored"); continue; }
            if (auto t = inflateCapped(rest.substr(1), 15, kMaxMetadataText, &tooLarge)) text = latin1ToUtf8(*t);
        } else {  // iTXt: flag, method, language\0, translated keyword\0, text
            if (rest.size() < 2) { sink.warn("iTXt '" + key + "' is truncated; ignored"); continue; }
            const bool compressed = rest[0] != 0;
            const auto lang = rest.find('\0', 2);
            const auto trans = lang == std::string_view::npos ? lang : rest.find('\0', lang + 1);
            if (trans == std::string_view::npos) { sink.warn("iTXt '" + key + "' is truncated; ignored"); continue; }
            const std::string_view body = rest.substr(trans + 1);
            if (!compressed) text = std::string(body);
            else if (rest[1] == 0) text = inflateCapped(body, 15, kMaxMetadataText, &tooLarge);
        }
        if (text) sink.add(key, std::move(*text));
        else if (tooLarge) sink.warn("text '" + key + "' inflates past the 1 MiB limit; ignored");
        else sink.warn("text '" + key + "' has broken compressed data; ignored");
    }
}

void readExifAndXmp(std::string_view exif, std::string_view xmp, TextSink& sink, std::string_view name) {
    if (!exif.empty()) {
        try {
            if (auto c = exifUserComment(exif, name); !c.empty()) sink.add("parameters", std::move(c));
        } catch (const MetadataError& e) {
            sink.warn(std::string("EXIF: ") + e.what());
        }
    }
    if (!xmp.empty())
        if (auto v = xmpProperty(xmp, "diffusiondesk:settings"); !v.empty()) sink.add("diffusiondesk", std::move(v));
}

void readJpeg(std::string_view s, TextSink& sink, std::string_view name) {
    static constexpr std::string_view kXmpId("http://ns.adobe.com/xap/1.0/\0", 29);
    std::size_t at = 2;
    for (int segments = 0; at + 4 <= s.size() && segments < kMaxChunks; ++segments) {
        if (uint8_t(s[at]) != 0xFF) return sink.warn("no JPEG marker at byte " + std::to_string(at));
        const uint8_t marker = uint8_t(s[at + 1]);
        if (marker == 0xFF) { ++at; continue; }  // fill byte
        if (marker == 0xD8 || marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) { at += 2; continue; }
        if (marker == 0xDA || marker == 0xD9) return;  // image data follows: metadata segments come before it
        const std::size_t len = std::size_t(uint8_t(s[at + 2])) << 8 | uint8_t(s[at + 3]);
        if (len < 2 || at + 2 + len > s.size()) return sink.warn("segment at byte " + std::to_string(at) + " runs past the end");
        const std::string_view data = s.substr(at + 4, len - 2);
        at += 2 + len;
        if (marker != 0xE1) continue;
        if (data.substr(0, 6) == std::string_view("Exif\0\0", 6)) readExifAndXmp(data, {}, sink, name);
        else if (data.substr(0, kXmpId.size()) == kXmpId) readExifAndXmp({}, data.substr(kXmpId.size()), sink, name);
    }
}

void readWebp(std::string_view s, TextSink& sink, std::string_view name) {
    const std::size_t end = std::min<std::size_t>(s.size(), std::size_t(le32(s, 4)) + 8);
    std::size_t at = 12;
    for (int chunks = 0; at + 8 <= end && chunks < kMaxChunks; ++chunks) {
        const std::string_view type = s.substr(at, 4);
        const std::size_t len = le32(s, at + 4);
        if (len > end - at - 8) return sink.warn("chunk '" + std::string(type) + "' runs past the end of the file");
        const std::string_view data = s.substr(at + 8, len);
        at += 8 + len + (len & 1);
        if (type == "EXIF") readExifAndXmp(data, {}, sink, name);
        else if (type == "XMP ") readExifAndXmp({}, data, sink, name);
    }
}

std::optional<std::string> utf16ToUtf8(std::string_view b, bool bigEndian, int* asciiUnits) {
    std::string out;
    *asciiUnits = 0;
    for (std::size_t i = 0; i + 1 < b.size(); i += 2) {
        auto unit = [&](std::size_t k) {
            return bigEndian ? uint32_t(uint8_t(b[k])) << 8 | uint8_t(b[k + 1]) : uint32_t(uint8_t(b[k + 1])) << 8 | uint8_t(b[k]);
        };
        uint32_t cp = unit(i);
        if (cp >= 0xDC00 && cp <= 0xDFFF) return std::nullopt;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (i + 3 >= b.size()) return std::nullopt;
            const uint32_t lo = unit(i + 2);
            if (lo < 0xDC00 || lo > 0xDFFF) return std::nullopt;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            i += 2;
        }
        if (cp < 0x80) ++*asciiUnits;
        appendUtf8(out, cp);
    }
    return out;
}

} // namespace

const char* imageFormatName(ImageFormat f) {
    switch (f) {
    case ImageFormat::Png: return "png";
    case ImageFormat::Jpeg: return "jpeg";
    case ImageFormat::Webp: return "webp";
    case ImageFormat::Unknown: break;
    }
    return "unknown";
}

ImageFormat imageFormatFromExtension(std::string_view path) {
    const size_t dot = path.find_last_of("./");
    if (dot == std::string_view::npos || path[dot] != '.') return ImageFormat::Unknown;
    std::string ext(path.substr(dot + 1));
    for (char& c : ext) c = char(std::tolower(static_cast<unsigned char>(c)));
    if (ext == "png") return ImageFormat::Png;
    if (ext == "jpg" || ext == "jpeg") return ImageFormat::Jpeg;
    if (ext == "webp") return ImageFormat::Webp;
    return ImageFormat::Unknown;
}

ImageFormat detectImageFormat(std::string_view s) {
    if (s.substr(0, 8) == std::string_view("\x89PNG\r\n\x1a\n", 8)) return ImageFormat::Png;
    if (s.size() >= 3 && uint8_t(s[0]) == 0xFF && uint8_t(s[1]) == 0xD8 && uint8_t(s[2]) == 0xFF) return ImageFormat::Jpeg;
    if (s.size() >= 12 && s.substr(0, 4) == "RIFF" && s.substr(8, 4) == "WEBP") return ImageFormat::Webp;
    return ImageFormat::Unknown;
}

ImageText readImageText(std::string_view bytes, std::string_view name) {
    ImageText t;
    t.format = detectImageFormat(bytes);
    TextSink sink(t, name);
    switch (t.format) {
    case ImageFormat::Png: readPng(bytes, sink); break;
    case ImageFormat::Jpeg: readJpeg(bytes, sink, name); break;
    case ImageFormat::Webp: readWebp(bytes, sink, name); break;
    case ImageFormat::Unknown: broken(name, "not a PNG, JPEG or WebP file");
    }
    return t;
}

std::string exifUserComment(std::string_view exif, std::string_view name) {
    if (exif.substr(0, 6) == std::string_view("Exif\0\0", 6)) exif.remove_prefix(6);
    if (exif.size() < 8) broken(name, "EXIF block too short");
    bool big = false;
    if (exif.substr(0, 4) == std::string_view("MM\0*", 4)) big = true;
    else if (exif.substr(0, 4) != std::string_view("II*\0", 4)) broken(name, "EXIF block without a TIFF header");
    auto u16 = [&](std::size_t at) { return big ? uint32_t(uint8_t(exif[at])) << 8 | uint8_t(exif[at + 1]) : uint32_t(uint8_t(exif[at + 1])) << 8 | uint8_t(exif[at]); };
    auto u32 = [&](std::size_t at) { return big ? be32(exif, at) : le32(exif, at); };
    // One IFD: returns (count, value field offset) of `tag`, or nullopt.
    auto find = [&](std::size_t ifd, uint32_t tag) -> std::optional<std::pair<uint32_t, std::size_t>> {
        if (ifd + 2 > exif.size()) broken(name, "EXIF directory offset " + std::to_string(ifd) + " is past the end");
        const std::size_t n = u16(ifd);
        if (ifd + 2 + n * 12 > exif.size()) broken(name, "EXIF directory at " + std::to_string(ifd) + " is truncated");
        for (std::size_t i = 0; i < n; ++i) {
            const std::size_t e = ifd + 2 + i * 12;
            if (u16(e) == tag) return std::make_pair(u32(e + 4), e + 8);
        }
        return std::nullopt;
    };
    const auto exifIfd = find(u32(4), 0x8769);
    if (!exifIfd) return {};
    const auto uc = find(u32(exifIfd->second), 0x9286);
    if (!uc) return {};
    const uint32_t count = uc->first;
    const std::size_t at = count <= 4 ? uc->second : u32(uc->second);
    if (count > kMaxMetadataText * 2 + 8) broken(name, "EXIF UserComment is larger than the 1 MiB limit");
    if (at > exif.size() || count > exif.size() - at) broken(name, "EXIF UserComment runs past the end of the block");
    std::string_view v = exif.substr(at, count);
    if (v.size() < 8) return {};
    const std::string_view charset = v.substr(0, 8);
    v.remove_prefix(8);
    std::string text;
    if (charset == std::string_view("UNICODE\0", 8)) {
        int a1 = 0, a2 = 0;
        auto first = utf16ToUtf8(v, big, &a1);
        auto second = utf16ToUtf8(v, !big, &a2);
        if (first && (!second || a1 >= a2)) text = std::move(*first);
        else if (second) text = std::move(*second);
        else broken(name, "EXIF UserComment is not valid UTF-16");
    } else if (charset == std::string_view("ASCII\0\0\0", 8) || charset == std::string_view("\0\0\0\0\0\0\0\0", 8)) {
        text = std::string(v);
    } else {
        broken(name, "EXIF UserComment uses a character set DiffusionDesk does not read (JIS?)");
    }
    while (!text.empty() && (text.back() == '\0' || text.back() == ' ')) text.pop_back();
    return text;
}

std::string encodeUserComment(std::string_view utf8) {
    std::string out("UNICODE\0", 8);
    for (std::size_t i = 0; i < utf8.size();) {
        const auto c = uint8_t(utf8[i]);
        uint32_t cp = c;
        int len = 1;
        if (c >= 0xF0 && i + 3 < utf8.size()) cp = (c & 0x07u) << 18 | (uint8_t(utf8[i + 1]) & 0x3Fu) << 12 | (uint8_t(utf8[i + 2]) & 0x3Fu) << 6 | (uint8_t(utf8[i + 3]) & 0x3Fu), len = 4;
        else if (c >= 0xE0 && i + 2 < utf8.size()) cp = (c & 0x0Fu) << 12 | (uint8_t(utf8[i + 1]) & 0x3Fu) << 6 | (uint8_t(utf8[i + 2]) & 0x3Fu), len = 3;
        else if (c >= 0xC0 && i + 1 < utf8.size()) cp = (c & 0x1Fu) << 6 | (uint8_t(utf8[i + 1]) & 0x3Fu), len = 2;
        i += std::size_t(len);
        auto put = [&](uint32_t u) { out += char(u >> 8), out += char(u & 0xFF); };
        if (cp >= 0x10000) {
            cp -= 0x10000;
            put(0xD800 + (cp >> 10));
            put(0xDC00 + (cp & 0x3FF));
        } else {
            put(cp);
        }
    }
    return out;
}

std::string xmpProperty(std::string_view xmp, std::string_view qname) {
    std::string_view raw;
    for (std::size_t at = xmp.find(qname); at != std::string_view::npos; at = xmp.find(qname, at + 1)) {
        const std::size_t after = at + qname.size();
        if (at > 0 && xmp[at - 1] == '<') {  // element form: <q ...>value</q>
            const auto open = xmp.find('>', after);
            const std::string closeTag = "</" + std::string(qname) + ">";
            const auto close = open == std::string_view::npos ? open : xmp.find(closeTag, open);
            if (close == std::string_view::npos) return {};
            raw = xmp.substr(open + 1, close - open - 1);
            // A language alternative or list (<rdf:Alt><rdf:li xml:lang="x-default">value</rdf:li>…): its first item.
            if (const auto li = raw.find("<rdf:li"); li != std::string_view::npos && raw.substr(0, 5) == "<rdf:") {
                const auto from = raw.find('>', li), to = raw.find("</rdf:li>", li);
                if (from != std::string_view::npos && to != std::string_view::npos && from < to) raw = raw.substr(from + 1, to - from - 1);
            }
            break;
        }
        if (after + 1 < xmp.size() && xmp[after] == '=' && (xmp[after + 1] == '"' || xmp[after + 1] == '\'')) {
            const auto close = xmp.find(xmp[after + 1], after + 2);
            if (close == std::string_view::npos) return {};
            raw = xmp.substr(after + 2, close - after - 2);
            break;
        }
    }
    std::string out;
    for (std::size_t i = 0; i < raw.size(); ++i) {
        if (raw[i] != '&') { out += raw[i]; continue; }
        const auto semi = raw.find(';', i);
        if (semi == std::string_view::npos || semi - i > 10) { out += '&'; continue; }
        const std::string_view ent = raw.substr(i + 1, semi - i - 1);
        if (ent == "amp") out += '&';
        else if (ent == "lt") out += '<';
        else if (ent == "gt") out += '>';
        else if (ent == "quot") out += '"';
        else if (ent == "apos") out += '\'';
        else if (ent.size() > 1 && ent[0] == '#') {
            const bool hex = ent[1] == 'x' || ent[1] == 'X';
            uint32_t cp = 0;
            bool ok = ent.size() > (hex ? 2u : 1u);
            for (std::size_t k = hex ? 2 : 1; ok && k < ent.size(); ++k) {
                const char c = ent[k];
                const int d = c >= '0' && c <= '9' ? c - '0' : hex && c >= 'a' && c <= 'f' ? c - 'a' + 10 : hex && c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
                ok = d >= 0 && cp < 0x110000;
                cp = cp * (hex ? 16 : 10) + uint32_t(std::max(d, 0));
            }
            if (!ok || cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) { out += '&'; continue; }
            appendUtf8(out, cp);
        } else { out += '&'; continue; }
        i = semi;
    }
    return out;
}

} // namespace dd::settings
