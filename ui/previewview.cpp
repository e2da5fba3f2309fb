#include "ui/previewview.h"

#include "ui/masklayer.h"

#include "core/api/generation_settings.h"

#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

namespace dd::ui {
namespace {

const QImage kNoImage;

} // namespace

PreviewView::PreviewView(QWidget* parent) : QWidget(parent), m_placeholder(tr("No image yet")) {
    setObjectName("preview");
    setMinimumSize(256, 256);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
    setFocusPolicy(Qt::StrongFocus);
}

void PreviewView::showPreview(const QImage& image) {
    if (image.isNull()) return;
    if (m_final) m_previews = 0;
    m_images = {image};
    m_captions = {};
    m_current = 0;
    m_final = false;
    ++m_previews;
    update();
}

void PreviewView::showFinal(const QImage& image, const QString& caption) { showBatch({image}, {caption}); }

void PreviewView::showBatch(const QList<QImage>& images, const QStringList& captions) {
    setShown(images, captions);
    m_current = m_images.size() > 1 ? -1 : 0;
    emit currentChanged(m_current);
    update();
}

// A new picture of the size the user zoomed into keeps that zoom and pan (stepping through results compares the
// same detail); any other picture is fitted.
void PreviewView::setShown(const QList<QImage>& images, const QStringList& captions) {
    const QSize before = m_final && !m_images.isEmpty() ? m_images.front().size() : QSize();
    m_images = images;
    m_captions = captions;
    m_final = true;
    if (m_fitted || m_images.isEmpty() || m_images.front().size() != before) fitToView();
}

void PreviewView::setPlaceholder(const QString& text) {
    m_placeholder = text;
    update();
}

const QImage& PreviewView::image() const {
    if (m_images.isEmpty()) return kNoImage;
    return m_images[std::max(0, m_current)];
}

void PreviewView::setCurrentIndex(int index) {
    if (!m_final || m_images.isEmpty()) return;
    index = m_images.size() > 1 ? std::clamp(index, -1, int(m_images.size()) - 1) : 0;
    if (index == m_current) return;
    m_current = index;
    if (m_current >= 0 && m_fitted) fitToView();
    emit currentChanged(m_current);
    update();
}

QString PreviewView::caption() const {
    if (!m_final || m_images.isEmpty()) return {};
    if (m_current < 0) return tr("%n images: click one to see it alone", nullptr, int(m_images.size()));
    QString text = m_current < m_captions.size() ? m_captions[m_current] : QString();
    if (m_images.size() > 1) text = tr("%1 of %2").arg(m_current + 1).arg(m_images.size()) + (text.isEmpty() ? "" : " · " + text);
    return text;
}

QRect PreviewView::picturePane() const {
    const int strip = m_final ? fontMetrics().height() + 8 : 0;
    return rect().adjusted(0, 0, 0, -strip);
}

QList<QRect> PreviewView::gridCells() const {
    const int n = int(m_images.size());
    const int cols = int(std::ceil(std::sqrt(double(n))));
    const int rows = (n + cols - 1) / cols;
    const QRect pane = picturePane();
    QList<QRect> cells;
    for (int i = 0; i < n; ++i) {
        const int c = i % cols, r = i / cols;
        cells.push_back(QRect(pane.left() + c * pane.width() / cols, pane.top() + r * pane.height() / rows,
                              pane.width() / cols, pane.height() / rows).adjusted(3, 3, -3, -3));
    }
    return cells;
}

int PreviewView::cellAt(QPoint widgetPoint) const {
    if (!showsGrid()) return -1;
    const auto cells = gridCells();
    for (int i = 0; i < cells.size(); ++i)
        if (cells[i].contains(widgetPoint)) return i;
    return -1;
}

void PreviewView::setZoom(double zoom) {
    if (!zoomable()) return;
    const QRectF pane = picturePane();
    m_view.zoomAbout(pane, pane.center(), zoom / m_view.zoom);
    m_fitted = false;
    emit zoomChanged(m_view.zoom);
    update();
}

void PreviewView::fitToView() {
    if (extending()) {
        // The whole frame in view with room around it, so every edge can be taken and dragged further.
        const QMargins& m = m_extension;
        const QSize whole = image().size().grownBy(m);
        const QSizeF pane = picturePane().size();
        const double room = std::max(24.0, 0.08 * std::min(pane.width(), pane.height()));
        m_view.fit(whole, pane - QSizeF(2 * room, 2 * room));
        m_view.center -= QPointF(m.left(), m.top());
    } else {
        m_view.fit(image().size(), picturePane().size());
    }
    m_fitted = true;
    emit zoomChanged(m_view.zoom);
    update();
}

void PreviewView::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), palette().color(QPalette::Dark));
    if (m_images.isEmpty()) {
        p.setPen(palette().color(QPalette::BrightText));
        p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap, m_placeholder);
        return;
    }
    const QRect pane = picturePane();
    auto fitted = [](const QImage& img, const QRect& box) {
        const QSize s = img.size().scaled(box.size(), Qt::KeepAspectRatio);
        return QRect(box.center() - QPoint(s.width() / 2, s.height() / 2), s);
    };
    if (!m_final) {
        // Previews are at latent resolution (1/8): smooth upscaling reads better than blocks.
        p.setRenderHint(QPainter::SmoothPixmapTransform);
        const QRect r = fitted(m_images.front(), pane);
        p.drawImage(r, m_images.front());
        p.setPen(Qt::white);
        p.drawText(r.adjusted(6, 4, -6, -4), Qt::AlignTop | Qt::AlignLeft, tr("preview"));
        return;
    }
    if (m_current < 0) {
        p.setRenderHint(QPainter::SmoothPixmapTransform);
        const auto cells = gridCells();
        for (int i = 0; i < cells.size(); ++i) p.drawImage(fitted(m_images[i], cells[i]), m_images[i]);
    } else {
        // Enlarged: nearest neighbour, so single pixels are seen as they are.
        p.setRenderHint(QPainter::SmoothPixmapTransform, m_view.zoom < 1.0);
        p.save();
        p.setClipRect(pane);
        p.drawImage(m_view.imageRect(pane, image().size()), image());
        if (painting()) paintMask(p, pane);
        if (extending()) paintExtension(p);
        p.restore();
    }
    const QRect strip(0, pane.bottom() + 1, width(), height() - pane.height());
    p.setPen(palette().color(QPalette::BrightText));
    p.drawText(strip.adjusted(8, 0, -8, 0), Qt::AlignVCenter | Qt::AlignLeft,
               fontMetrics().elidedText(caption(), Qt::ElideRight, strip.width() - 16));
}

