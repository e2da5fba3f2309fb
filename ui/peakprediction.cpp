#include "ui/peakprediction.h"

#include "core/memory/shipped_presets.h"
#include "core/pipeline/memory_prediction.h"
#include "core/text/text_input.h"

namespace dd::ui {

PeakPrediction predictPeak(const api::GenerationSettings& s, const api::GenerationSettings* lastRun, qint64 budgetBytes,
                           const std::vector<std::string>& loraFolders) {
    try {
        // An unreadable model throws: no prediction (the load itself reports the problem).
        const auto p = pipeline::predictRun(s, {.loraFolders = loraFolders,
                                                .textCached = lastRun && text::sameTextEncoding(s, *lastRun)});
        PeakPrediction out;
        out.peakBytes = p.peak();
        out.stage = QString::fromLatin1(p.peakStage());
        const auto& stage = out.stage == "load" ? p.load : out.stage == "encode" ? p.encode : out.stage == "decode" ? p.decode : p.denoise;
        out.detail = QString::fromStdString(stage.peakAt);
        if (budgetBytes > 0) {
            const auto fit = memory::fits(p, budgetBytes, &memory::shippedPresets());
            out.fits = fit.fits;
            out.advice = QString::fromStdString(fit.message);
        }
        return out;
    } catch (const std::exception&) {
        return {};
    }
}

} // namespace dd::ui
