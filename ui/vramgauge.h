#pragma once
// Memory gauge: CUDA used / reserved / total (or, on CPU, the process's resident memory against RAM), the
// run's peak as a marker, the preset's budget as a line, the predicted peak before the run, and the per-stage
// peaks in the tooltip. Fed with MemorySample values (the engine's Observer::onMemory, and idle sampling).
#include "core/memory/memory_probe.h"

#include <QMap>
#include <QWidget>

namespace dd::ui {

class VramGauge : public QWidget {
    Q_OBJECT
public:
    explicit VramGauge(QWidget* parent = nullptr);

    // A new run: clears the peak marker and the stage peaks.
    void beginRun();
    void addSample(const QString& stage, const api::MemorySample& sample);
    void setBudget(qint64 bytes, const QString& presetName);  // 0 = no line
    void setPredictedPeak(qint64 bytes);                       // 0 = none

    bool cuda() const { return m_sample.cuda; }
    qint64 usedBytes() const;      // allocated (CUDA) or RSS (CPU)
    qint64 reservedBytes() const;  // CUDA only
    qint64 totalBytes() const;     // device memory or RAM
    qint64 runPeakBytes() const { return m_runPeak; }
    qint64 budgetBytes() const { return m_budget; }
    qint64 predictedPeakBytes() const { return m_predicted; }
    const QMap<QString, qint64>& stagePeaks() const { return m_stagePeaks; }
    int samples() const { return m_samples; }
    QString summary() const;  // the text drawn over the bar

    QSize sizeHint() const override { return {360, 34}; }
    QSize minimumSizeHint() const override { return {160, 30}; }

protected:
    void paintEvent(QPaintEvent*) override;

private:
    void updateToolTip();

    api::MemorySample m_sample;
    qint64 m_runPeak = 0, m_budget = 0, m_predicted = 0;
    QString m_presetName;
    QMap<QString, qint64> m_stagePeaks;  // "load", "encode", "denoise", "decode"
    int m_samples = 0;
};

} // namespace dd::ui
