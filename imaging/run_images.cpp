#include "imaging/run_images.h"

#include "core/io/model_hash.h"
#include "imaging/control_preprocess.h"
#include "imaging/png.h"

#include <opencv2/imgproc.hpp>

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

api::RunImages readRunImages(const api::GenerationSettings& s) {
    api::RunImages images;
    if (!s.initImage.empty()) {
        images.init = readImage(s.initImage);
        images.initHash = io::hashModelFile(s.initImage).sha256;
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
