#include "tools/train/shapes_analysis.h"

#include "tools/train/shapes_scene.h"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cstdio>
#include <vector>

namespace dd::shapes {
namespace {

// The background is what most of the border shows: the per-channel median of the border pixels.
cv::Vec3b borderMedian(const cv::Mat& rgb) {
    std::vector<uchar> ch[3];
    auto take = [&](int y, int x) {
        const auto p = rgb.at<cv::Vec3b>(y, x);
        for (int c = 0; c < 3; ++c) ch[c].push_back(p[c]);
    };
    for (int i = 0; i < rgb.cols; ++i) take(0, i), take(rgb.rows - 1, i);
    for (int i = 0; i < rgb.rows; ++i) take(i, 0), take(i, rgb.cols - 1);
    cv::Vec3b m;
    for (int c = 0; c < 3; ++c) {
        std::nth_element(ch[c].begin(), ch[c].begin() + ch[c].size() / 2, ch[c].end());
        m[c] = ch[c][ch[c].size() / 2];
    }
    return m;
}

// The index of the colour of `colours` nearest to `rgb` (RGB distance).
int nearest(const std::vector<NamedColour>& colours, const cv::Scalar& rgb) {
    int best = -1;
    double bestDistance = 1e18;
    for (size_t i = 0; i < colours.size(); ++i) {
        double d = 0;
        for (int k = 0; k < 3; ++k) d += (rgb[k] - colours[i].rgb[k]) * (rgb[k] - colours[i].rgb[k]);
        if (d < bestDistance) bestDistance = d, best = int(i);
    }
    return best;
}

} // namespace

Analysis analyse(const cv::Mat& rgb) {
    Analysis a;
    const cv::Vec3b bg = borderMedian(rgb);
    a.background = nearest(backgroundColours(), cv::Scalar(bg[0], bg[1], bg[2]));
    cv::Mat mask(rgb.size(), CV_8U);
    for (int y = 0; y < rgb.rows; ++y)
        for (int x = 0; x < rgb.cols; ++x) {
            const auto p = rgb.at<cv::Vec3b>(y, x);
            int d = 0;
            for (int c = 0; c < 3; ++c) d = std::max(d, std::abs(int(p[c]) - int(bg[c])));
            mask.at<uchar>(y, x) = d > 48 ? 255 : 0;
        }
    cv::morphologyEx(mask, mask, cv::MORPH_OPEN, cv::getStructuringElement(cv::MORPH_ELLIPSE, {3, 3}));
    std::vector<std::vector<cv::Point>> contours;
    cv::findContours(mask, contours, cv::RETR_EXTERNAL, cv::CHAIN_APPROX_NONE);
    if (contours.empty()) return a;
    const auto& c = *std::max_element(contours.begin(), contours.end(), [](const auto& l, const auto& r) {
        return cv::contourArea(l) < cv::contourArea(r);
    });
    a.area = cv::contourArea(c);
    if (a.area < 40) return a;

    // Colour: mean inside the blob, away from its anti-aliased edge.
    cv::Mat blob = cv::Mat::zeros(rgb.size(), CV_8U);
    cv::drawContours(blob, std::vector<std::vector<cv::Point>>{c}, 0, 255, cv::FILLED);
    cv::Mat inner;
    cv::erode(blob, inner, cv::getStructuringElement(cv::MORPH_ELLIPSE, {5, 5}));
    a.colour = nearest(shapeColours(), cv::mean(rgb, cv::countNonZero(inner) > 10 ? inner : blob));

    std::vector<cv::Point> hull;
    cv::convexHull(c, hull);
    a.solidity = a.area / std::max(1.0, cv::contourArea(hull));
    const cv::RotatedRect box = cv::minAreaRect(c);
    a.extent = a.area / std::max(1.0, double(box.size.area()));
    const auto index = [](const char* name) {
        return int(std::find(shapeNames().begin(), shapeNames().end(), name) - shapeNames().begin());
    };
    if (a.solidity < 0.8) a.shape = index("star");
    else if (a.extent > 0.88) a.shape = index("square");
    else if (a.extent > 0.65) a.shape = index("circle");
    else a.shape = index("triangle");
    return a;
}

std::string Analysis::describe() const {
    if (colour < 0) return "no shape found";
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s %s on %s (area %.0f, solidity %.2f, extent %.2f)", shapeColours()[colour].name,
                  shapeNames()[shape].c_str(), backgroundColours()[background].name, area, solidity, extent);
    return buf;
}

} // namespace dd::shapes
