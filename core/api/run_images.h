#pragma once
// The pixels a run starts from besides its settings: read from the files the settings name by the imaging layer
// (imaging::readRunImages), or made by a caller. All at the settings' width × height.
#include "core/api/image.h"

#include <optional>
#include <string>
#include <vector>

namespace dd::api {

struct RunImages {
    std::optional<Image> init{};  // img2img and inpainting: the image to start from
    std::optional<Image> mask{};  // inpainting: grey (R = G = B), white = repaint, already inverted and blurred
    std::vector<Image> controls{};  // one per settings.controlnets entry, preprocessed
    std::string initHash{}, maskHash{};  // SHA-256 of the files read; the result's settings record them
    std::vector<std::string> notes{};  // what reading changed (a mask of another size resized): the run's warnings
};

} // namespace dd::api