void PreviewView::resizeEvent(QResizeEvent*) {
    if (m_fitted) fitToView();
}

void PreviewView::wheelEvent(QWheelEvent* e) {
    e->accept();
    if (!zoomable()) return;
    m_view.zoomAbout(picturePane(), e->position(), ViewTransform::wheelFactor(e->angleDelta().y()));
    m_fitted = false;
    emit zoomChanged(m_view.zoom);
    update();
}

void PreviewView::mousePressEvent(QMouseEvent* e) {
    m_dragFrom = e->position();
    m_dragged = false;
    if (extending() && e->button() == Qt::LeftButton) {
        m_dragSide = frame().sideAt(m_extension, e->position());
        if (m_dragSide != OutpaintFrame::None) return;
    }
    if (painting() && (e->button() == Qt::LeftButton || e->button() == Qt::RightButton)) {
        m_stroking = true;
        m_strokeErases = m_eraser != (e->button() == Qt::RightButton);
        m_strokeAt = m_view.toImage(picturePane(), e->position());
        m_mask->beginStroke();
        m_mask->strokeTo(m_strokeAt, m_strokeAt, m_brushRadius, m_brushHardness, m_strokeErases);
        maskChanged();
    }
}

void PreviewView::mouseMoveEvent(QMouseEvent* e) {
    if (m_dragSide != OutpaintFrame::None) {
        const QMargins m = OutpaintFrame::with(m_extension, m_dragSide, frame().pixelsAt(m_dragSide, e->position()));
        if (m != m_extension) {
            m_extension = m;
            emit extensionEdited(m);
            update();
        }
        return;
    }
    if (extending() && !e->buttons()) {
        const auto side = frame().sideAt(m_extension, e->position());
        setCursor(side == OutpaintFrame::None ? Qt::ArrowCursor
                  : side == OutpaintFrame::Left || side == OutpaintFrame::Right ? Qt::SizeHorCursor : Qt::SizeVerCursor);
    }
    if (painting()) {
        m_cursor = e->position();
        if (m_stroking) {
            const QPointF at = m_view.toImage(picturePane(), e->position());
            m_mask->strokeTo(m_strokeAt, at, m_brushRadius, m_brushHardness, m_strokeErases);
            m_strokeAt = at;
            maskChanged();
            return;
        }
        update();
    }
    const Qt::MouseButton panButton = painting() ? Qt::MiddleButton : Qt::LeftButton;
    if (!(e->buttons() & panButton) || !zoomable()) return;
    const QPointF delta = e->position() - m_dragFrom;
    if (!m_dragged && delta.manhattanLength() < 3) return;
    m_dragged = true;
    m_view.panBy(delta);
    m_dragFrom = e->position();
    m_fitted = false;
    update();
}

