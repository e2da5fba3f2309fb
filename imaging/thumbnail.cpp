#include "imaging/thumbnail.h"

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <vector>

namespace dd::imaging {
namespace {

std::string encodeThumbnail(const cv::Mat& bgr, int maxSide) {
    if (bgr.empty()) return {};
    const double scale = std::min(1.0, double(maxSide) / std::max(bgr.cols, bgr.rows));
    cv::Mat small = bgr;
    if (scale < 1.0)
        cv::resize(bgr, small, cv::Size(std::max(1, int(bgr.cols * scale + 0.5)), std::max(1, int(bgr.rows * scale + 0.5))),
                   0, 0, cv::INTER_AREA);  // area averaging: no aliasing in a 8x reduction
    std::vector<uchar> out;
    if (!cv::imencode(".jpg", small, out, {cv::IMWRITE_JPEG_QUALITY, 85})) return {};
    return std::string(out.begin(), out.end());
}

} // namespace

std::string thumbnailOf(const api::Image& image, int maxSide) {
    if (image.width <= 0 || image.height <= 0 || image.rgb.size() != size_t(image.width) * image.height * 3) return {};
    cv::Mat rgb(image.height, image.width, CV_8UC3, const_cast<uint8_t*>(image.rgb.data()));
    cv::Mat bgr;
    cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
    return encodeThumbnail(bgr, maxSide);
}

std::string thumbnailOfFile(const std::string& path, int maxSide) {
    try {
        return encodeThumbnail(cv::imread(path, cv::IMREAD_COLOR), maxSide);
    } catch (const cv::Exception&) {
        return {};
    }
}

} // namespace dd::imaging
