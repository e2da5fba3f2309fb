#pragma once
// ControlNet flags of `diffusiondesk-cli generate` (docs/controlnet.md). --controlnet starts a unit; the
// --control-* flags after it set that unit's fields:
//   --controlnet PATH --control-image IMG [--control-preprocessor none|canny|scribble|blur]
//   [--control-weight W] [--control-start F] [--control-end F] [--control-thresholds A[,B]]
//   [--control-resize "Crop and Resize"|"Just Resize"|"Resize and Fill"]     (repeat for several ControlNets)
//   --controlnet-dir DIR   where ControlNets restored by --from are looked up by name
#include "core/api/generation_settings.h"

#include <string>
#include <vector>

namespace dd::cli {

// Applies one flag; false when `flag` is not a ControlNet flag. Throws std::invalid_argument.
bool applyControlFlag(const std::string& flag, const std::string& value, api::GenerationSettings& s,
                      std::vector<std::string>& controlNetFolders);

// Restored ControlNets name their model and image only: the model is looked up in `folders`, the image inside the
// output folder (as init images are). Throws std::invalid_argument saying what is missing.
void resolveRestoredControlNets(api::GenerationSettings& s, const std::vector<std::string>& folders,
                                const std::string& outFolder);

} // namespace dd::cli
