#pragma once
// Start from an image (docs/inpainting.md): the init image and the denoising strength (img2img), a mask that
// limits the repaint to its white part (inpainting) with A1111's mask options, or pixels to add on each side
// (outpainting: the size follows the image). A checkable group: unchecked means txt2img.
#include "core/api/generation_settings.h"

#include <QGroupBox>
#include <QMargins>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLineEdit;
class QSpinBox;

namespace dd::ui {

class ImageInputPanel : public QGroupBox {
    Q_OBJECT
public:
    explicit ImageInputPanel(QWidget* parent = nullptr);
    // Writes the panel's fields into `s` (clears them when unchecked); an outpainting sets s.width × s.height to the
    // extended image's size, right and bottom grown to a multiple of 8.
    void apply(api::GenerationSettings& s) const;
    // Shows what `s` holds: checked when it names an init image.
    void setFrom(const api::GenerationSettings& s);
    // "Send to img2img": `path` becomes the init image, the mask is cleared, the group is switched on.
    void useImage(const QString& path);
    void setMask(const QString& path);  // a painted mask's file ("" = none)
    QString initImage() const;
    // The pixels an outpainting adds on each side (the canvas's extension frame).
    QMargins outpaint() const;
    void setOutpaint(const QMargins& pixels);
    // "off", "img2img 0.75", "inpaint 0.75": the folded section's summary.
    QString summary() const;

signals:
    void changed();

private:
    QLineEdit *m_image, *m_mask;
    QDoubleSpinBox* m_strength;
    QSpinBox* m_maskBlur;
    QCheckBox* m_invert;
    QCheckBox* m_onlyMasked = nullptr;
    QSpinBox* m_padding = nullptr;
    QComboBox* m_content;
    QSpinBox *m_left, *m_top, *m_right, *m_bottom;
    QComboBox* m_fill;
};

} // namespace dd::ui
