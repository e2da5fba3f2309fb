#pragma once
// PNG files with text chunks (A1111 writes its generation parameters into a "parameters" tEXt/iTXt chunk).
#include "core/api/image.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace dd::imaging {

// PNG bytes with text chunks right after IHDR, in the given order. Like Pillow's PngInfo.add_text: a text
// that Latin-1 can hold goes into tEXt (converted to Latin-1), any other into iTXt (UTF-8); keys listed in
// `alwaysItxt` always go into iTXt. Deterministic: no time chunk. Throws std::runtime_error on a bad buffer.
std::string encodePng(const api::Image& image, const std::vector<std::pair<std::string, std::string>>& text,
                      const std::vector<std::string>& alwaysItxt = {});

// Writes durably (temporary file, fsync, rename; queue/durable_file.h), replacing `path` if it exists.
// Throws std::runtime_error naming the path on failure; no partial file is left behind.
void writePng(const std::string& path, const api::Image& image, const std::map<std::string, std::string>& text = {});

// Reads an image (any format OpenCV reads) as 8-bit RGB. Throws std::runtime_error naming the path.
api::Image readImage(const std::string& path);

// The tEXt / iTXt / zTXt chunks of a PNG file (keyword → UTF-8 text; tEXt/zTXt converted from Latin-1), with
// the limits of settings::readImageText. Throws std::runtime_error naming the path.
std::map<std::string, std::string> readPngText(const std::string& path);

} // namespace dd::imaging
