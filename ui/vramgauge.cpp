#include "ui/vramgauge.h"

#include "ui/modelinfo.h"

#include <QPainter>
#include <QPainterPath>

#include <algorithm>

namespace dd::ui {

VramGauge::VramGauge(QWidget* parent) : QWidget(parent) {
    setObjectName("vramGauge");
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    updateToolTip();
}

void VramGauge::beginRun() {
    m_runPeak = 0;
    m_stagePeaks.clear();
    updateToolTip();
    update();
}

qint64 VramGauge::usedBytes() const { return m_sample.cuda ? m_sample.deviceAllocated : m_sample.hostRss; }
qint64 VramGauge::reservedBytes() const { return m_sample.cuda ? m_sample.deviceReserved : 0; }
qint64 VramGauge::totalBytes() const { return m_sample.cuda ? m_sample.deviceTotal : m_sample.hostTotal; }

void VramGauge::addSample(const QString& stage, const api::MemorySample& sample) {
    m_sample = sample;
    ++m_samples;
    if (stage != QLatin1String("idle")) {
        // The sample's own peak counters cover the time between samples too.
        const qint64 peak = sample.cuda ? std::max(sample.devicePeak, sample.deviceAllocated) : std::max(sample.hostPeak, sample.hostRss);
        m_runPeak = std::max(m_runPeak, peak);
        m_stagePeaks[stage] = std::max(m_stagePeaks.value(stage), peak);
    }
    updateToolTip();
    update();
}

void VramGauge::setBudget(qint64 bytes, const QString& presetName) {
    m_budget = bytes;
    m_presetName = presetName;
    updateToolTip();
    update();
}

void VramGauge::setPredictedPeak(qint64 bytes) {
    m_predicted = bytes;
    updateToolTip();
    update();
}

QString VramGauge::summary() const {
    if (m_samples == 0) return tr("memory: not sampled yet");
    if (m_sample.cuda)
        return tr("%1: %2 used · %3 reserved · %4 total")
            .arg(QString::fromStdString(m_sample.deviceName), formatBytes(usedBytes()), formatBytes(reservedBytes()),
                 formatBytes(totalBytes()));
    return tr("CPU: process %1 of %2 RAM").arg(formatBytes(usedBytes()), formatBytes(totalBytes()));
}

void VramGauge::updateToolTip() {
    QStringList lines{summary()};
    if (m_runPeak > 0) lines << tr("Peak this run: %1").arg(formatBytes(m_runPeak));
    if (m_budget > 0) lines << tr("Preset %1 budget: %2").arg(m_presetName, formatBytes(m_budget));
    if (m_predicted > 0) lines << tr("Predicted peak: %1").arg(formatBytes(m_predicted));
    static const char* order[] = {"load", "encode", "denoise", "decode"};
    for (const char* stage : order)
        if (m_stagePeaks.contains(QLatin1String(stage)))
            lines << tr("  %1 peak: %2").arg(QLatin1String(stage), formatBytes(m_stagePeaks.value(QLatin1String(stage))));
    setToolTip(lines.join('\n'));
}

void VramGauge::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    const QRectF bar = QRectF(rect()).adjusted(1, 1, -1, -1);
    p.setPen(palette().color(QPalette::Mid));
    p.setBrush(palette().color(QPalette::Base));
    p.drawRoundedRect(bar, 3, 3);
    const qint64 total = totalBytes();
    if (total > 0) {
        auto xOf = [&](qint64 bytes) { return bar.left() + bar.width() * std::clamp(double(bytes) / double(total), 0.0, 1.0); };
        p.setPen(Qt::NoPen);
        if (reservedBytes() > 0) {
            p.setBrush(QColor(120, 170, 230, 120));
            p.drawRect(QRectF(bar.topLeft(), QPointF(xOf(reservedBytes()), bar.bottom())));
        }
        const bool over = m_budget > 0 && usedBytes() > m_budget;
        p.setBrush(over ? QColor(220, 80, 60, 200) : QColor(60, 130, 210, 200));
        p.drawRect(QRectF(bar.topLeft(), QPointF(xOf(usedBytes()), bar.bottom())));
        if (m_budget > 0) {
            p.setPen(QPen(QColor(30, 30, 160), 2, Qt::DashLine));
            p.drawLine(QPointF(xOf(m_budget), bar.top()), QPointF(xOf(m_budget), bar.bottom()));
        }
        if (m_predicted > 0) {
            const double x = xOf(m_predicted);
            QPainterPath tri;
            tri.moveTo(x - 5, bar.top());
            tri.lineTo(x + 5, bar.top());
            tri.lineTo(x, bar.top() + 7);
            tri.closeSubpath();
            p.fillPath(tri, QColor(230, 140, 20));
        }
        if (m_runPeak > 0) {
            p.setPen(QPen(QColor(200, 30, 30), 2));
            p.drawLine(QPointF(xOf(m_runPeak), bar.top()), QPointF(xOf(m_runPeak), bar.bottom()));
        }
    }
    p.setPen(palette().color(QPalette::Text));
    p.drawText(bar.adjusted(6, 0, -6, 0), Qt::AlignVCenter | Qt::AlignLeft, summary());
}

} // namespace dd::ui
