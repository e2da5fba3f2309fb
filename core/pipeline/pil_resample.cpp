#include "core/pipeline/pil_resample.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace dd::pipeline {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;

double sinc(double x) {
    if (x == 0.0) return 1.0;
    x *= M_PI;
    return std::sin(x) / x;
}

double lanczos(double x) { return -3.0 <= x && x < 3.0 ? sinc(x) * sinc(x / 3) : 0.0; }

double bicubic(double x) {
    constexpr double a = -0.5;
    x = std::abs(x);
    if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
    if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
    return 0.0;
}

// One output line's taps: the first source index and its fixed-point weights.
struct Taps {
    int first = 0;
    std::vector<int32_t> weights;
};

// Pillow's precompute_coeffs and normalize_coeffs_8bpc. The box edges are floats there, and so here.
std::vector<Taps> taps(int inSize, float in0, float in1, int outSize, PilFilter filter) {
    const double support0 = filter == PilFilter::Lanczos ? 3.0 : 2.0;  // Nearest never comes here
    const auto kernel = filter == PilFilter::Lanczos ? lanczos : bicubic;
    const double scale = double(in1 - in0) / outSize;
    const double filterScale = std::max(scale, 1.0);
    const double support = support0 * filterScale;
    std::vector<Taps> out(static_cast<size_t>(outSize));
    for (int xx = 0; xx < outSize; ++xx) {
        const double center = in0 + (xx + 0.5) * scale;
        const int xmin = std::max(int(center - support + 0.5), 0);
        const int xmax = std::min(int(center + support + 0.5), inSize) - xmin;
        std::vector<double> k(size_t(std::max(xmax, 0)));
        const double ss = 1.0 / filterScale;  // multiplied, as Pillow does: dividing can differ in the last bit
        double sum = 0;
        for (int x = 0; x < xmax; ++x) sum += k[size_t(x)] = kernel((x + xmin - center + 0.5) * ss);
        Taps& t = out[size_t(xx)];
        t.first = xmin;
        for (double w : k) {
            if (sum != 0.0) w /= sum;
            t.weights.push_back(int32_t(w < 0 ? -0.5 + w * (1 << kPrecisionBits) : 0.5 + w * (1 << kPrecisionBits)));
        }
    }
    return out;
}

uint8_t clip8(int32_t sum) { return uint8_t(std::clamp(sum >> kPrecisionBits, 0, 255)); }

// Rows [rowFirst, rowFirst + rows) of `in`, resampled along x.
api::Image horizontal(const api::Image& in, int rowFirst, int rows, const std::vector<Taps>& tx) {
    const int w = int(tx.size());
    api::Image out{w, rows, std::vector<uint8_t>(size_t(w) * size_t(rows) * 3)};
    for (int y = 0; y < rows; ++y) {
        const uint8_t* line = in.rgb.data() + size_t(y + rowFirst) * size_t(in.width) * 3;
        for (int x = 0; x < w; ++x)
            for (int c = 0; c < 3; ++c) {
                int32_t sum = 1 << (kPrecisionBits - 1);
                const Taps& t = tx[size_t(x)];
                for (size_t i = 0; i < t.weights.size(); ++i) sum += line[(size_t(t.first) + i) * 3 + size_t(c)] * t.weights[i];
                out.rgb[(size_t(y) * size_t(w) + size_t(x)) * 3 + size_t(c)] = clip8(sum);
            }
    }
    return out;
}

// `in` resampled along y, its tap indices shifted down by `rowShift`.
api::Image vertical(const api::Image& in, const std::vector<Taps>& ty, int rowShift) {
    const int h = int(ty.size());
    api::Image out{in.width, h, std::vector<uint8_t>(size_t(in.width) * size_t(h) * 3)};
    const size_t stride = size_t(in.width) * 3;
    for (int y = 0; y < h; ++y) {
        const Taps& t = ty[size_t(y)];
        for (size_t x = 0; x < stride; ++x) {
            int32_t sum = 1 << (kPrecisionBits - 1);
            for (size_t i = 0; i < t.weights.size(); ++i) sum += in.rgb[size_t(t.first - rowShift + int(i)) * stride + x] * t.weights[i];
            out.rgb[size_t(y) * stride + x] = clip8(sum);
        }
    }
    return out;
}

// Pillow's NEAREST resize is an affine transform (ImagingScaleAffine): each output column and row reads the source
// pixel under its centre, the column positions accumulated step by step as Pillow does.
api::Image nearest(const api::Image& src, int width, int height, const PilBox& box) {
    const double ax = double(float(box.x1) - float(box.x0)) / width, ay = double(float(box.y1) - float(box.y0)) / height;
    const auto coord = [](double v) { return v < 0.0 ? -1 : int(v); };
    std::vector<int> columns(size_t(width), -1);
    double xo = float(box.x0) + ax * 0.5;
    for (int x = 0; x < width; ++x, xo += ax)
        if (const int xin = coord(xo); xin >= 0 && xin < src.width) columns[size_t(x)] = xin;
    api::Image out{width, height, std::vector<uint8_t>(size_t(width) * size_t(height) * 3, 0)};
    for (int y = 0; y < height; ++y) {
        const int yin = coord(float(box.y0) + ay * (y + 0.5));
        if (yin < 0 || yin >= src.height) continue;
        for (int x = 0; x < width; ++x)
            if (columns[size_t(x)] >= 0)
                std::copy_n(src.rgb.begin() + (size_t(yin) * size_t(src.width) + size_t(columns[size_t(x)])) * 3, 3,
                            out.rgb.begin() + (size_t(y) * size_t(width) + size_t(x)) * 3);
    }
    return out;
}

} // namespace

api::Image pilResize(const api::Image& src, int width, int height, PilFilter filter) {
    return pilResize(src, width, height, filter, {0, 0, double(src.width), double(src.height)});
}

api::Image pilResize(const api::Image& src, int width, int height, PilFilter filter, const PilBox& box) {
    if (width < 1 || height < 1 || src.width < 1 || src.height < 1)
        throw std::invalid_argument("a resize needs pixels in and out (" + std::to_string(src.width) + "x" +
                                    std::to_string(src.height) + " to " + std::to_string(width) + "x" + std::to_string(height) + ")");
    if (box.x0 < 0 || box.y0 < 0 || box.x1 > src.width || box.y1 > src.height || box.x1 < box.x0 || box.y1 < box.y0)
        throw std::invalid_argument("the resize box lies outside the image");
    const bool whole = box.x0 == 0 && box.y0 == 0 && box.x1 == src.width && box.y1 == src.height;
    if (whole && width == src.width && height == src.height) return src;  // Image.resize's copy
    if (filter == PilFilter::Nearest) return nearest(src, width, height, box);
    // Pillow's conditions as written (the box's far edge against the output size).
    const bool needX = width != src.width || box.x0 != 0 || box.x1 != width;
    const bool needY = height != src.height || box.y0 != 0 || box.y1 != height;
    const auto tx = taps(src.width, float(box.x0), float(box.x1), width, filter);
    const auto ty = taps(src.height, float(box.y0), float(box.y1), height, filter);
    const int rowFirst = ty.front().first;
    const int rowLast = ty.back().first + int(ty.back().weights.size());
    if (!needX) return needY ? vertical(src, ty, 0) : src;
    const api::Image across = horizontal(src, rowFirst, rowLast - rowFirst, tx);
    return needY ? vertical(across, ty, rowFirst) : across;
}

} // namespace dd::pipeline
