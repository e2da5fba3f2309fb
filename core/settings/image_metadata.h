#pragma once
// The text metadata inside PNG, JPEG and WebP files, read from bytes without decoding pixels. Pure (std + zlib):
// the restore path and its fuzzer use it; no image library ever sees untrusted metadata.
//
//   ImageText t = readImageText(bytes, "cat.jpg");
//   t.text["parameters"]      // A1111 text: PNG tEXt/iTXt/zTXt "parameters", or JPEG/WebP EXIF UserComment
//   t.text["diffusiondesk"]   // DiffusionDesk settings JSON: PNG iTXt, or JPEG/WebP XMP diffusiondesk:settings
//
// Limits (untrusted input): each text at most kMaxMetadataText bytes after decompression (larger ones are
// skipped with a warning), 64 MiB of text in all, at most 4096 chunks/segments. PNG tEXt/zTXt are Latin-1 and
// come back as UTF-8. A damaged container is a MetadataError naming the file and the byte offset.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dd::settings {

enum class ImageFormat { Unknown, Png, Jpeg, Webp };
const char* imageFormatName(ImageFormat f);  // "png", "jpeg", "webp", "unknown"
ImageFormat detectImageFormat(std::string_view bytes);
// From the file name: ".png", ".jpg" / ".jpeg", ".webp" (any case); Unknown for anything else.
ImageFormat imageFormatFromExtension(std::string_view path);

struct ImageText {
    ImageFormat format = ImageFormat::Unknown;
    std::map<std::string, std::string> text;  // keyword -> UTF-8 text (later chunks of one keyword win)
    std::vector<std::string> warnings;
};

// `name` only labels messages. Throws MetadataError for an unknown format or a broken container.
ImageText readImageText(std::string_view bytes, std::string_view name);

// EXIF (a TIFF structure, with or without the "Exif\0\0" prefix) -> UserComment as UTF-8, "" when absent.
// Charsets: ASCII, UNICODE (UTF-16 in the TIFF byte order, falling back to the other order when that one is
// not valid UTF-16), undefined (read as UTF-8). Throws MetadataError for a broken structure.
std::string exifUserComment(std::string_view exif, std::string_view name);

// zlib (windowBits 15) or gzip (31) data inflated; nullopt when the stream is broken or its output passes `cap`
// bytes (a decompression bomb; *tooLarge is then set when given).
std::optional<std::string> inflateCapped(std::string_view data, int windowBits, std::size_t cap, bool* tooLarge = nullptr);

// UserComment bytes as A1111 (piexif "unicode") writes them: "UNICODE\0" + UTF-16BE.
std::string encodeUserComment(std::string_view utf8);

// The DiffusionDesk property in an XMP packet (attribute or element form), XML entities decoded; "" if absent.
std::string xmpProperty(std::string_view xmp, std::string_view qualifiedName);

} // namespace dd::settings
