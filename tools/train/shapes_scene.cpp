#include "tools/train/shapes_scene.h"

#include <opencv2/imgproc.hpp>

#include <cmath>

namespace dd::shapes {

const std::vector<NamedColour>& shapeColours() {
    static const std::vector<NamedColour> c{{"red", {220, 30, 30}},   {"orange", {245, 140, 0}}, {"yellow", {245, 220, 30}},
                                            {"green", {30, 170, 50}}, {"blue", {30, 70, 230}},   {"purple", {140, 50, 200}}};
    return c;
}

const std::vector<NamedColour>& backgroundColours() {
    static const std::vector<NamedColour> c = [] {
        auto all = shapeColours();
        all.push_back({"black", {15, 15, 15}});
        all.push_back({"white", {240, 240, 240}});
        all.push_back({"gray", {128, 128, 128}});
        return all;
    }();
    return c;
}

const std::vector<std::string>& shapeNames() {
    static const std::vector<std::string> n{"circle", "square", "triangle", "star"};
    return n;
}
const std::vector<std::string>& sizeNames() {
    static const std::vector<std::string> n{"small", "large"};
    return n;
}
const std::vector<std::string>& positionNames() {
    static const std::vector<std::string> n{"center", "top left", "top right", "bottom left", "bottom right"};
    return n;
}

uint64_t mix(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

namespace {
int pick(uint64_t h, size_t n) { return static_cast<int>(unit(h) * double(n)); }
} // namespace

Scene randomScene(uint64_t seed) {
    Scene s;
    uint64_t h = mix(seed);
    auto next = [&] { return h = mix(h); };
    s.colour = pick(next(), shapeColours().size());
    s.shape = pick(next(), shapeNames().size());
    s.size = pick(next(), sizeNames().size());
    s.position = pick(next(), positionNames().size());
    // Any background but the shape's own colour.
    s.background = pick(next(), backgroundColours().size() - 1);
    if (s.background >= s.colour) ++s.background;
    s.dx = (unit(next()) - 0.5) * 10;
    s.dy = (unit(next()) - 0.5) * 10;
    s.scale = 0.9 + 0.2 * unit(next());
    s.angle = (unit(next()) - 0.5) * 24;  // degrees
    return s;
}

CaptionParts randomParts(uint64_t seed) {
    const uint64_t h = mix(seed ^ 0xC0FFEEull);
    return {unit(mix(h)) >= 0.25, unit(mix(h + 1)) >= 0.25, unit(mix(h + 2)) >= 0.25};
}

std::string caption(const Scene& s, CaptionParts parts) {
    std::string c = "a ";
    if (parts.size) c += sizeNames()[s.size] + " ";
    c += std::string(shapeColours()[s.colour].name) + " " + shapeNames()[s.shape];
    if (parts.position) c += " in the " + positionNames()[s.position];
    if (parts.background) c += " on a " + std::string(backgroundColours()[s.background].name) + " background";
    return c;
}

cv::Mat render(const Scene& s) {
    const auto bg = backgroundColours()[s.background].rgb;
    const auto fg = shapeColours()[s.colour].rgb;
    cv::Mat img(kImageSize, kImageSize, CV_8UC3, cv::Scalar(bg[0], bg[1], bg[2]));
    const double r = (s.size == 0 ? 15.0 : 28.0) * s.scale;
    const double near = s.size == 0 ? 34 : 44, far = kImageSize - near;
    static const double px[] = {0.5, 0, 1, 0, 1}, py[] = {0.5, 0, 0, 1, 1};
    const double cx = (px[s.position] == 0.5 ? kImageSize / 2.0 : px[s.position] ? far : near) + s.dx;
    const double cy = (py[s.position] == 0.5 ? kImageSize / 2.0 : py[s.position] ? far : near) + s.dy;
    const cv::Scalar colour(fg[0], fg[1], fg[2]);
    constexpr int kShift = 4;  // sub-pixel coordinates for fillPoly / circle
    const double one = 1 << kShift;
    if (shapeNames()[s.shape] == "circle") {
        cv::circle(img, cv::Point(cvRound(cx * one), cvRound(cy * one)), cvRound(r * one), colour, cv::FILLED,
                   cv::LINE_AA, kShift);
        return img;
    }
    // Polygons: vertices on circles around the centre, rotated by s.angle; sizes chosen so that every shape
    // covers a similar area.
    std::vector<cv::Point> pts;
    auto vertex = [&](double radius, double degrees) {
        const double a = (degrees + s.angle - 90) * M_PI / 180;
        pts.emplace_back(cvRound((cx + radius * std::cos(a)) * one), cvRound((cy + radius * std::sin(a)) * one));
    };
    const std::string& name = shapeNames()[s.shape];
    if (name == "square")
        for (int i = 0; i < 4; ++i) vertex(r * 1.2, 45 + 90 * i);
    else if (name == "triangle")
        for (int i = 0; i < 3; ++i) vertex(r * 1.35, 120 * i);
    else  // star: five points
        for (int i = 0; i < 10; ++i) vertex(i % 2 ? r * 0.6 : r * 1.35, 36 * i);
    cv::fillPoly(img, std::vector<std::vector<cv::Point>>{pts}, colour, cv::LINE_AA, kShift);
    return img;
}

} // namespace dd::shapes
