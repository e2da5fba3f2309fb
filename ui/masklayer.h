#pragma once
// The inpainting mask an artist paints over the canvas: grey, one byte per image pixel, white = repaint. Round
// brush strokes with a size and a hardness (1 = a hard edge, 0 = soft all the way from the centre), an eraser,
// invert and clear, each undoable (one step per stroke). Saved as a PNG named by its content, so a queued run
// keeps the mask it was given however the artist paints on.
#include <QImage>
#include <QList>
#include <QPointF>
#include <QString>

namespace dd::ui {

class MaskLayer {
public:
    explicit MaskLayer(QSize size);
    const QImage& image() const { return m_mask; }
    QSize size() const { return m_mask.size(); }
    bool isEmpty() const;  // nothing painted (every pixel black)

    // A stroke: begin, then segments as the pointer moves. Brush `radius` in image pixels.
    void beginStroke();
    void strokeTo(QPointF from, QPointF to, double radius, double hardness, bool erase);
    void invert();
    void clear();
    void setImage(const QImage& mask);  // a mask file brought in: converted to grey, scaled to size()
    bool canUndo() const { return !m_undo.isEmpty(); }
    bool canRedo() const { return !m_redo.isEmpty(); }
    void undo();
    void redo();

    // Writes the mask as <folder>/<first 16 hex of its SHA-256>.png (if not there yet); returns the path, or ""
    // (with `error` set) when it cannot be written.
    QString save(const QString& folder, QString* error = nullptr) const;

private:
    void remember();  // the state before an edit, for undo
    void dab(QPointF at, double radius, double hardness, bool erase);

    QImage m_mask;
    QList<QImage> m_undo, m_redo;
};

} // namespace dd::ui
