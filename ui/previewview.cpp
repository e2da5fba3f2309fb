#include "ui/previewview.h"

#include <QPainter>

namespace dd::ui {

PreviewView::PreviewView(QWidget* parent) : QWidget(parent), m_placeholder(tr("No image yet")) {
    setObjectName("preview");
    setMinimumSize(256, 256);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void PreviewView::showPreview(const QImage& image) {
    if (image.isNull()) return;
    if (m_final) m_previews = 0;
    m_image = image;
    m_final = false;
    ++m_previews;
    update();
}

void PreviewView::showFinal(const QImage& image) {
    m_image = image;
    m_final = true;
    update();
}

void PreviewView::setPlaceholder(const QString& text) {
    m_placeholder = text;
    update();
}

void PreviewView::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), palette().color(QPalette::Dark));
    if (m_image.isNull()) {
        p.setPen(palette().color(QPalette::BrightText));
        p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap, m_placeholder);
        return;
    }
    QSize target = m_image.size().scaled(size(), Qt::KeepAspectRatio);
    // Previews are at latent resolution (1/8): smooth upscaling reads better than blocks.
    p.setRenderHint(QPainter::SmoothPixmapTransform);
    const QRect r(QPoint((width() - target.width()) / 2, (height() - target.height()) / 2), target);
    p.drawImage(r, m_image);
    if (!m_final) {
        p.setPen(Qt::white);
        p.drawText(r.adjusted(6, 4, -6, -4), Qt::AlignTop | Qt::AlignLeft, tr("preview"));
    }
}

} // namespace dd::ui
