#pragma once
// The embedded model's architecture: diffusers / transformers config.json contents for each component.
// Small on purpose: the whole recipe trains in under two hours on two CPU cores and the weights stay
// under 25 MB (the text encoder's 49408-token embedding is most of it).
#include <nlohmann/json.hpp>

namespace dd::train {

// AutoencoderKL, f = 8 (128×128×3 → 16×16×4), narrow: flat-colour scenes need little capacity.
nlohmann::json vaeConfig(double scalingFactor);
// UNet2DConditionModel on 16×16×4 latents, 3 levels, cross-attention at 16×16 and 8×8 (and the mid block).
nlohmann::json unetConfig();
// CLIPTextModel: full CLIP vocabulary (any prompt tokenizes), 2 layers of width 64.
nlohmann::json textEncoderConfig();
// PNDM with SD 1.x's scaled-linear betas, the schedule the UNet is trained with.
nlohmann::json schedulerConfig();
nlohmann::json modelIndex();

} // namespace dd::train
