#pragma once
// ControlNets in A1111 text, as sd-webui-controlnet writes them: one "ControlNet <i>" parameter per unit whose
// quoted value lists the unit's own "Key: value" pairs, e.g.
//   ControlNet 0: "Module: canny, Model: control_sd15_canny [fef5e48e], Weight: 1, Resize Mode: Crop and Resize,
//   Low Vram: False, Processor Res: 512, Threshold A: 100, Threshold B: 200, Guidance Start: 0, Guidance End: 1,
//   Pixel Perfect: False, Control Mode: Balanced"
// Pure: no torch.
#include "core/api/generation_settings.h"
#include "core/settings/generation_info.h"

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dd::settings {

// ("ControlNet 0", "Module: canny, Model: name [hash], ...") per ControlNet of `s`, unquoted.
std::vector<std::pair<std::string, std::string>> a1111ControlNetParameters(const api::GenerationSettings& s);

// Reads "ControlNet 0", "ControlNet 1"... through `take` (which removes the key it returns) into
// info.settings.controlnets (model = the name written, image empty: the control image is not in the text).
// Units whose module DiffusionDesk lacks are restored with preprocessor "none" and a warning.
void readA1111ControlNets(const std::function<std::optional<std::string>(std::string_view)>& take, GenerationInfo& info);

} // namespace dd::settings
