// dd_shapes_negative: what a negative prompt does on the built-in shapes model. For each colour C, pictures of a
// shape whose prompt names no colour are made with no negative prompt and with "C" as the negative prompt, over
// the same seeds; the OpenCV analysis reads each picture's colour. A negative prompt that works makes C rarer.
// Timings are not measured; counts are printed, never asserted.
//
//   build/bin/dd_shapes_negative resources/models/shapes [seeds]
#include "core/pipeline/engine.h"
#include "core/resources.h"
#include "tools/train/shapes_analysis.h"
#include "tools/train/shapes_scene.h"

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace dd;

namespace {

// The colour the analysis reads in one picture (-1: no shape found).
int colourOf(pipeline::Engine& engine, const std::string& model, const std::string& prompt, const std::string& negative,
             int64_t seed) {
    api::GenerationSettings s;
    s.model = model;
    s.prompt = prompt;
    s.negativePrompt = negative;
    s.seed = seed;
    s.width = s.height = shapes::kImageSize;
    s.cfgScale = kEmbeddedModel.cfgScale;
    api::CancelToken cancel;
    const auto r = engine.generate(s, cancel, nullptr);
    const auto& img = r.images.at(0);
    cv::Mat rgb(img.height, img.width, CV_8UC3, const_cast<uint8_t*>(img.rgb.data()));
    return shapes::analyse(rgb).colour;
}

} // namespace

int main(int argc, char** argv) try {
    if (argc < 2) {
        std::fprintf(stderr, "usage: dd_shapes_negative MODEL_DIR [seeds]\n");
        return 2;
    }
    const int seeds = argc > 2 ? std::atoi(argv[2]) : 24;
    const auto& colours = shapes::shapeColours();
    const auto& kinds = shapes::shapeNames();
    pipeline::Engine engine;
    int withoutTotal = 0, withTotal = 0;
    std::printf("%-8s %28s %28s\n", "colour", "no negative: pictures in it", "negative = colour: in it");
    for (size_t c = 0; c < colours.size(); ++c) {
        int without = 0, with = 0;
        for (int i = 0; i < seeds; ++i) {
            const std::string prompt = "a large " + kinds[size_t(i) % kinds.size()] + " in the center on a white background";
            without += colourOf(engine, argv[1], prompt, "", 1000 + i) == int(c);
            with += colourOf(engine, argv[1], prompt, colours[c].name, 1000 + i) == int(c);
        }
        withoutTotal += without;
        withTotal += with;
        std::printf("%-8s %21d / %-4d %21d / %-4d\n", colours[c].name, without, seeds, with, seeds);
    }
    std::printf("all colours: %d pictures in the colour without a negative prompt, %d with it as the negative (%d each)\n",
                withoutTotal, withTotal, seeds * int(colours.size()));
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "dd_shapes_negative: %s\n", e.what());
    return 1;
}
