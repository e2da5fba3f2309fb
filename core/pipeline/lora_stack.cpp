#include "core/pipeline/lora_stack.h"

#include "core/io/model_hash.h"
#include "core/pipeline/sd_model.h"
#include "core/text/prompt_parser.h"
#include "core/text/text_input.h"

#include <filesystem>

namespace dd::pipeline {
namespace fs = std::filesystem;

const LoraStack::Cached& LoraStack::load(const std::string& path) {
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    const auto modified = int64_t(fs::last_write_time(path, ec).time_since_epoch().count());
    auto it = m_files.find(path);
    if (it == m_files.end() || it->second.size != size || it->second.modified != modified) {
        Cached c{io::loadLoraFile(path), io::loraShortHash(path), size, modified};
        it = m_files.insert_or_assign(path, std::move(c)).first;
    }
    return it->second;
}

std::vector<api::LoraSetting> LoraStack::apply(SdModel& m, const api::GenerationSettings& s,
                                                    const std::vector<std::string>& folders, std::vector<std::string>& warnings,
                                                    const WeightEditor& editor) {
    std::vector<api::LoraSetting> wanted;
    try {
        wanted = text::requestedLoras(s);
    } catch (const text::PromptError& e) {
        throw std::invalid_argument(std::string("prompt: ") + e.what());
    }

    std::ostringstream signature;
    signature.precision(17);
    signature << s.loraMode;
    std::vector<std::string> paths;
    for (auto& l : wanted) {
        paths.push_back(findLoraFile(l.name, folders, !l.fromPrompt));
        const auto& c = load(paths.back());
        l.hash = c.hash;
        signature << '|' << paths.back() << ':' << c.hash << ':' << l.textEncoderWeight << ':' << l.unetWeight;
        // Results (sidecars, A1111 text) name a LoRA by its file name without extension, as A1111 does: no path.
        l.name = fs::path(paths.back()).stem().string();
    }
    if (signature.str() == m_signature) return wanted;  // already on the networks

    const nn::LoraNetworks nets{m.unet, m.textEncoder, m.textEncoder2};
    std::vector<nn::LoraPatch> patches;
    for (size_t i = 0; i < wanted.size(); ++i) {
        const auto& c = m_files.at(paths[i]);
        auto bound = nn::bindLora(c.file, nets, wanted[i].unetWeight, wanted[i].textEncoderWeight);
        std::vector<std::string> skipped = bound.unmatched;
        skipped.insert(skipped.end(), c.file.unknownKeys.begin(), c.file.unknownKeys.end());
        if (!skipped.empty()) {
            std::string list;
            for (size_t k = 0; k < skipped.size() && k < 8; ++k) list += (k ? "; " : "") + skipped[k];
            if (skipped.size() > 8) list += "; and " + std::to_string(skipped.size() - 8) + " more";
            warnings.push_back(paths[i] + ": " + std::to_string(skipped.size()) + " LoRA entr" +
                               (skipped.size() == 1 ? "y" : "ies") + " not applied (" + list + ")");
        }
        if (bound.patches.empty())
            warnings.push_back(paths[i] + ": no layer of this LoRA fits the model (a LoRA for another model family?)");
        patches.insert(patches.end(), std::make_move_iterator(bound.patches.begin()), std::make_move_iterator(bound.patches.end()));
    }
    // Side paths leave the parameters alone; merging (or unmerging the previous set) writes them.
    const auto mode = s.loraMode == "side" ? nn::LoraMode::SidePath : nn::LoraMode::Merge;
    m_signature.clear();
    const auto edit = [&] { m_applier.apply(patches, mode); };  // apply() clears the previous set first
    if (editor && (m_applier.merged() || (mode == nn::LoraMode::Merge && !patches.empty()))) editor(edit);
    else edit();
    m_signature = signature.str();
    return wanted;
}

} // namespace dd::pipeline
