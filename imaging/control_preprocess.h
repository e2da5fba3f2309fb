#pragma once
// Control images for ControlNets (docs/controlnet.md): read, brought to the run's size with sd-webui-controlnet's
// resize modes, and turned into the map a ControlNet was trained on by a preprocessor that needs no network
// weights (OpenCV only). The engine takes the result as it is (core/pipeline/control_stack).
#include "core/api/generation_settings.h"
#include "core/api/image.h"

#include <string>

namespace dd::imaging {

// "Just Resize": stretched to width × height. "Crop and Resize": scaled to cover, centre cropped. "Resize and
// Fill": scaled to fit, the borders filled by repeating the edge pixels. Downscaling averages (INTER_AREA),
// upscaling is bicubic. Throws std::invalid_argument for an unknown mode or an empty image.
api::Image resizeForControl(const api::Image& image, int width, int height, const std::string& mode);

// The preprocessor of `c` (thresholds: -1 = its default, settings::defaultThresholds):
//   none      the image as it is
//   canny     cv::Canny(low = thresholdA, high = thresholdB) on the RGB image (OpenCV takes the strongest channel's
//             gradient, as sd-webui-controlnet's canny does): white edges on black
//   scribble  edges of the image blurred first (sigma 1.4), thickened by a 3×3 dilation: rough white strokes on
//             black, the kind of map scribble ControlNets expect from a drawing
//   blur      Gaussian blur with sigma thresholdA: the input tile ControlNets take
api::Image preprocessControl(const api::Image& image, const api::ControlNetSetting& c);

// readImage(c.image) → resizeForControl → preprocessControl. Throws std::runtime_error naming the file.
api::Image prepareControlImage(const api::ControlNetSetting& c, int width, int height);
// Every ControlNet's image of `s`, at s.width × s.height: what Engine::generate takes as controlImages.
std::vector<api::Image> prepareControlImages(const api::GenerationSettings& s);

} // namespace dd::imaging
