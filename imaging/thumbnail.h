#pragma once
// Small previews for the image library's grid: JPEG, the longer side at most `maxSide` pixels, aspect kept.
// Made once when an image is indexed and stored in the index, so a 50 000-image grid never decodes a full image.
#include "core/api/image.h"

#include <string>

namespace dd::imaging {

inline constexpr int kThumbnailSide = 256;

// The encoded thumbnail, or "" when the pixels are empty or encoding fails.
std::string thumbnailOf(const api::Image& image, int maxSide = kThumbnailSide);
// The same for an image file (PNG, JPEG, WebP); "" when it cannot be decoded. Never throws.
std::string thumbnailOfFile(const std::string& path, int maxSide = kThumbnailSide);

} // namespace dd::imaging
