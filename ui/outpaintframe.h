#pragma once
// Outpaint handles on the canvas: the picture's extended frame, whose edges are dragged outwards to add pixels on
// that side. Geometry only, in widget coordinates, given where the picture is shown and its zoom (screen pixels per
// image pixel); PreviewView draws it and feeds it the mouse.
#include <QMargins>
#include <QRectF>

#include <algorithm>
#include <cmath>

namespace dd::ui {

struct OutpaintFrame {
    enum Side { None = -1, Left, Top, Right, Bottom };
    static constexpr int kStep = 8;         // the engine's sizes are multiples of 8
    static constexpr int kMaxPixels = 2048; // as the image section's fields
    static constexpr double kGrab = 7;      // how near an edge the mouse takes it, in screen pixels

    QRectF picture;  // the picture as shown
    double zoom = 1;

    QRectF extended(const QMargins& m) const {
        return picture.adjusted(-m.left() * zoom, -m.top() * zoom, m.right() * zoom, m.bottom() * zoom);
    }
    // The edge under `p`, if any; corners go to the horizontal edge's side first (left / right).
    Side sideAt(const QMargins& m, QPointF p) const {
        const QRectF r = extended(m);
        const bool inY = p.y() > r.top() - kGrab && p.y() < r.bottom() + kGrab;
        const bool inX = p.x() > r.left() - kGrab && p.x() < r.right() + kGrab;
        if (inY && std::abs(p.x() - r.left()) <= kGrab) return Left;
        if (inY && std::abs(p.x() - r.right()) <= kGrab) return Right;
        if (inX && std::abs(p.y() - r.top()) <= kGrab) return Top;
        if (inX && std::abs(p.y() - r.bottom()) <= kGrab) return Bottom;
        return None;
    }
    // The pixels added on `side` when its edge is dragged to `p`: the distance past the picture's edge in image
    // pixels, to the nearest multiple of 8; dragged inwards, none.
    int pixelsAt(Side side, QPointF p) const {
        double past = 0;
        switch (side) {
        case Left: past = picture.left() - p.x(); break;
        case Top: past = picture.top() - p.y(); break;
        case Right: past = p.x() - picture.right(); break;
        case Bottom: past = p.y() - picture.bottom(); break;
        case None: return 0;
        }
        const int pixels = int(std::lround(past / zoom / kStep)) * kStep;
        return std::clamp(pixels, 0, kMaxPixels);
    }
    static QMargins with(QMargins m, Side side, int pixels) {
        switch (side) {
        case Left: m.setLeft(pixels); break;
        case Top: m.setTop(pixels); break;
        case Right: m.setRight(pixels); break;
        case Bottom: m.setBottom(pixels); break;
        case None: break;
        }
        return m;
    }
};

} // namespace dd::ui
