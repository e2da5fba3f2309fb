#include "ui/imageinputpanel.h"

#include "ui/dialoghooks.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QImageReader>
#include <QLineEdit>
#include <QSpinBox>

namespace dd::ui {

ImageInputPanel::ImageInputPanel(QWidget* parent) : QGroupBox(tr("Start from an image"), parent) {
    setObjectName("imageInputPanel");
    setCheckable(true);
    setChecked(false);
    const QString images = tr("Images (*.png *.jpg *.jpeg *.webp)");
    m_image = new QLineEdit;
    m_image->setObjectName("initImage");
    m_image->setPlaceholderText(tr("the picture to rework"));
    m_mask = new QLineEdit;
    m_mask->setObjectName("maskImage");
    m_mask->setPlaceholderText(tr("none: rework the whole picture"));
    m_mask->setToolTip(tr("White repaints, black keeps (inpainting)"));
    m_strength = new QDoubleSpinBox;
    m_strength->setObjectName("strength");
    m_strength->setRange(0.01, 1.0);
    m_strength->setSingleStep(0.05);
    m_strength->setValue(api::GenerationSettings().strength);
    m_strength->setToolTip(tr("Denoising strength: how much of the picture is repainted"));
    m_maskBlur = new QSpinBox;
    m_maskBlur->setObjectName("maskBlur");
    m_maskBlur->setRange(0, 64);
    m_maskBlur->setValue(api::InpaintSetting().maskBlur);
    m_maskBlur->setSuffix(tr(" px"));
    m_maskBlur->setToolTip(tr("Feathers the mask's edge so the seam disappears (A1111's Mask blur)"));
    m_invert = new QCheckBox(tr("Repaint where the mask is black"));
    m_invert->setObjectName("invertMask");
    m_content = new QComboBox;
    m_content->setObjectName("maskedContent");
    m_content->addItems({"original", "fill", "latent noise", "latent nothing"});
    m_content->setToolTip(tr("What the repainted area starts from"));
    m_onlyMasked = new QCheckBox(tr("Only the masked area, at full size"));
    m_onlyMasked->setObjectName("onlyMasked");
    m_onlyMasked->setToolTip(tr("Works at the full size on the box around the mask (dashed on the canvas) and pastes "
                                "it back: more detail for a small area (A1111's Inpaint area: Only masked)"));
    m_padding = new QSpinBox;
    m_padding->setObjectName("maskedPadding");
    m_padding->setRange(0, 256);
    m_padding->setValue(api::InpaintSetting().maskedPadding);
    m_padding->setSuffix(tr(" px"));
    m_padding->setToolTip(tr("Context around the mask's box that the model sees (A1111's Only masked padding)"));

    auto row = [this](QLineEdit* edit, const QString& caption, const QString& filter) {
        return pathRow(this, edit, caption, filter, false, "initImage");
    };
    auto side = [](const char* name, const QString& tip) {
        auto* s = new QSpinBox;
        s->setObjectName(name);
        s->setRange(0, 2048);
        s->setSingleStep(32);
        s->setToolTip(tip);
        return s;
    };
    m_left = side("outpaintLeft", tr("Pixels added on the left"));
    m_top = side("outpaintTop", tr("Pixels added at the top"));
    m_right = side("outpaintRight", tr("Pixels added on the right"));
    m_bottom = side("outpaintBottom", tr("Pixels added at the bottom"));
    m_fill = new QComboBox;
    m_fill->setObjectName("outpaintFill");
    m_fill->addItems({"mirror", "edge", "blur", "noise"});
    m_fill->setToolTip(tr("What the new area starts from; mirror hid the seam best when measured"));
    auto* sides = new QHBoxLayout;
    for (QSpinBox* s : {m_left, m_top, m_right, m_bottom}) sides->addWidget(s);
    auto* form = new QFormLayout(this);
    form->addRow(tr("Image"), row(m_image, tr("Image to start from"), images));
    form->addRow(tr("Strength"), m_strength);
    form->addRow(tr("Mask"), row(m_mask, tr("Inpainting mask"), images));
    form->addRow(tr("Mask blur"), m_maskBlur);
    form->addRow(QString(), m_invert);
    form->addRow(tr("Masked content"), m_content);
    form->addRow(QString(), m_onlyMasked);
    form->addRow(tr("Padding"), m_padding);
    form->addRow(tr("Extend ←↑→↓"), sides);
    form->addRow(tr("Extension fill"), m_fill);

    const auto updateMaskFields = [this] {
        const bool mask = !m_mask->text().trimmed().isEmpty();
        for (QWidget* w : std::initializer_list<QWidget*>{m_maskBlur, m_invert, m_content, m_onlyMasked}) w->setEnabled(mask);
        m_padding->setEnabled(mask && m_onlyMasked->isChecked());
    };
    connect(m_onlyMasked, &QCheckBox::toggled, this, updateMaskFields);
    connect(m_mask, &QLineEdit::textChanged, this, updateMaskFields);
    updateMaskFields();
    for (QLineEdit* e : {m_image, m_mask}) connect(e, &QLineEdit::textChanged, this, &ImageInputPanel::changed);
    for (QSpinBox* s : {m_left, m_top, m_right, m_bottom}) connect(s, &QSpinBox::valueChanged, this, &ImageInputPanel::changed);
    connect(m_strength, &QDoubleSpinBox::valueChanged, this, &ImageInputPanel::changed);
    for (QSpinBox* s : {m_maskBlur, m_padding}) connect(s, &QSpinBox::valueChanged, this, &ImageInputPanel::changed);
    for (QCheckBox* c : {m_invert, m_onlyMasked}) connect(c, &QCheckBox::toggled, this, &ImageInputPanel::changed);
    connect(this, &QGroupBox::toggled, this, &ImageInputPanel::changed);
}

void ImageInputPanel::apply(api::GenerationSettings& s) const {
    const QString image = m_image->text().trimmed();
    if (!isChecked() || image.isEmpty()) {
        s.initImage.clear();
        s.inpaint = {};
        s.outpaint = {};
        return;
    }
    s.initImage = image.toStdString();
    s.strength = m_strength->value();
    s.inpaint.mask = m_mask->text().trimmed().toStdString();
    s.inpaint.maskBlur = m_maskBlur->value();
    s.inpaint.invertMask = m_invert->isChecked();
    s.inpaint.maskedContent = m_content->currentText().toStdString();
    s.inpaint.onlyMasked = !s.inpaint.mask.empty() && m_onlyMasked->isChecked();
    s.inpaint.maskedPadding = m_padding->value();
    auto& o = s.outpaint;
    o = {m_left->value(), m_top->value(), m_right->value(), m_bottom->value(), m_fill->currentText().toStdString()};
    if (!o.enabled()) return;
    if (!s.inpaint.mask.empty()) return;  // both: Generate says that outpainting makes its own mask
    const QSize size = QImageReader(image).size();
    if (!size.isValid()) return;  // unreadable: Generate names the file
    const api::Size extended = api::fitOutpaint(o, size.width(), size.height());
    s.width = extended.width;
    s.height = extended.height;
}

void ImageInputPanel::setFrom(const api::GenerationSettings& s) {
    m_image->setText(QString::fromStdString(s.initImage));
    m_strength->setValue(s.strength);
    m_mask->setText(QString::fromStdString(s.inpaint.mask));
    m_maskBlur->setValue(s.inpaint.maskBlur);
    m_invert->setChecked(s.inpaint.invertMask);
    m_content->setCurrentText(QString::fromStdString(s.inpaint.maskedContent));
    m_onlyMasked->setChecked(s.inpaint.onlyMasked);
    m_padding->setValue(s.inpaint.maskedPadding);
    m_left->setValue(s.outpaint.left);
    m_top->setValue(s.outpaint.top);
    m_right->setValue(s.outpaint.right);
    m_bottom->setValue(s.outpaint.bottom);
    m_fill->setCurrentText(QString::fromStdString(s.outpaint.fill));
    setChecked(!s.initImage.empty());
}

void ImageInputPanel::useImage(const QString& path) {
    m_image->setText(path);
    m_mask->clear();
    for (QSpinBox* s : {m_left, m_top, m_right, m_bottom}) s->setValue(0);
    setChecked(true);
}

void ImageInputPanel::setMask(const QString& path) { m_mask->setText(path); }

QString ImageInputPanel::initImage() const { return m_image->text().trimmed(); }

QMargins ImageInputPanel::outpaint() const { return {m_left->value(), m_top->value(), m_right->value(), m_bottom->value()}; }

void ImageInputPanel::setOutpaint(const QMargins& pixels) {
    m_left->setValue(pixels.left());
    m_top->setValue(pixels.top());
    m_right->setValue(pixels.right());
    m_bottom->setValue(pixels.bottom());
}

QString ImageInputPanel::summary() const {
    if (!isChecked() || m_image->text().trimmed().isEmpty()) return tr("off");
    api::GenerationSettings s;
    apply(s);
    if (s.outpaint.enabled()) return tr("outpaint to %1×%2").arg(s.width).arg(s.height);
    const QString kind = m_mask->text().trimmed().isEmpty() ? tr("img2img") : tr("inpaint");
    return kind + " " + QString::number(m_strength->value(), 'f', 2);
}

} // namespace dd::ui
