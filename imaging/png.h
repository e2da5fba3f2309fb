#pragma once
// PNG files with text chunks (A1111 writes its generation parameters into a "parameters" tEXt/iTXt chunk).
#include "core/pipeline/generation.h"

#include <map>
#include <string>

namespace dd::imaging {

// Writes atomically (temporary file + rename). Text goes into iTXt chunks (UTF-8), after IHDR.
// Throws std::runtime_error naming the path on failure; no partial file is left behind.
void writePng(const std::string& path, const pipeline::Image& image, const std::map<std::string, std::string>& text = {});

// Reads an image (any format OpenCV reads) as 8-bit RGB. Throws std::runtime_error naming the path.
pipeline::Image readImage(const std::string& path);

// The tEXt / iTXt / zTXt chunks of a PNG file (keyword → text). Throws std::runtime_error naming the path.
std::map<std::string, std::string> readPngText(const std::string& path);

} // namespace dd::imaging
