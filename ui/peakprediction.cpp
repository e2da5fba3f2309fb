#include "ui/peakprediction.h"

namespace dd::ui {

// Until core/memory/predictor lands in dd_core: no prediction.
PeakPrediction predictPeak(const settings::GenerationSettings&, bool) { return {}; }

} // namespace dd::ui
