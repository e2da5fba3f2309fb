// dd_shapes_grid: renders the prompt-following cases through the Engine into one labelled PNG grid
// (docs/screenshots/embedded_grid.png) and prints what the OpenCV analysis reads in each picture.
//
//   build/bin/dd_shapes_grid resources/models/shapes docs/screenshots/embedded_grid.png [count [sampler steps cfg]]
//
// Without the last three it uses the app's defaults for the model (Euler a, 20 steps, dd::kEmbeddedModel's CFG).
#include "core/pipeline/engine.h"
#include "core/resources.h"
#include "tools/train/shapes_analysis.h"
#include "tools/train/shapes_prompts.h"

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

using namespace dd;

int main(int argc, char** argv) try {
    if (argc < 3) {
        std::fprintf(stderr, "usage: dd_shapes_grid MODEL_DIR OUT.png [count [sampler steps cfg]]\n");
        return 2;
    }
    const auto cases = shapes::promptCases();
    const int count = argc > 3 ? std::min(std::atoi(argv[3]), int(cases.size())) : 24;
    constexpr int kCols = 6, kCell = shapes::kImageSize, kLabel = 44;
    const int rows = (count + kCols - 1) / kCols;
    cv::Mat grid(rows * (kCell + kLabel), kCols * kCell, CV_8UC3, cv::Scalar(255, 255, 255));
    pipeline::Engine engine;
    api::CancelToken cancel;
    int right = 0;
    for (int i = 0; i < count; ++i) {
        api::GenerationSettings s;
        s.model = argv[1];
        s.prompt = cases[i].prompt;
        s.seed = cases[i].seed;
        s.width = s.height = kCell;
        s.cfgScale = kEmbeddedModel.cfgScale;  // the app's defaults for this model unless the command line says
        if (argc > 6) {
            s.sampler = argv[4];
            s.steps = std::atoi(argv[5]);
            s.cfgScale = std::atof(argv[6]);
        }
        const auto t0 = std::chrono::steady_clock::now();
        const auto r = engine.generate(s, cancel, nullptr);
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const auto& img = r.images.at(0);
        cv::Mat rgb(img.height, img.width, CV_8UC3, const_cast<uint8_t*>(img.rgb.data()));
        const auto a = shapes::analyse(rgb);
        const bool ok = a.colour == cases[i].colour && a.shape == cases[i].shape;
        right += ok;
        std::printf("%s %5.2f s  %s → %s\n", ok ? "ok  " : "MISS", secs, s.prompt.c_str(), a.describe().c_str());
        const int x = (i % kCols) * kCell, y = (i / kCols) * (kCell + kLabel);
        cv::Mat bgr;
        cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
        bgr.copyTo(grid(cv::Rect(x, y, kCell, kCell)));
        // The prompt under the picture (without the leading "a "), one line per part so it fits 128 px:
        // "small red circle" / "in the center" / "on a gray background".
        const std::string text = s.prompt.substr(2);
        const auto in = text.find(" in the "), on = text.find(" on a ");
        const auto shapeEnd = std::min(in, on);
        const std::string lines[] = {text.substr(0, shapeEnd),
                                     in == std::string::npos ? "" : text.substr(in + 1, on == std::string::npos ? std::string::npos : on - in - 1),
                                     on == std::string::npos ? "" : text.substr(on + 1)};
        for (int l = 0; l < 3; ++l)
            cv::putText(grid, lines[l], {x + 3, y + kCell + 12 + 13 * l}, cv::FONT_HERSHEY_PLAIN, l == 0 ? 0.72 : 0.62,
                        l == 0 ? cv::Scalar(0, 0, 0) : cv::Scalar(80, 80, 80), 1, cv::LINE_AA);
    }
    api::GenerationSettings used;
    used.cfgScale = kEmbeddedModel.cfgScale;
    if (argc > 6) used.sampler = argv[4], used.steps = std::atoi(argv[5]), used.cfgScale = std::atof(argv[6]);
    std::printf("prompt following: %d / %d (%s, %d steps, CFG %g)\n", right, count, used.sampler.c_str(), used.steps,
                used.cfgScale);
    if (!cv::imwrite(argv[2], grid)) throw std::runtime_error(std::string(argv[2]) + ": cannot write the PNG");
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "dd_shapes_grid: %s\n", e.what());
    return 1;
}
