#include "imaging/compare.h"

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace dd::imaging {
namespace {

constexpr int kWindow = 11;
constexpr double kSigma = 1.5;

cv::Mat view(const api::Image& img) {
    return cv::Mat(img.height, img.width, CV_8UC3, const_cast<uint8_t*>(img.rgb.data()));
}

bool sameSize(const api::Image& a, const api::Image& b) {
    return a.width == b.width && a.height == b.height && a.rgb.size() == size_t(a.width) * size_t(a.height) * 3 &&
           b.rgb.size() == a.rgb.size();
}

// Gaussian-weighted local mean over the valid region only: the border rows/columns, where the window would
// leave the image, are cropped, so the border mode never matters.
cv::Mat localMean(const cv::Mat& m) {
    cv::Mat out;
    cv::GaussianBlur(m, out, cv::Size(kWindow, kWindow), kSigma, kSigma, cv::BORDER_REFLECT);
    const int r = kWindow / 2;
    return out(cv::Rect(r, r, m.cols - 2 * r, m.rows - 2 * r));
}

} // namespace

double ssim(const api::Image& a, const api::Image& b) {
    if (!sameSize(a, b) || a.width < kWindow || a.height < kWindow) return std::numeric_limits<double>::quiet_NaN();
    cv::Mat x, y;
    view(a).convertTo(x, CV_64FC3);
    view(b).convertTo(y, CV_64FC3);
    const double c1 = (0.01 * 255) * (0.01 * 255), c2 = (0.03 * 255) * (0.03 * 255);
    const cv::Mat muX = localMean(x), muY = localMean(y);
    const cv::Mat muXX = muX.mul(muX), muYY = muY.mul(muY), muXY = muX.mul(muY);
    const cv::Mat varX = localMean(x.mul(x)) - muXX, varY = localMean(y.mul(y)) - muYY;
    const cv::Mat cov = localMean(x.mul(y)) - muXY;
    // Scalar::all: the constants go to every channel (a bare double would be ambiguous for 3-channel MatExpr).
    const cv::Scalar k1 = cv::Scalar::all(c1), k2 = cv::Scalar::all(c2);
    cv::Mat num = (2 * muXY + k1).mul(2 * cov + k2), den = (muXX + muYY + k1).mul(varX + varY + k2), map;
    cv::divide(num, den, map);
    const cv::Scalar perChannel = cv::mean(map);
    return (perChannel[0] + perChannel[1] + perChannel[2]) / 3.0;
}

ImageMetrics compareImages(const api::Image& a, const api::Image& b) {
    return {compare::pixelDifference(a, b), ssim(a, b)};
}

api::Image differenceHeatmap(const api::Image& a, const api::Image& b, HeatmapScale scale, double gain) {
    if (!sameSize(a, b))
        throw std::invalid_argument("cannot make a difference heatmap of a " + std::to_string(a.width) + "x" +
                                    std::to_string(a.height) + " and a " + std::to_string(b.width) + "x" +
                                    std::to_string(b.height) + " image");
    cv::Mat diff, channels[3], largest;
    cv::absdiff(view(a), view(b), diff);
    cv::split(diff, channels);
    largest = cv::max(cv::max(channels[0], channels[1]), channels[2]);
    double maxValue = 0;
    cv::minMaxLoc(largest, nullptr, &maxValue);
    const double factor = scale == HeatmapScale::Normalized ? (maxValue > 0 ? 255.0 / maxValue : 0.0) : gain;
    cv::Mat scaled, coloured, rgb;
    largest.convertTo(scaled, CV_8U, factor);  // saturates at 255
    cv::applyColorMap(scaled, coloured, cv::COLORMAP_INFERNO);
    coloured.setTo(cv::Scalar::all(0), largest == 0);
    cv::cvtColor(coloured, rgb, cv::COLOR_BGR2RGB);
    api::Image out{a.width, a.height, std::vector<uint8_t>(rgb.total() * 3)};
    std::memcpy(out.rgb.data(), rgb.data, out.rgb.size());
    return out;
}

} // namespace dd::imaging