void PreviewView::mouseReleaseEvent(QMouseEvent* e) {
    if (m_dragSide != OutpaintFrame::None) {
        m_dragSide = OutpaintFrame::None;
        if (m_fitted) fitToView();  // the grown frame comes into view
        return;
    }
    if (m_stroking) {
        m_stroking = false;
        emit maskEdited();
        return;
    }
    if (m_dragged || e->button() != Qt::LeftButton) return;
    const int cell = cellAt(e->position().toPoint());
    if (cell >= 0) setCurrentIndex(cell);
}

void PreviewView::mouseDoubleClickEvent(QMouseEvent*) {
    if (m_final && m_images.size() > 1 && m_current >= 0) setCurrentIndex(-1);
}

void PreviewView::step(int delta) {
    const int n = int(m_images.size());
    if (m_final && n > 1 && m_current >= 0 && m_current + delta >= 0 && m_current + delta < n)
        setCurrentIndex(m_current + delta);
    else
        emit stepRequested(delta);
}

void PreviewView::keyPressEvent(QKeyEvent* e) {
    if (painting() && (e->key() == Qt::Key_BracketLeft || e->key() == Qt::Key_BracketRight)) {
        setBrush(m_brushRadius * (e->key() == Qt::Key_BracketRight ? 1.25 : 0.8), m_brushHardness, m_eraser);
        emit brushRadiusChanged(m_brushRadius);
        return;
    }
    switch (e->key()) {
    case Qt::Key_Left: step(-1); break;
    case Qt::Key_Right: step(+1); break;
    case Qt::Key_F: fitToView(); break;
    case Qt::Key_1: setZoom(1.0); break;
    case Qt::Key_Plus:
    case Qt::Key_Equal: if (zoomable()) setZoom(m_view.zoom * 1.25); break;
    case Qt::Key_Minus: if (zoomable()) setZoom(m_view.zoom / 1.25); break;
    case Qt::Key_G: setCurrentIndex(-1); break;
    default: QWidget::keyPressEvent(e);
    }
}

void PreviewView::leaveEvent(QEvent*) {
    m_cursor = {-1, -1};
    update();
}

bool PreviewView::painting() const { return m_mask && zoomable() && m_mask->size() == image().size(); }

void PreviewView::setMaskLayer(MaskLayer* mask) {
    m_mask = mask;
    m_stroking = false;
    setMouseTracking(mask != nullptr || m_extending);
    setCursor(mask ? Qt::CrossCursor : Qt::ArrowCursor);
    maskChanged();
}

void PreviewView::setBrush(double radius, double hardness, bool erase) {
    m_brushRadius = std::clamp(radius, 1.0, 1024.0);
    m_brushHardness = std::clamp(hardness, 0.0, 1.0);
    m_eraser = erase;
    update();
}

void PreviewView::maskChanged() {
    m_tintStale = true;
    update();
}

void PreviewView::setMaskedArea(const QRect& box) {
    if (box == m_maskedArea) return;
    m_maskedArea = box;
    update();
}

void PreviewView::setExtending(bool on) {
    if (on == m_extending) return;
    m_extending = on;
    m_dragSide = OutpaintFrame::None;
    setMouseTracking(on || m_mask);
    if (!on) setCursor(m_mask ? Qt::CrossCursor : Qt::ArrowCursor);
    if (m_fitted) fitToView();
    update();
}

void PreviewView::setExtension(const QMargins& pixels) {
    if (pixels == m_extension) return;
    m_extension = pixels;
    if (m_fitted && m_dragSide == OutpaintFrame::None) fitToView();
    update();
}

OutpaintFrame PreviewView::frame() const { return {m_view.imageRect(picturePane(), image().size()), m_view.zoom}; }

QRectF PreviewView::extensionFrame() const { return extending() ? frame().extended(m_extension) : QRectF(); }

