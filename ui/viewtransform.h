#pragma once
// Zoom and pan of an image in a pane, shared by the canvas (PreviewView) and the compare view: zoom 1 is one
// image pixel per screen pixel, `center` the image point shown at the pane's centre. Two panes that share one
// transform show the same part of their images, which is how the compare view keeps A and B in step.
#include <QPointF>
#include <QRectF>
#include <QSize>

#include <algorithm>
#include <cmath>

namespace dd::ui {

struct ViewTransform {
    static constexpr double kMinZoom = 0.02, kMaxZoom = 64.0;

    double zoom = 1.0;
    QPointF center;

    void fit(QSize image, QSizeF pane) {
        if (image.isEmpty() || pane.isEmpty()) return;
        zoom = std::min(pane.width() / image.width(), pane.height() / image.height());
        center = QPointF(image.width() / 2.0, image.height() / 2.0);
    }
    QPointF toImage(const QRectF& pane, QPointF widgetPoint) const { return center + (widgetPoint - pane.center()) / zoom; }
    QRectF imageRect(const QRectF& pane, QSize image) const {
        return {pane.center() - center * zoom, QSizeF(image.width() * zoom, image.height() * zoom)};
    }
    // The image point under `widgetPoint` stays where it is (the wheel zooms about the cursor).
    void zoomAbout(const QRectF& pane, QPointF widgetPoint, double factor) {
        const QPointF before = toImage(pane, widgetPoint);
        zoom = std::clamp(zoom * factor, kMinZoom, kMaxZoom);
        center += before - toImage(pane, widgetPoint);
    }
    void panBy(QPointF widgetDelta) { center -= widgetDelta / zoom; }
    // A wheel's notches as a zoom factor: 120 units (one notch) zoom by about 20 %.
    static double wheelFactor(int angleDelta) { return std::pow(1.0015, angleDelta); }
};

} // namespace dd::ui
