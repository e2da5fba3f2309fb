#include "ui/hirespanel.h"
#include "ui/stringlists.h"

#include "core/pipeline/model_search.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QSpinBox>

namespace dd::ui {

HiresPanel::HiresPanel(QWidget* parent) : QGroupBox(tr("Hires fix"), parent) {
    setObjectName("hiresPanel");
    setCheckable(true);
    setChecked(false);
    const api::HiresSetting defaults;
    m_upscaler = new QComboBox;
    m_upscaler->setObjectName("hiresUpscaler");
    setUpscalerFolders({});
    m_upscaler->setToolTip(tr("Latent: the first pass's latents enlarged (fast). A network (ESRGAN, SwinIR… .safetensors "
                              "in Preferences' upscaler folders or DD_UPSCALER_PATH): its pixels enlarged, sharper, then "
                              "encoded again"));
    m_scale = new QDoubleSpinBox;
    m_scale->setObjectName("hiresScale");
    m_scale->setRange(1.0, 8.0);
    m_scale->setSingleStep(0.25);
    m_scale->setValue(defaults.scale);
    m_scale->setPrefix(QStringLiteral("× "));
    auto size = [](const char* name) {
        auto* s = new QSpinBox;
        s->setObjectName(name);
        s->setRange(0, 8192);
        s->setSingleStep(64);
        s->setSpecialValueText(QObject::tr("by scale"));
        return s;
    };
    m_resizeWidth = size("hiresResizeWidth");
    m_resizeHeight = size("hiresResizeHeight");
    m_steps = new QSpinBox;
    m_steps->setObjectName("hiresSteps");
    m_steps->setRange(0, 1000);
    m_steps->setSpecialValueText(tr("same as Steps"));
    m_denoising = new QDoubleSpinBox;
    m_denoising->setObjectName("hiresDenoising");
    m_denoising->setRange(0.01, 1.0);
    m_denoising->setSingleStep(0.05);
    m_denoising->setValue(defaults.denoising);
    m_denoising->setToolTip(tr("How much the second pass repaints: low keeps the first pass's picture, high adds detail and drifts"));
    auto* resize = new QHBoxLayout;
    resize->addWidget(m_resizeWidth);
    resize->addWidget(new QLabel(QStringLiteral("×")));
    resize->addWidget(m_resizeHeight);
    auto* form = new QFormLayout(this);
    form->addRow(tr("Upscaler"), m_upscaler);
    form->addRow(tr("Upscale by"), m_scale);
    form->addRow(tr("Resize to"), resize);
    form->addRow(tr("Hires steps"), m_steps);
    form->addRow(tr("Denoising"), m_denoising);
    connect(m_upscaler, &QComboBox::currentTextChanged, this, &HiresPanel::changed);
    for (auto* s : {m_scale, m_denoising}) connect(s, &QDoubleSpinBox::valueChanged, this, &HiresPanel::changed);
    for (auto* s : {m_resizeWidth, m_resizeHeight, m_steps}) connect(s, &QSpinBox::valueChanged, this, &HiresPanel::changed);
    connect(this, &QGroupBox::toggled, this, &HiresPanel::changed);
}

// A1111's latent upscalers, then the networks in `folders` and DD_UPSCALER_PATH by the name A1111's infotext gives
// them (the file's stem); the choice shown stays.
void HiresPanel::setUpscalerFolders(const QStringList& folders) {
    const QString current = m_upscaler->currentText();
    const QSignalBlocker quiet(m_upscaler);
    m_upscaler->clear();
    for (const auto& u : api::hiresUpscalers()) m_upscaler->addItem(QString::fromStdString(u));
    for (const auto& u : api::resizeUpscalers()) m_upscaler->addItem(QString::fromStdString(u));
    for (const auto& file : pipeline::upscalerFiles(toStdStrings(folders)))
        m_upscaler->addItem(QFileInfo(QString::fromStdString(file)).completeBaseName(), QString::fromStdString(file));
    if (!current.isEmpty()) {
        if (m_upscaler->findText(current) < 0) m_upscaler->addItem(current);
        m_upscaler->setCurrentText(current);
    }
}

void HiresPanel::apply(api::GenerationSettings& s) const {
    auto& h = s.hires;
    h.enabled = isChecked();
    h.upscaler = m_upscaler->currentText().toStdString();
    h.scale = m_scale->value();
    const bool resize = m_resizeWidth->value() > 0 && m_resizeHeight->value() > 0;  // one alone means nothing
    h.resizeWidth = resize ? m_resizeWidth->value() : 0;
    h.resizeHeight = resize ? m_resizeHeight->value() : 0;
    h.steps = m_steps->value();
    h.denoising = m_denoising->value();
}

void HiresPanel::setFrom(const api::GenerationSettings& s) {
    const auto& h = s.hires;
    const QString upscaler = QString::fromStdString(h.upscaler);
    if (m_upscaler->findText(upscaler) < 0) m_upscaler->addItem(upscaler);  // a restored network: the run looks for it
    m_upscaler->setCurrentText(upscaler);
    m_scale->setValue(h.scale);
    m_resizeWidth->setValue(h.resizeWidth);
    m_resizeHeight->setValue(h.resizeHeight);
    m_steps->setValue(h.steps);
    m_denoising->setValue(h.denoising);
    setChecked(h.enabled);
}

QString HiresPanel::summary(const api::GenerationSettings& s) const {
    if (!isChecked()) return tr("off");
    api::GenerationSettings shown = s;
    apply(shown);
    const api::Size to = api::hiresSize(shown);
    return tr("→ %1×%2, denoising %3").arg(to.width).arg(to.height).arg(m_denoising->value(), 0, 'f', 2);
}

} // namespace dd::ui
