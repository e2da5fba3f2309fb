#pragma once
// Text some A1111 extensions (and Forge, SwarmUI, NovelAI) hide in a PNG's pixels instead of a text chunk, so it
// survives sites that strip metadata: see stealth_png.cpp for the layout.
#include <optional>
#include <string>
#include <string_view>

namespace dd::settings {

// The hidden text of an 8-bit RGB(A) PNG (A1111's "parameters" text, or NovelAI's chunks as JSON); nullopt when the
// pixels hold none. Throws MetadataError when a signature is there but what follows is broken.
std::optional<std::string> readStealthPngInfo(std::string_view png);

} // namespace dd::settings
