// Any bytes as an A1111 "parameters" text: parsed or rejected with MetadataError; what is parsed must write
// back to a text that parses to the same prompt, numbers and model name.
#include "core/settings/a1111_parameters.h"

#include <algorithm>
#include <string_view>

using namespace dd::settings;
namespace api = dd::api;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    GenerationInfo info;
    try {
        info = parseA1111Parameters({reinterpret_cast<const char*>(data), size});
    } catch (const MetadataError&) {
        return 0;
    }
    const std::string_view name = info.modelName;
    if (name.find_first_of("/\\") != std::string_view::npos || name.find("..") != std::string_view::npos) __builtin_trap();

    // A prompt line that itself starts with "Negative prompt:" cannot round-trip in A1111's format (A1111's
    // parser strips that prefix from every such line too): an ambiguity of the format, not of our code.
    for (const std::string* text : {&info.settings.prompt, &info.settings.negativePrompt})
        if (text->rfind("Negative prompt:", 0) == 0 || text->find("\nNegative prompt:") != std::string::npos) return 0;

    A1111WriteOptions o;
    o.modelName = info.modelName;
    o.modelHash = info.modelHash;
    o.version = info.version;
    o.extra = info.unknown;
    const GenerationInfo back = parseA1111Parameters(writeA1111Parameters(info.settings, o));
    const auto& a = info.settings;
    const auto& b = back.settings;
    // LoRAs named only in "Lora hashes" are written back as <lora:…> tags in the prompt (A1111's text has no
    // other place for a LoRA), so the prompt changes once; after that the text is a fixed point.
    const bool promptGainsTags =
        std::any_of(a.loras.begin(), a.loras.end(), [](const api::LoraSetting& l) { return !l.fromPrompt; });
    // An unclosed '<' in the prompt swallows a following tag in A1111's own tag syntax (`<(\w+):([^>]+)>`), so the
    // appended tags are not read back there either: an ambiguity of the format, as with "Negative prompt:" above.
    if (promptGainsTags && a.prompt.find('<') != std::string::npos) {
    } else if (promptGainsTags) {
        A1111WriteOptions o2 = o;
        o2.extra = back.unknown;
        if (parseA1111Parameters(writeA1111Parameters(b, o2)).settings.prompt != b.prompt) __builtin_trap();
    } else if (a.prompt != b.prompt) {
        __builtin_trap();
    }
    if (a.negativePrompt != b.negativePrompt || a.steps != b.steps || a.seed != b.seed ||
        a.width != b.width || a.height != b.height || a.cfgScale != b.cfgScale || a.clipSkip != b.clipSkip ||
        a.batchSize != b.batchSize || a.guidanceRescale != b.guidanceRescale)
        __builtin_trap();
    if (a.controlnets != b.controlnets) __builtin_trap();  // sd-webui-controlnet units are a fixed point at once
    if (a.refiner.model != b.refiner.model || a.refiner.hash != b.refiner.hash || a.refiner.switchAt != b.refiner.switchAt)
        __builtin_trap();  // "Refiner: name [hash], Refiner switch at: f" reads back as written
    if (a.hires != b.hires) __builtin_trap();  // the Hires keys (and its Denoising strength) read back as written
    if (a.inpaint.maskBlur != b.inpaint.maskBlur || a.inpaint.invertMask != b.inpaint.invertMask ||
        a.inpaint.maskedContent != b.inpaint.maskedContent)
        __builtin_trap();  // Mask blur, Mask mode, Masked content
    if (back.modelName != info.modelName || back.modelHash != info.modelHash || back.version != info.version ||
        back.unknown != info.unknown)
        __builtin_trap();
    return 0;
}
