#include "imaging/control_preprocess.h"

#include "imaging/png.h"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace dd::imaging {
namespace {

cv::Mat view(const api::Image& img) {
    if (img.width <= 0 || img.height <= 0 || img.rgb.size() != size_t(img.width) * size_t(img.height) * 3)
        throw std::invalid_argument("control image: empty or malformed pixels");
    return cv::Mat(img.height, img.width, CV_8UC3, const_cast<uint8_t*>(img.rgb.data()));
}

api::Image imageOf(const cv::Mat& m) {
    cv::Mat rgb;
    if (m.channels() == 1) cv::cvtColor(m, rgb, cv::COLOR_GRAY2RGB);
    else rgb = m.isContinuous() ? m : m.clone();
    api::Image out{rgb.cols, rgb.rows, {}};
    out.rgb.assign(rgb.data, rgb.data + rgb.total() * 3);
    return out;
}

cv::Mat scaled(const cv::Mat& m, int w, int h) {
    cv::Mat out;
    const bool down = w * h < m.cols * m.rows;
    cv::resize(m, out, cv::Size(w, h), 0, 0, down ? cv::INTER_AREA : cv::INTER_CUBIC);
    return out;
}

} // namespace

api::Image resizeForControl(const api::Image& image, int width, int height, const std::string& mode) {
    const cv::Mat src = view(image);
    if (width <= 0 || height <= 0) throw std::invalid_argument("control image: the target size must be positive");
    if (src.cols == width && src.rows == height) return image;
    if (mode == "Just Resize") return imageOf(scaled(src, width, height));
    const double sx = double(width) / src.cols, sy = double(height) / src.rows;
    if (mode == "Crop and Resize") {
        const double s = std::max(sx, sy);
        const int w = std::max(width, int(std::lround(src.cols * s))), h = std::max(height, int(std::lround(src.rows * s)));
        const cv::Mat big = scaled(src, w, h);
        return imageOf(big(cv::Rect((w - width) / 2, (h - height) / 2, width, height)).clone());
    }
    if (mode == "Resize and Fill") {
        const double s = std::min(sx, sy);
        const int w = std::clamp(int(std::lround(src.cols * s)), 1, width), h = std::clamp(int(std::lround(src.rows * s)), 1, height);
        cv::Mat out;
        cv::copyMakeBorder(scaled(src, w, h), out, (height - h) / 2, height - h - (height - h) / 2, (width - w) / 2,
                           width - w - (width - w) / 2, cv::BORDER_REPLICATE);
        return imageOf(out);
    }
    throw std::invalid_argument("control image: resize mode '" + mode + "' is unknown");
}

api::Image preprocessControl(const api::Image& image, const api::ControlNetSetting& c) {
    double a = c.thresholdA, b = c.thresholdB;
    api::defaultThresholds(c.preprocessor, a, b);
    const cv::Mat src = view(image);
    if (c.preprocessor == "none") return image;
    if (c.preprocessor == "canny") {
        cv::Mat edges;
        cv::Canny(src, edges, a, b);
        return imageOf(edges);
    }
    if (c.preprocessor == "scribble") {
        cv::Mat soft, edges, thick;
        cv::GaussianBlur(src, soft, cv::Size(0, 0), 1.4);
        cv::Canny(soft, edges, a, b);
        cv::dilate(edges, thick, cv::getStructuringElement(cv::MORPH_RECT, cv::Size(3, 3)));
        return imageOf(thick);
    }
    if (c.preprocessor == "blur") {
        if (a <= 0) return image;
        cv::Mat out;
        cv::GaussianBlur(src, out, cv::Size(0, 0), a);
        return imageOf(out);
    }
    throw std::invalid_argument("control preprocessor '" + c.preprocessor + "' is unknown");
}

api::Image prepareControlImage(const api::ControlNetSetting& c, int width, int height) {
    if (c.image.empty()) throw std::invalid_argument("ControlNet " + c.model + " has no control image");
    return preprocessControl(resizeForControl(readImage(c.image), width, height, c.resizeMode), c);
}

std::vector<api::Image> prepareControlImages(const api::GenerationSettings& s) {
    std::vector<api::Image> images;
    for (const auto& c : s.controlnets) images.push_back(prepareControlImage(c, s.width, s.height));
    return images;
}

} // namespace dd::imaging
