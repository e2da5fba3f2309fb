#include "ui/textencoderbox.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QSpinBox>

namespace dd::ui {

TextEncoderBox::TextEncoderBox(QWidget* parent) : QWidget(parent) {
    m_clipSkip = new QSpinBox(this);
    m_clipSkip->setObjectName("clipSkip");
    m_clipSkip->setRange(1, 12);
    m_clipSkip->setToolTip(tr("A1111's Clip skip: 1 reads the text encoder's last layer, 2 the one before it (what many "
                              "anime models were trained with)"));
    m_sdxlClipSkip = new QComboBox(this);
    m_sdxlClipSkip->setObjectName("sdxlClipSkip");
    for (const auto& mode : api::sdxlClipSkipModes()) {
        const QString value = QString::fromStdString(mode);
        m_sdxlClipSkip->addItem(mode == "A1111" ? tr("as A1111 (ignored)") : tr("as %1").arg(value), value);
    }
    m_sdxlClipSkip->setToolTip(tr("Tools read clip skip differently on SDXL: diffusers one layer deeper than SD 1.x, "
                                  "ComfyUI as SD 1.x, A1111 not at all. Set from a restored image's tool"));
    m_emphasis = new QComboBox(this);
    m_emphasis->setObjectName("emphasis");
    for (const auto& mode : api::emphasisModes()) m_emphasis->addItem(QString::fromStdString(mode), QString::fromStdString(mode));
    m_emphasis->setToolTip(tr("A1111's Emphasis: how (word:1.3) weights apply. Original rescales the prompt to its mean "
                              "afterwards, No norm does not, Ignore drops the weights, None reads brackets as text"));
    m_padConds = new QCheckBox(tr("Pad prompt and negative to one length"), this);
    m_padConds->setObjectName("padConds");
    m_padConds->setToolTip(tr("A1111's Pad conds: off (its default) runs a long prompt and a short negative each at its "
                              "own length; on pads the shorter with empty chunks, as older versions of this app did"));
    auto* form = new QFormLayout(this);
    form->setContentsMargins(0, 0, 0, 0);
    form->addRow(tr("Clip skip"), m_clipSkip);
    form->addRow(tr("on SDXL"), m_sdxlClipSkip);
    form->addRow(tr("Emphasis"), m_emphasis);
    form->addRow(m_padConds);
    connect(m_clipSkip, qOverload<int>(&QSpinBox::valueChanged), this, &TextEncoderBox::changed);
    for (QComboBox* c : {m_sdxlClipSkip, m_emphasis})
        connect(c, qOverload<int>(&QComboBox::currentIndexChanged), this, &TextEncoderBox::changed);
    connect(m_padConds, &QCheckBox::toggled, this, &TextEncoderBox::changed);
}

void TextEncoderBox::setFrom(const api::GenerationSettings& s) {
    m_clipSkip->setValue(s.clipSkip);
    m_sdxlClipSkip->setCurrentIndex(std::max(0, m_sdxlClipSkip->findData(QString::fromStdString(s.sdxlClipSkip))));
    m_emphasis->setCurrentIndex(std::max(0, m_emphasis->findData(QString::fromStdString(s.emphasis))));
    m_padConds->setChecked(s.padConds);
}

void TextEncoderBox::applyTo(api::GenerationSettings& s) const {
    s.clipSkip = m_clipSkip->value();
    s.sdxlClipSkip = m_sdxlClipSkip->currentData().toString().toStdString();
    s.emphasis = m_emphasis->currentData().toString().toStdString();
    s.padConds = m_padConds->isChecked();
}

QString TextEncoderBox::summary() const {
    const api::GenerationSettings defaults;
    api::GenerationSettings s;
    applyTo(s);
    QStringList parts;
    if (s.clipSkip != defaults.clipSkip) parts << tr("clip skip %1").arg(s.clipSkip);
    if (s.sdxlClipSkip != defaults.sdxlClipSkip) parts << tr("SDXL %1").arg(m_sdxlClipSkip->currentText());
    if (s.emphasis != defaults.emphasis) parts << tr("emphasis %1").arg(m_emphasis->currentText());
    if (s.padConds != defaults.padConds) parts << tr("padded");
    return parts.join(QStringLiteral(" · "));
}

} // namespace dd::ui
