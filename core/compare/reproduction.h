#pragma once
// `verify --against IMAGE`: how close a rerun comes to an image another tool (or we) made. The report says field
// by field what was restored and used, what could not be matched and why (a sampler or noise we lack, a missing
// LoRA, another tool's extension), and how far the pixels are. The window shows the same text after a drop.
#include "core/compare/verify.h"
#include "core/compare/verify_file.h"

#include <string>
#include <vector>

namespace dd::compare {

// A reproduction runs without what cannot be found: the LoRAs that are in none of `loraFolders` (and DD_LORA_PATH)
// are taken out of the settings and their prompt tags, one note each.
void dropMissingLoras(api::GenerationSettings& s, const std::vector<std::string>& loraFolders, std::vector<std::string>& notes);

// The report: where the image came from, matched fields, not matched (the notes and the rerun's warnings), not
// used (keys no reader knows), and the pixel verdict with `ssim` when known (NaN: not computed).
std::string describeReproduction(const VerifyFile& file, const VerifyReport& report, double ssim);

} // namespace dd::compare
