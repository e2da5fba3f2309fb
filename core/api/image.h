#pragma once
#include <cstdint>
#include <vector>

namespace dd::api {

// 8-bit RGB, row-major, owned pixels.
struct Image {
    int width = 0;
    int height = 0;
    std::vector<uint8_t> rgb;  // width * height * 3
};

} // namespace dd::api
