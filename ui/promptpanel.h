#pragma once
// Prompt, negative prompt and the sampling settings, as one GenerationSettings value.
#include "core/settings/generation_settings.h"

#include <QWidget>

class QComboBox;
class QDoubleSpinBox;
class QLineEdit;
class QPlainTextEdit;
class QSpinBox;

namespace dd::ui {

class PromptPanel : public QWidget {
    Q_OBJECT
public:
    explicit PromptPanel(QWidget* parent = nullptr);
    settings::GenerationSettings settings() const;
    void setSettings(const settings::GenerationSettings& s);

private:
    QLineEdit* m_model;
    QPlainTextEdit* m_prompt;
    QPlainTextEdit* m_negative;
    QSpinBox* m_seed;
    QSpinBox* m_steps;
    QDoubleSpinBox* m_cfg;
    QComboBox* m_sampler;
    QSpinBox* m_width;
    QSpinBox* m_height;
    QSpinBox* m_batch;
};

} // namespace dd::ui
