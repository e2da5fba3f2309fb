#include "ui/promptpanel.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QSpinBox>

namespace dd::ui {
namespace {

QSpinBox* spin(const char* name, int lo, int hi, int step, QWidget* parent) {
    auto* s = new QSpinBox(parent);
    s->setObjectName(name);
    s->setRange(lo, hi);
    s->setSingleStep(step);
    return s;
}

} // namespace

PromptPanel::PromptPanel(QWidget* parent) : QWidget(parent) {
    m_model = new QLineEdit(this);
    m_model->setObjectName("model");
    m_model->setToolTip(tr("A diffusers folder or a single-file .safetensors checkpoint"));
    m_prompt = new QPlainTextEdit(this);
    m_prompt->setObjectName("prompt");
    m_negative = new QPlainTextEdit(this);
    m_negative->setObjectName("negativePrompt");
    m_prompt->setMaximumHeight(90);
    m_negative->setMaximumHeight(60);
    m_seed = spin("seed", 0, 2147483647, 1, this);
    m_steps = spin("steps", 1, 150, 1, this);
    m_cfg = new QDoubleSpinBox(this);
    m_cfg->setObjectName("cfgScale");
    m_cfg->setRange(0, 30);
    m_cfg->setSingleStep(0.5);
    m_sampler = new QComboBox(this);
    m_sampler->setObjectName("sampler");
    m_sampler->addItems({"Euler a", "Euler", "DPM++ 2M", "DPM++ 2M Karras", "DPM++ 2M SDE", "DDIM", "PLMS", "Heun", "LMS",
                         "UniPC", "LCM"});
    m_width = spin("width", 64, 4096, 8, this);
    m_height = spin("height", 64, 4096, 8, this);
    m_batch = spin("batchSize", 1, 16, 1, this);

    auto* form = new QFormLayout(this);
    form->addRow(tr("Model"), m_model);
    form->addRow(tr("Prompt"), m_prompt);
    form->addRow(tr("Negative"), m_negative);
    form->addRow(tr("Sampler"), m_sampler);
    form->addRow(tr("Steps"), m_steps);
    form->addRow(tr("CFG scale"), m_cfg);
    form->addRow(tr("Seed"), m_seed);
    form->addRow(tr("Width"), m_width);
    form->addRow(tr("Height"), m_height);
    form->addRow(tr("Batch"), m_batch);
    setSettings({});
}

settings::GenerationSettings PromptPanel::settings() const {
    settings::GenerationSettings s;
    s.model = m_model->text().trimmed().toStdString();
    s.prompt = m_prompt->toPlainText().toStdString();
    s.negativePrompt = m_negative->toPlainText().toStdString();
    s.seed = m_seed->value();
    s.steps = m_steps->value();
    s.cfgScale = m_cfg->value();
    s.sampler = m_sampler->currentText().toStdString();
    s.width = m_width->value();
    s.height = m_height->value();
    s.batchSize = m_batch->value();
    return s;
}

void PromptPanel::setSettings(const settings::GenerationSettings& s) {
    m_model->setText(QString::fromStdString(s.model));
    m_prompt->setPlainText(QString::fromStdString(s.prompt));
    m_negative->setPlainText(QString::fromStdString(s.negativePrompt));
    m_seed->setValue(int(s.seed));
    m_steps->setValue(s.steps);
    m_cfg->setValue(s.cfgScale);
    m_sampler->setCurrentText(QString::fromStdString(s.sampler));
    m_width->setValue(s.width);
    m_height->setValue(s.height);
    m_batch->setValue(s.batchSize);
}

} // namespace dd::ui
