#include "ui/masklayer.h"

#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QSaveFile>

#include <algorithm>
#include <cmath>

namespace dd::ui {
namespace {
constexpr qsizetype kUndoSteps = 40;
}

MaskLayer::MaskLayer(QSize size) : m_mask(size, QImage::Format_Grayscale8) { m_mask.fill(0); }

bool MaskLayer::isEmpty() const {
    for (int y = 0; y < m_mask.height(); ++y) {
        const uchar* row = m_mask.constScanLine(y);
        if (std::any_of(row, row + m_mask.width(), [](uchar v) { return v != 0; })) return false;
    }
    return true;
}

void MaskLayer::remember() {
    m_undo.push_back(m_mask);
    if (m_undo.size() > kUndoSteps) m_undo.pop_front();
    m_redo.clear();
}

void MaskLayer::beginStroke() { remember(); }

// One round dab: full strength inside hardness·radius, falling linearly to nothing at the rim; a pixel keeps the
// stronger of its value and the dab's (the eraser: the weaker), so overlapping dabs of a stroke do not pile up.
void MaskLayer::dab(QPointF at, double radius, double hardness, bool erase) {
    radius = std::max(radius, 0.5);
    const double inner = std::clamp(hardness, 0.0, 1.0) * radius;
    const int x0 = std::max(0, int(std::floor(at.x() - radius))), x1 = std::min(m_mask.width() - 1, int(std::ceil(at.x() + radius)));
    const int y0 = std::max(0, int(std::floor(at.y() - radius))), y1 = std::min(m_mask.height() - 1, int(std::ceil(at.y() + radius)));
    for (int y = y0; y <= y1; ++y) {
        uchar* row = m_mask.scanLine(y);
        for (int x = x0; x <= x1; ++x) {
            const double d = std::hypot(x + 0.5 - at.x(), y + 0.5 - at.y());
            if (d >= radius) continue;
            const double strength = d <= inner ? 1.0 : (radius - d) / std::max(radius - inner, 1e-6);
            const int v = int(std::lround(255 * strength));
            row[x] = uchar(erase ? std::min<int>(row[x], 255 - v) : std::max<int>(row[x], v));
        }
    }
}

void MaskLayer::strokeTo(QPointF from, QPointF to, double radius, double hardness, bool erase) {
    // Dabs a quarter of the radius apart: a continuous line at any pointer speed.
    const double length = std::hypot(to.x() - from.x(), to.y() - from.y());
    const int n = std::max(1, int(std::ceil(length / std::max(radius / 4, 0.5))));
    for (int i = 0; i <= n; ++i) dab(from + (to - from) * (double(i) / n), radius, hardness, erase);
}

void MaskLayer::invert() {
    remember();
    m_mask.invertPixels();
}

void MaskLayer::clear() {
    remember();
    m_mask.fill(0);
}

void MaskLayer::setImage(const QImage& mask) {
    remember();
    m_mask = mask.convertToFormat(QImage::Format_Grayscale8).scaled(size(), Qt::IgnoreAspectRatio, Qt::SmoothTransformation);
}

void MaskLayer::undo() {
    if (m_undo.isEmpty()) return;
    m_redo.push_back(m_mask);
    m_mask = m_undo.takeLast();
}

void MaskLayer::redo() {
    if (m_redo.isEmpty()) return;
    m_undo.push_back(m_mask);
    m_mask = m_redo.takeLast();
}

QString MaskLayer::save(const QString& folder, QString* error) const {
    QCryptographicHash hash(QCryptographicHash::Sha256);  // row by row: a scan line's padding is not the mask
    for (int y = 0; y < m_mask.height(); ++y)
        hash.addData(QByteArrayView(reinterpret_cast<const char*>(m_mask.constScanLine(y)), m_mask.width()));
    const QString name = QString::fromLatin1(hash.result().toHex().left(16)) + ".png";
    const QString path = QDir(folder).filePath(name);
    if (QFile::exists(path)) return path;
    QSaveFile f(path);
    if (!QDir().mkpath(folder) || !f.open(QIODevice::WriteOnly) || !m_mask.save(&f, "PNG") || !f.commit()) {
        if (error) *error = path + ": " + (f.errorString().isEmpty() ? QStringLiteral("cannot be written") : f.errorString());
        return {};
    }
    return path;
}

} // namespace dd::ui
