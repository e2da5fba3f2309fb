#pragma once
// The picture area: live latent previews during a run, then the final image in their place, scaled to fit.
#include <QImage>
#include <QWidget>

namespace dd::ui {

class PreviewView : public QWidget {
    Q_OBJECT
public:
    explicit PreviewView(QWidget* parent = nullptr);
    void showPreview(const QImage& image);  // a step's approximation (latent resolution)
    void showFinal(const QImage& image);
    void setPlaceholder(const QString& text);
    const QImage& image() const { return m_image; }
    bool isFinal() const { return m_final; }
    int previewsShown() const { return m_previews; }  // since the last final image
    QSize sizeHint() const override { return {512, 512}; }

protected:
    void paintEvent(QPaintEvent*) override;

private:
    QImage m_image;
    QString m_placeholder;
    bool m_final = false;
    int m_previews = 0;
};

} // namespace dd::ui
