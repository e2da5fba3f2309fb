#include "ui/previewcadence.h"

#include <algorithm>
#include <cmath>

namespace dd::ui {

void PreviewCadence::reset() {
    m_stepTotal = m_previewTotal = 0;
    m_steps = m_previews = 0;
}

void PreviewCadence::addStepSeconds(double s) {
    m_stepTotal += std::max(0.0, s);
    ++m_steps;
}

void PreviewCadence::addPreviewSeconds(double s) {
    m_previewTotal += std::max(0.0, s);
    ++m_previews;
}

int PreviewCadence::interval() const {
    if (m_previews == 0 || m_steps == 0) return 1;
    const double perPreview = m_previewTotal / m_previews, perStep = m_stepTotal / m_steps;
    if (perStep <= 0) return 1;
    return std::max(1, int(std::ceil(perPreview / (m_budget * perStep))));
}

bool PreviewCadence::wantPreview(int /*step*/, int /*total*/) const {
    if (m_previews == 0) return true;
    // Spend the budget as it accrues: a preview is allowed when the time spent so far plus one more preview
    // stays within budget × the step time so far (+ one step, the one just run).
    const double perPreview = m_previewTotal / m_previews;
    return m_previewTotal + perPreview <= m_budget * m_stepTotal;
}

} // namespace dd::ui
