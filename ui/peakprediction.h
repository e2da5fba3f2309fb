#pragma once
// The memory a run will peak at, predicted before it starts (core/memory/predictor). Torch-free.
#include "core/settings/generation_settings.h"

#include <QString>

namespace dd::ui {

struct PeakPrediction {
    qint64 peakBytes = -1;  // < 0: no prediction (unknown model, predictor unavailable)
    QString stage;          // where the peak is ("denoise")
    QString detail;         // what sets it
};

// Model shapes are cached per model path (reading headers takes milliseconds, not per keystroke).
// `lastRun`: the settings of the last finished run; when the text inputs match, the engine's conditioning cache
// is hot and the prediction leaves the text encoders out.
PeakPrediction predictPeak(const settings::GenerationSettings& s, bool cuda,
                           const settings::GenerationSettings* lastRun = nullptr);

// The engine's conditioning-cache key (core/pipeline/conditioning_cache.h), seen from the settings.
bool sameTextInputs(const settings::GenerationSettings& a, const settings::GenerationSettings& b);

} // namespace dd::ui
