#pragma once
// A/B comparison of two results: side by side with synchronised zoom and pan, blink, swipe, a
// difference heatmap in place of B, the numbers (max |diff|, PSNR, SSIM: imaging/compare.h) and the settings
// and environment fields that differ. Any two images can be compared; results bring their settings along.
//
//   auto* view = new CompareView;
//   view->setResults(resultA, 0, resultB, 0);     // or setImages(a, b) + setSettings(sa, sb)
//   view->setMode(CompareView::Mode::Swipe);
#include "core/api/generation_result.h"
#include "core/compare/settings_diff.h"
#include "imaging/compare.h"

#include <QImage>
#include <QPointF>
#include <QWidget>

#include <optional>

class QButtonGroup;
class QCheckBox;
class QLabel;
class QSlider;
class QTimer;
class QTreeWidget;

namespace dd::ui {

class CompareCanvas;

class CompareView : public QWidget {
    Q_OBJECT
public:
    enum class Mode { SideBySide, Blink, Swipe };

    explicit CompareView(QWidget* parent = nullptr);

    // The two images; clears the settings lists. Metrics and heatmap are computed here (cheap at 1024²).
    void setImages(const api::Image& a, const api::Image& b, const QString& labelA = "A",
                   const QString& labelB = "B");
    // Settings and environment of A and B for the "what differs" list (optional: plain images have none).
    void setSettings(const api::GenerationSettings& a, const api::GenerationSettings& b);
    void setEnvironments(const api::Environment& a, const api::Environment& b);
    // Image `indexA` of result A against image `indexB` of result B, with their settings and environments.
    void setResults(const api::GenerationResult& a, int indexA, const api::GenerationResult& b, int indexB);

    Mode mode() const { return m_mode; }
    void setMode(Mode mode);
    bool heatmap() const { return m_heatmap; }
    void setHeatmap(bool on);  // B's place shows the difference heatmap

    // Zoom 1 = one image pixel per screen pixel. The pan is the image point at the centre of each pane; both
    // panes (and both images in blink / swipe) always share zoom and pan.
    double zoom() const;
    QPointF pan() const;
    void setZoom(double zoom);
    void setPan(QPointF imagePoint);
    void fitToView();

    double swipePosition() const;        // 0..1 of the width: A left of it, B right
    void setSwipePosition(double position);
    bool blinkShowsB() const;            // blink mode: which image is on screen now
    void setBlinkInterval(int ms);       // 0 stops the timer (space / click still toggles)
    void toggleBlink();

    const std::optional<imaging::ImageMetrics>& metrics() const { return m_metrics; }
    QString metricsText() const;               // what the numbers label shows
    QStringList differenceLines() const;       // "seed: 42 → 43", "environment device: CPU → NVIDIA H200"

signals:
    void modeChanged(dd::ui::CompareView::Mode mode);

private:
    void updateDifferences();
    void updateMetricsLabel();

    CompareCanvas* m_canvas;
    QButtonGroup* m_modes;
    QCheckBox* m_heatmapBox;
    QSlider* m_swipeSlider;
    QLabel* m_numbers;
    QTreeWidget* m_differences;
    QTimer* m_blinkTimer;
    Mode m_mode = Mode::SideBySide;
    bool m_heatmap = false;
    std::optional<imaging::ImageMetrics> m_metrics;
    std::vector<compare::FieldDifference> m_settingsDiff, m_environmentDiff;
    bool m_haveSettings = false, m_haveEnvironment = false;
};

} // namespace dd::ui
