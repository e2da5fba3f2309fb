#pragma once
// The hires fix for the next run (docs/hires.md): a second pass at a larger size, from the first pass's latents
// enlarged by one of A1111's latent upscalers. A checkable group: unchecked means one pass.
#include "core/api/generation_settings.h"

#include <QGroupBox>
#include <QStringList>

class QComboBox;
class QDoubleSpinBox;
class QSpinBox;

namespace dd::ui {

class HiresPanel : public QGroupBox {
    Q_OBJECT
public:
    explicit HiresPanel(QWidget* parent = nullptr);
    void apply(api::GenerationSettings& s) const;  // s.hires as shown (disabled when unchecked)
    void setFrom(const api::GenerationSettings& s);
    void setUpscalerFolders(const QStringList& folders);  // the networks offered besides the latent upscalers
    // "off", "×2 → 1024×1024": the folded section's summary, for the first pass's size `s`.
    QString summary(const api::GenerationSettings& s) const;

signals:
    void changed();

private:
    QComboBox* m_upscaler;
    QDoubleSpinBox *m_scale, *m_denoising;
    QSpinBox *m_resizeWidth, *m_resizeHeight, *m_steps;
};

} // namespace dd::ui
