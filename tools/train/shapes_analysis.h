#pragma once
// Reads a generated 128×128 picture back: the background colour, the largest blob that differs from the background, its colour
// (nearest of shapeColours()) and its shape (from the contour's convexity and fill of its rotated
// bounding box). The prompt-following test compares these with the prompt.
#include <opencv2/core.hpp>

#include <string>

namespace dd::shapes {

struct Analysis {
    int colour = -1;          // index into shapeColours(), -1 when no blob
    int shape = -1;           // index into shapeNames(), -1 when no blob
    int background = -1;      // index into backgroundColours(): the nearest to what most of the border shows
    double area = 0;          // blob area in pixels
    double solidity = 0;      // area / convex hull area (a star is far below 1)
    double extent = 0;        // area / rotated bounding box area (square ~1, circle ~0.79, triangle ~0.5)
    std::string describe() const;  // "red circle (area 812, solidity 0.98, extent 0.78)"
};

// rgb: CV_8UC3 in RGB order.
Analysis analyse(const cv::Mat& rgb);

} // namespace dd::shapes
