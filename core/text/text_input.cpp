#include "core/text/text_input.h"

#include "core/text/prompt_parser.h"

#include <vector>

namespace dd::text {
namespace {

// The LoRAs that change the text encoders, as the settings name them (as the engine applies them): the prompt's tags, then the list (a result's
// list repeats the tags, marked fromPrompt).
std::vector<std::pair<std::string, double>> textEncoderLoras(const api::GenerationSettings& s) {
    std::vector<std::pair<std::string, double>> out;
    for (const auto& tag : extractExtraNetworks(s.prompt).loras) out.emplace_back(tag.name, tag.textEncoderWeight);
    for (const auto& l : s.loras)
        if (!l.fromPrompt) out.emplace_back(l.name, l.textEncoderWeight);
    return out;
}

} // namespace

TextInput textInputOf(const api::GenerationSettings& s) {
    TextInput t;
    t.prompt = extractExtraNetworks(s.prompt).prompt;
    if (s.cfgScale > 1.0) t.negative = extractExtraNetworks(s.negativePrompt).prompt;
    t.clipSkip = s.clipSkip;
    t.promptSyntax = s.promptSyntax;
    t.emphasis = s.emphasis;
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
