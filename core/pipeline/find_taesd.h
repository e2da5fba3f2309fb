#pragma once
// Where a TAESD for live previews sits next to a model. Torch-free (the GUI calls it); in previewer.cpp.
#include <string>

namespace dd::pipeline {

// For SDXL "taesdxl" before "taesd", each as a diffusers folder (config.json inside) or an original
// "<name>_decoder.safetensors", looked for in the model folder itself (a diffusers model) and in the folder
// holding the model. "" when there is none.
std::string findTaesdNextTo(const std::string& modelPath, bool xl);

} // namespace dd::pipeline
