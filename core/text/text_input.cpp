#include "core/text/text_input.h"

#include "core/text/prompt_parser.h"

#include <vector>

namespace dd::text {
namespace {

// The LoRAs that change the text encoders: names and text-encoder weights.
std::vector<std::pair<std::string, double>> textEncoderLoras(const api::GenerationSettings& s) {
    std::vector<std::pair<std::string, double>> out;
    for (const auto& l : requestedLoras(s)) out.emplace_back(l.name, l.textEncoderWeight);
    return out;
}

} // namespace

std::vector<api::LoraSetting> requestedLoras(const api::GenerationSettings& s) {
    std::vector<api::LoraSetting> wanted;
    for (const auto& tag : extractExtraNetworks(s.prompt).loras)
        wanted.push_back({tag.name, tag.unetWeight, tag.textEncoderWeight, "", true});
    for (const auto& l : s.loras)
        if (!l.fromPrompt) wanted.push_back({l.name, l.unetWeight, l.textEncoderWeight, "", false});
    return wanted;
}

TextInput textInputOf(const api::GenerationSettings& s) {
    TextInput t;
    t.prompt = extractExtraNetworks(s.prompt).prompt;
    if (s.cfgScale > 1.0) t.negative = extractExtraNetworks(s.negativePrompt).prompt;
    t.clipSkip = s.clipSkip;
    t.promptSyntax = s.promptSyntax;
    t.emphasis = s.emphasis;
    t.padConds = s.padConds || !s.controlnets.empty();
    t.sdxlClipSkip = s.sdxlClipSkip;
    return t;
}

bool sameTextEncoding(const api::GenerationSettings& a, const api::GenerationSettings& b) {
    try {
        return a.model == b.model && a.plan.textEncoder == b.plan.textEncoder && a.loraMode == b.loraMode &&
               textInputOf(a) == textInputOf(b) && textEncoderLoras(a) == textEncoderLoras(b);
    } catch (const std::exception&) {
        return false;
    }
}

} // namespace dd::text
