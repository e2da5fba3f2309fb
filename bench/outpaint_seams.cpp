// How well each outpainting pre-fill hides the seam (docs/inpainting.md), on the built-in shapes model: a picture is
// made, its right quarter cut off (through the shape), the rest extended back by that much on the right and
// outpainted at the model's own size. The seam is the mean absolute colour step across the cut divided by the mean
// step between neighbouring columns of the new area (1 = as smooth as what was painted around it; larger = an edge).
//   bench/outpaint_seams [SEEDS] [STRENGTH]      (defaults 8, 0.8)
#include "core/pipeline/engine.h"
#include "core/resources.h"
#include "imaging/run_images.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

double columnStep(const dd::api::Image& img, int x) {  // mean |pixel(x) - pixel(x - 1)| over the rows and channels
    double sum = 0;
    for (int y = 0; y < img.height; ++y)
        for (int c = 0; c < 3; ++c)
            sum += std::abs(int(img.rgb[3 * (size_t(y) * img.width + x) + c]) - int(img.rgb[3 * (size_t(y) * img.width + x - 1) + c]));
    return sum / (img.height * 3.0);
}

} // namespace

int main(int argc, char** argv) {
    const int seeds = argc > 1 ? std::atoi(argv[1]) : 8;
    const double strength = argc > 2 ? std::atof(argv[2]) : 0.8;
    const auto model = dd::installedEmbeddedModel();
    if (model.empty()) {
        std::fprintf(stderr, "outpaint_seams: the built-in shapes model is not built (target dd_resources)\n");
        return 1;
    }
    dd::pipeline::Engine engine;
    dd::api::CancelToken cancel;
    constexpr int kSize = dd::kEmbeddedModel.size, kSide = kSize / 4, kKept = kSize - kSide;
    std::printf("fill    seam/inside (mean of %d seeds, strength %.2f)\n", seeds, strength);
    for (const char* fill : {"edge", "mirror", "blur", "noise"}) {
        double ratio = 0;
        for (int seed = 0; seed < seeds; ++seed) {
            dd::api::GenerationSettings s;
            s.model = model.string();
            s.prompt = "a large yellow star in the center on a blue background";
            s.seed = seed;
            s.steps = 12;
            s.cfgScale = dd::kEmbeddedModel.cfgScale;
            s.width = s.height = kSize;
            const auto full = engine.generate(s, cancel, nullptr).images.at(0);
            dd::api::Image base{kKept, kSize, {}};
            for (int y = 0; y < kSize; ++y)
                base.rgb.insert(base.rgb.end(), full.rgb.begin() + 3 * y * kSize, full.rgb.begin() + 3 * (y * kSize + kKept));
            s.outpaint.right = kSide;
            s.outpaint.fill = fill;
            s.initImage = "base.png";
            s.strength = strength;
            s.width = kSize;
            dd::api::RunImages images;
            images.init = dd::imaging::extendForOutpaint(base, s.outpaint, uint64_t(seed));
            images.mask = dd::imaging::prepareMask(dd::imaging::outpaintMask(s.width, s.height, s.outpaint), s.width, s.height,
                                                   s.inpaint, "outpaint");
            const auto out = engine.generate(s, cancel, nullptr, images).images.at(0);
            const double seam = columnStep(out, kKept);
            double inside = 0;
            for (int x = kKept + 2; x < kSize; ++x) inside += columnStep(out, x);
            inside /= kSize - kKept - 2;
            ratio += seam / std::max(inside, 1e-6);
        }
        std::printf("%-7s %.2f\n", fill, ratio / seeds);
    }
    return 0;
}
