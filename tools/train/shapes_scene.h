#pragma once
// The embedded model's world: one flat-colour shape on a plain background, 128×128, with its caption
// ("a small red circle in the top left on a blue background"). Shared by the trainer (training data) and
// the tests (prompts and the analysis of generated images). OpenCV only, no torch.
#include <opencv2/core.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dd::shapes {

inline constexpr int kImageSize = 128;

struct NamedColour {
    const char* name;
    cv::Vec3b rgb;
};

// Shape colours (chromatic, far apart in RGB so an analysis can name them) and the extra background-only ones.
const std::vector<NamedColour>& shapeColours();       // red, orange, yellow, green, blue, purple
const std::vector<NamedColour>& backgroundColours();   // shape colours + black, white, gray
const std::vector<std::string>& shapeNames();          // circle, square, triangle, star
const std::vector<std::string>& sizeNames();           // small, large
const std::vector<std::string>& positionNames();       // center, top left, top right, bottom left, bottom right

struct Scene {
    int colour = 0;      // index into shapeColours()
    int shape = 0;       // index into shapeNames()
    int size = 0;        // index into sizeNames()
    int position = 0;    // index into positionNames()
    int background = 0;  // index into backgroundColours(); never the shape's colour
    // Jitter, so that the model learns a distribution rather than 480 fixed pictures.
    double dx = 0, dy = 0, scale = 1, angle = 0;
};

// A scene drawn from `seed` alone (deterministic on every platform: a counter-based hash, no std distributions).
Scene randomScene(uint64_t seed);

// Which parts a caption mentions; the others are left to the model.
struct CaptionParts {
    bool size = true, position = true, background = true;
};
std::string caption(const Scene& s, CaptionParts parts = {});
// Parts dropped at random from `seed` (each with probability 1/4), so short prompts ("a red star") work too.
CaptionParts randomParts(uint64_t seed);

// RGB, 8-bit, kImageSize × kImageSize, anti-aliased edges.
cv::Mat render(const Scene& s);

// A deterministic 64-bit hash (splitmix64), the source of every random choice in the recipe.
uint64_t mix(uint64_t x);
inline double unit(uint64_t h) { return double(h >> 11) * (1.0 / 9007199254740992.0); }  // [0, 1)

} // namespace dd::shapes
