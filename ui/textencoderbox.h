#pragma once
// How a prompt reaches the text encoders: clip skip (and how SDXL's two encoders take it), A1111's emphasis mode,
// and whether a prompt and its negative are padded to one length. A1111 keeps these in its Settings; restored
// images set them, so the window shows them beside the prompt, where an artist can see and change them.
#include "core/api/generation_settings.h"

#include <QWidget>

class QCheckBox;
class QComboBox;
class QSpinBox;

namespace dd::ui {

class TextEncoderBox : public QWidget {
    Q_OBJECT
public:
    explicit TextEncoderBox(QWidget* parent = nullptr);
    void setFrom(const api::GenerationSettings& s);
    void applyTo(api::GenerationSettings& s) const;
    // What differs from a new run's defaults, e.g. "clip skip 2 · SDXL as A1111"; "" at the defaults.
    QString summary() const;

signals:
    void changed();

private:
    QSpinBox* m_clipSkip;
    QComboBox* m_sdxlClipSkip;
    QComboBox* m_emphasis;
    QCheckBox* m_padConds;
};

} // namespace dd::ui
