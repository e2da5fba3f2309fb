#pragma once
// Decides which steps get a live preview so previews cost at most a fraction (5 %) of the denoising time.
// Plain C++ (no Qt, no torch): the worker feeds it measured costs, tests feed it numbers.
namespace dd::ui {

class PreviewCadence {
public:
    // budget: the fraction of step time previews may take (0.05); a huge budget means every step.
    explicit PreviewCadence(double budget = 0.05) : m_budget(budget) {}
    void reset();
    // Measured time of one denoising step (without the preview) and of one preview (build + convert + send).
    void addStepSeconds(double s);
    void addPreviewSeconds(double s);
    // True when a preview at `step` (1-based) of `total` keeps the spent preview time within budget.
    // The first step always gets one (the cost is unknown before it is measured).
    bool wantPreview(int step, int total) const;
    // Every n-th step at the current costs (1 = every step).
    int interval() const;
    double stepSeconds() const { return m_stepTotal; }
    double previewSeconds() const { return m_previewTotal; }
    int previews() const { return m_previews; }
    // Preview time / step time over the run so far.
    double costFraction() const { return m_stepTotal > 0 ? m_previewTotal / m_stepTotal : 0; }

private:
    double m_budget;
    double m_stepTotal = 0, m_previewTotal = 0;
    int m_steps = 0, m_previews = 0;
};

} // namespace dd::ui
