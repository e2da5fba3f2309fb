#pragma once
// The memory a run will peak at, predicted before it starts (core/memory/predictor). Torch-free.
#include "core/api/generation_settings.h"

#include <QString>

#include <string>
#include <vector>

namespace dd::ui {

struct PeakPrediction {
    qint64 peakBytes = -1;  // < 0: no prediction (unknown model, predictor unavailable)
    QString stage;          // where the peak is ("denoise")
    QString detail;         // what sets it
    bool fits = true;       // within the budget predictPeak was given (always, without one)
    QString advice;         // when not: "needs 7.8 GB, preset budget 6 GB: enable VAE tiling or switch to 6gb"
};

// Model shapes are kept per model file (reading headers takes milliseconds, not per keystroke).
// `lastRun`: the settings of the last finished run; when the text inputs match, the engine's conditioning cache
// is hot and the prediction leaves the text encoders out. `budgetBytes` > 0: also the verdict against it, with
// the toggles and the shipped preset that would make it fit (memory::fits).
// `loraFolders`: where the prompt's LoRAs are looked for (their size counts).
PeakPrediction predictPeak(const api::GenerationSettings& s, const api::GenerationSettings* lastRun = nullptr,
                           qint64 budgetBytes = 0, const std::vector<std::string>& loraFolders = {});

} // namespace dd::ui
