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
PeakPrediction predictPeak(const settings::GenerationSettings& s, bool cuda);

} // namespace dd::ui