// The added pixels as a checkerboard (nothing there yet), the frame dashed, a handle in the middle of each edge,
// and what the run will make: "+N" on each grown side and the new size.
void PreviewView::paintExtension(QPainter& p) {
    static const QPixmap checker = [] {
        QPixmap tile(16, 16);
        tile.fill(QColor(90, 90, 90));
        QPainter t(&tile);
        t.fillRect(0, 0, 8, 8, QColor(130, 130, 130));
        t.fillRect(8, 8, 8, 8, QColor(130, 130, 130));
        return tile;
    }();
    const OutpaintFrame f = frame();
    const QRectF outer = f.extended(m_extension);
    QPainterPath ring;
    ring.addRect(outer);
    ring.addRect(f.picture);  // odd-even fill: the frame only
    p.fillPath(ring, QBrush(checker));
    p.setBrush(Qt::NoBrush);
    p.setPen(QPen(Qt::black, 3));
    p.drawRect(outer);
    p.setPen(QPen(Qt::white, 1, Qt::DashLine));
    p.drawRect(outer);
    const QPointF handles[] = {{outer.left(), outer.center().y()}, {outer.center().x(), outer.top()},
                               {outer.right(), outer.center().y()}, {outer.center().x(), outer.bottom()}};
    p.setPen(QPen(Qt::black, 1));
    p.setBrush(Qt::white);
    for (const QPointF& h : handles) p.drawRect(QRectF(h - QPointF(5, 5), QSizeF(10, 10)));

    api::OutpaintSetting o{m_extension.left(), m_extension.top(), m_extension.right(), m_extension.bottom()};
    const api::Size size = api::fitOutpaint(o, image().width(), image().height());
    p.setPen(Qt::white);
    const auto label = [&](const QRectF& box, int pixels) {
        if (pixels > 0) p.drawText(box, Qt::AlignCenter, QStringLiteral("+%1").arg(pixels));
    };
    const QRectF& in = f.picture;
    label(QRectF(QPointF(outer.left(), in.top()), QPointF(in.left(), in.bottom())), o.left);
    label(QRectF(QPointF(in.left(), outer.top()), QPointF(in.right(), in.top())), o.top);
    label(QRectF(QPointF(in.right(), in.top()), QPointF(outer.right(), in.bottom())), o.right);
    label(QRectF(QPointF(in.left(), in.bottom()), QPointF(in.right(), outer.bottom())), o.bottom);
    const QString total = QStringLiteral("%1 × %2").arg(size.width).arg(size.height);
    const QRectF tag(outer.topLeft() + QPointF(8, 8), QSizeF(fontMetrics().horizontalAdvance(total) + 10, fontMetrics().height() + 4));
    p.fillRect(tag, QColor(0, 0, 0, 160));
    p.drawText(tag, Qt::AlignCenter, total);
}

void PreviewView::paintMask(QPainter& p, const QRect& pane) {
    if (m_tintStale) {
        // Red where the mask repaints, as strong as the mask, at most half opaque: the picture stays readable.
        const QImage& mask = m_mask->image();
        m_tint = QImage(mask.size(), QImage::Format_ARGB32_Premultiplied);
        for (int y = 0; y < mask.height(); ++y) {
            const uchar* in = mask.constScanLine(y);
            auto* out = reinterpret_cast<QRgb*>(m_tint.scanLine(y));
            for (int x = 0; x < mask.width(); ++x) out[x] = qPremultiply(qRgba(255, 40, 40, in[x] * 140 / 255));
        }
        m_tintStale = false;
    }
    const QRectF shown = m_view.imageRect(pane, m_tint.size());
    p.drawImage(shown, m_tint);
    if (!m_maskedArea.isNull()) {
        const double k = shown.width() / m_tint.width();
        const QRectF box(shown.topLeft() + QPointF(m_maskedArea.x(), m_maskedArea.y()) * k, QSizeF(m_maskedArea.size()) * k);
        p.setBrush(Qt::NoBrush);
        p.setPen(QPen(Qt::black, 3));
        p.drawRect(box);
        p.setPen(QPen(Qt::white, 1, Qt::DashLine));
        p.drawRect(box);
    }
    if (m_cursor.x() >= 0) {
        p.setRenderHint(QPainter::Antialiasing);
        p.setBrush(Qt::NoBrush);
        const double r = m_brushRadius * m_view.zoom;
        p.setPen(QPen(Qt::black, 3));
        p.drawEllipse(m_cursor, r, r);
        p.setPen(QPen(m_eraser ? QColor(120, 200, 255) : QColor(Qt::white), 1));
        p.drawEllipse(m_cursor, r, r);
    }
}

} // namespace dd::ui
