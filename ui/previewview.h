#pragma once
// The canvas: live latent previews during a run, then the finished images in their place. One image is shown
// zoomable (the wheel zooms about the cursor, a drag pans, Fit / 100 %; the compare view's ViewTransform); a
// batch shows as a grid first, and a click opens one of its images (G or a double-click: the grid again). A caption
// under the picture says which image it is (seed and prompt). Left / Right step through a batch; past its ends,
// or for a single image, they ask the window for the previous / next result (stepRequested).
// With a mask layer (setMaskLayer) the shown image is painted on: the left button paints the mask, the right
// button erases, the middle button pans; the mask shows as a red tint and the brush as a circle.
// Extending (setExtending) shows the pixels an outpainting adds as a checkered frame around the picture, whose
// edges are dragged outwards to add more (OutpaintFrame); the view is fitted to the whole frame.
#include "ui/outpaintframe.h"
#include "ui/viewtransform.h"

#include <QImage>
#include <QList>
#include <QMargins>
#include <QStringList>
#include <QWidget>

namespace dd::ui {

class MaskLayer;

class PreviewView : public QWidget {
    Q_OBJECT
public:
    explicit PreviewView(QWidget* parent = nullptr);
    void showPreview(const QImage& image);  // a step's approximation (latent resolution), always fitted
    void showFinal(const QImage& image, const QString& caption = {});
    void showBatch(const QList<QImage>& images, const QStringList& captions);  // one image: as showFinal
    void setPlaceholder(const QString& text);

    const QImage& image() const;  // the image on screen (the first of a batch while the grid shows)
    bool isFinal() const { return m_final; }
    int previewsShown() const { return m_previews; }  // since the last final image
    int imageCount() const { return int(m_images.size()); }
    int currentIndex() const { return m_current; }  // the batch image shown alone; -1 while the grid shows
    void setCurrentIndex(int index);                // -1: the grid (batches only)
    bool showsGrid() const { return m_final && m_current < 0; }
    QString caption() const;
    int cellAt(QPoint widgetPoint) const;            // the grid cell under a point, -1 for none

    double zoom() const { return m_view.zoom; }
    QPointF pan() const { return m_view.center; }
    bool isFitted() const { return m_fitted; }  // follows the window's size until the user zooms or pans
    void setZoom(double zoom);                   // about the picture's centre
    void fitToView();

    // Painting a mask over the shown image (nullptr: off). The view does not own the layer; a layer of another
    // size than the shown image is not drawn or painted.
    void setMaskLayer(MaskLayer* mask);
    MaskLayer* maskLayer() const { return m_mask; }
    void setBrush(double radius, double hardness, bool erase);
    double brushRadius() const { return m_brushRadius; }
    void maskChanged();  // the layer was edited from outside (invert, clear, undo): draw it again
    // The box "only masked" inpainting will work on, in image pixels, drawn dashed over the mask (null: none).
    void setMaskedArea(const QRect& box);
    QRect maskedArea() const { return m_maskedArea; }
    // The outpainting's frame: pixels added on each side of the shown image, dragged on the canvas while extending.
    void setExtending(bool on);
    bool isExtending() const { return m_extending; }
    void setExtension(const QMargins& pixels);
    QMargins extension() const { return m_extension; }
    QRectF extensionFrame() const;  // in widget coordinates (null unless extending a shown image)

    QSize sizeHint() const override { return {512, 512}; }

signals:
    void currentChanged(int index);   // the batch image shown alone, -1 for the grid
    void stepRequested(int delta);    // -1 / +1: the previous / next result, from the window's list
    void zoomChanged(double zoom);
    void maskEdited();                // a stroke ended
    void brushRadiusChanged(double radius);  // [ and ] while painting
    void extensionEdited(const QMargins& pixels);  // an edge of the frame was dragged

protected:
    void paintEvent(QPaintEvent*) override;
    void resizeEvent(QResizeEvent*) override;
    void wheelEvent(QWheelEvent* e) override;
    void mousePressEvent(QMouseEvent* e) override;
    void mouseMoveEvent(QMouseEvent* e) override;
    void mouseReleaseEvent(QMouseEvent* e) override;
    void mouseDoubleClickEvent(QMouseEvent* e) override;
    void keyPressEvent(QKeyEvent* e) override;
    void leaveEvent(QEvent*) override;

private:
    QRect picturePane() const;        // the widget less the caption strip
    QList<QRect> gridCells() const;
    bool zoomable() const { return m_final && !m_images.isEmpty() && m_current >= 0; }
    bool painting() const;  // a mask layer of the shown image's size
    void paintMask(QPainter& p, const QRect& pane);
    bool extending() const { return m_extending && zoomable(); }
    OutpaintFrame frame() const;
    void paintExtension(QPainter& p);
    void setShown(const QList<QImage>& images, const QStringList& captions);
    void step(int delta);

    QList<QImage> m_images;   // the finished run's (or the library image), or the one live preview
    QStringList m_captions;
    QString m_placeholder;
    int m_current = 0;
    bool m_final = false;
    int m_previews = 0;
    ViewTransform m_view;
    bool m_fitted = true;
    QPointF m_dragFrom;
    bool m_dragged = false;
    MaskLayer* m_mask = nullptr;
    QImage m_tint;            // the mask as a red overlay; rebuilt when the mask changes
    bool m_tintStale = true;
    double m_brushRadius = 24, m_brushHardness = 0.7;
    bool m_eraser = false;
    bool m_stroking = false;  // a paint or erase stroke is under way
    bool m_strokeErases = false;
    QPointF m_strokeAt;       // the last stroke point, in image pixels
    QRect m_maskedArea;
    QPointF m_cursor{-1, -1};  // where the brush circle is drawn, in widget coordinates
    bool m_extending = false;
    QMargins m_extension;
    OutpaintFrame::Side m_dragSide = OutpaintFrame::None;
};

} // namespace dd::ui
