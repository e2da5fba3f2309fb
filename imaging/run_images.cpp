#include "imaging/run_images.h"

#include "core/io/model_hash.h"
#include "imaging/control_preprocess.h"
#include "imaging/png.h"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <random>
#include <stdexcept>

namespace dd::imaging {

api::Image prepareMask(const api::Image& mask, int width, int height, const api::InpaintSetting& inpaint,
                       const std::string& name, std::vector<std::string>* notes) {
    if (mask.width <= 0 || mask.height <= 0) throw std::invalid_argument(name + ": the mask has no pixels");
    cv::Mat grey(mask.height, mask.width, CV_8UC1);
    for (int i = 0; i < mask.width * mask.height; ++i) {
        const uint32_t r = mask.rgb[3 * i], g = mask.rgb[3 * i + 1], b = mask.rgb[3 * i + 2];
        grey.data[i] = uint8_t((19595 * r + 38470 * g + 7471 * b + 0x8000) >> 16);
    }
    if (mask.width != width || mask.height != height) {
        cv::resize(cv::Mat(grey), grey, cv::Size(width, height), 0, 0, cv::INTER_LINEAR);
        if (notes)
            notes->push_back(name + ": the mask is " + std::to_string(mask.width) + "x" + std::to_string(mask.height) +
                             ", resized to the image's " + std::to_string(width) + "x" + std::to_string(height));
    }
    if (inpaint.invertMask) grey = 255 - grey;
    if (inpaint.maskBlur > 0) {
        const double sigma = inpaint.maskBlur;
        const int k = 2 * int(2.5 * sigma + 0.5) + 1;
        cv::GaussianBlur(cv::Mat(grey), grey, cv::Size(k, 1), sigma);
        cv::GaussianBlur(cv::Mat(grey), grey, cv::Size(1, k), sigma);
    }
    double most = 0;
    cv::minMaxLoc(grey, nullptr, &most);
    if (most < 128)
        throw std::invalid_argument(name + ": the mask is empty, so nothing would be repainted (paint white where the "
                                           "picture should change" + std::string(inpaint.invertMask ? ", or turn off the inverted mask)" : ")"));
    api::Image out{width, height, std::vector<uint8_t>(size_t(width) * size_t(height) * 3)};
    for (int i = 0; i < width * height; ++i) out.rgb[3 * i] = out.rgb[3 * i + 1] = out.rgb[3 * i + 2] = grey.data[i];
    return out;
}

api::Image extendForOutpaint(const api::Image& image, const api::OutpaintSetting& o, uint64_t seed) {
    const cv::Mat src(image.height, image.width, CV_8UC3, const_cast<uint8_t*>(image.rgb.data()));
    cv::Mat out;
    cv::copyMakeBorder(src, out, o.top, o.bottom, o.left, o.right, o.fill == "mirror" ? cv::BORDER_REFLECT_101 : cv::BORDER_REPLICATE);
    const cv::Rect picture(o.left, o.top, image.width, image.height);
    if (o.fill == "blur" || o.fill == "noise") {
        cv::Mat filled;
        if (o.fill == "blur") {
            const double sigma = std::max({o.left, o.top, o.right, o.bottom}) / 4.0;
            cv::GaussianBlur(out, filled, cv::Size(0, 0), std::max(sigma, 1.0));
        } else {
            filled = cv::Mat(out.size(), CV_8UC3);
            std::mt19937_64 rng(seed);
            for (size_t i = 0; i < filled.total() * 3; ++i) filled.data[i] = uint8_t(rng() >> 56);
        }
        src.copyTo(filled(picture));
        out = filled;
    }
    api::Image extended{out.cols, out.rows, {}};
    extended.rgb.assign(out.data, out.data + out.total() * 3);
    return extended;
}

api::Image outpaintMask(int width, int height, const api::OutpaintSetting& o) {
    api::Image mask{width, height, std::vector<uint8_t>(size_t(width) * size_t(height) * 3, 255)};
    // The picture less the overlap along each extended side stays black (kept).
    const int x0 = o.left + (o.left > 0 ? o.overlap : 0), x1 = width - o.right - (o.right > 0 ? o.overlap : 0);
    const int y0 = o.top + (o.top > 0 ? o.overlap : 0), y1 = height - o.bottom - (o.bottom > 0 ? o.overlap : 0);
    for (int y = std::max(0, y0); y < std::min(height, y1); ++y)
        for (int x = std::max(0, x0); x < std::min(width, x1); ++x) std::fill_n(mask.rgb.begin() + 3 * (size_t(y) * width + x), 3, uint8_t(0));
    return mask;
}

api::RunImages readRunImages(const api::GenerationSettings& s) {
    api::RunImages images;
    if (!s.initImage.empty()) {
        images.init = readImage(s.initImage);
        images.initHash = io::hashModelFile(s.initImage).sha256;
    }
    if (s.outpaint.enabled() && images.init) {
        const auto& o = s.outpaint;
        const int w = images.init->width + o.left + o.right, h = images.init->height + o.top + o.bottom;
        if (w != s.width || h != s.height)
            throw std::invalid_argument(s.initImage + " outpainted is " + std::to_string(w) + "x" + std::to_string(h) +
                                        ", but the size is " + std::to_string(s.width) + "x" + std::to_string(s.height) +
                                        ": set the size to the extended one (a multiple of 8)");
        images.init = extendForOutpaint(*images.init, o, uint64_t(s.seed));
        api::InpaintSetting feather = s.inpaint;
        feather.invertMask = false;
        images.mask = prepareMask(outpaintMask(w, h, o), w, h, feather, s.initImage + " (outpainting)");
    }
    if (s.inpaint.enabled()) {
        if (!images.init) throw std::invalid_argument(s.inpaint.mask + ": a mask needs an init image to repaint");
        const api::Image mask = readImage(s.inpaint.mask);
        images.mask = prepareMask(mask, images.init->width, images.init->height, s.inpaint, s.inpaint.mask, &images.notes);
        images.maskHash = io::hashModelFile(s.inpaint.mask).sha256;
    }
    images.controls = prepareControlImages(s);
    return images;
}

} // namespace dd::imaging
