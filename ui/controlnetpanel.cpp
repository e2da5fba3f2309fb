#include "ui/controlnetpanel.h"

#include "ui/dialoghooks.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>

namespace dd::ui {
namespace {

QDoubleSpinBox* spin(double lo, double hi, double step, int decimals, const QString& name) {
    auto* s = new QDoubleSpinBox;
    s->setRange(lo, hi);
    s->setSingleStep(step);
    s->setDecimals(decimals);
    s->setObjectName(name);
    return s;
}

} // namespace

ControlNetPanel::ControlNetPanel(QWidget* parent) : QGroupBox(tr("ControlNet"), parent) {
    setObjectName("controlNetPanel");
    setCheckable(true);
    setChecked(false);
    m_model = new QLineEdit;
    m_model->setObjectName("controlNetModel");
    m_model->setPlaceholderText(tr("diffusers ControlNet folder"));
    m_image = new QLineEdit;
    m_image->setObjectName("controlNetImage");
    m_image->setPlaceholderText(tr("control image"));
    m_preprocessor = new QComboBox;
    m_preprocessor->setObjectName("controlNetPreprocessor");
    for (const auto& p : api::controlPreprocessors()) m_preprocessor->addItem(QString::fromStdString(p));
    m_weight = spin(0, 10, 0.05, 2, "controlNetWeight");
    m_weight->setValue(1.0);
    m_start = spin(0, 1, 0.05, 2, "controlNetStart");
    m_end = spin(0, 1, 0.05, 2, "controlNetEnd");
    m_end->setValue(1.0);
    m_thresholdA = spin(0, 255, 1, 1, "controlNetThresholdA");
    m_thresholdB = spin(0, 255, 1, 1, "controlNetThresholdB");
    m_more = new QLabel;
    m_more->setWordWrap(true);
    m_more->hide();

    auto row = [this](QLineEdit* edit, const QString& caption, const QString& filter, bool folder) {
        return pathRow(this, edit, caption, filter, folder);
    };
    auto* range = new QHBoxLayout;
    range->addWidget(m_start);
    range->addWidget(new QLabel(tr("to")));
    range->addWidget(m_end);
    auto* thresholds = new QHBoxLayout;
    thresholds->addWidget(m_thresholdA);
    thresholds->addWidget(m_thresholdB);
    auto* form = new QFormLayout(this);
    form->addRow(tr("Model"), row(m_model, tr("ControlNet folder"), {}, true));
    form->addRow(tr("Image"), row(m_image, tr("Control image"), tr("Images (*.png *.jpg *.jpeg *.webp)"), false));
    form->addRow(tr("Preprocessor"), m_preprocessor);
    form->addRow(tr("Thresholds"), thresholds);
    form->addRow(tr("Weight"), m_weight);
    form->addRow(tr("Steps"), range);
    form->addRow(m_more);

    connect(m_preprocessor, &QComboBox::currentTextChanged, this, [this] {
        // A preprocessor's own defaults whenever it is chosen.
        double a = -1, b = -1;
        api::defaultThresholds(m_preprocessor->currentText().toStdString(), a, b);
        m_thresholdA->setValue(std::max(a, 0.0));
        m_thresholdB->setValue(std::max(b, 0.0));
        updateThresholds();
    });
    for (auto* s : {m_weight, m_start, m_end, m_thresholdA, m_thresholdB})
        connect(s, &QDoubleSpinBox::valueChanged, this, &ControlNetPanel::changed);
    connect(m_model, &QLineEdit::textChanged, this, &ControlNetPanel::changed);
    connect(m_image, &QLineEdit::textChanged, this, &ControlNetPanel::changed);
    connect(this, &QGroupBox::toggled, this, &ControlNetPanel::changed);
    updateThresholds();
}

void ControlNetPanel::updateThresholds() {
    const QString p = m_preprocessor->currentText();
    const bool edges = p == "canny" || p == "scribble";
    m_thresholdA->setEnabled(edges || p == "blur");
    m_thresholdB->setEnabled(edges);
    m_thresholdA->setToolTip(p == "blur" ? tr("blur sigma") : tr("low threshold"));
    m_thresholdB->setToolTip(tr("high threshold"));
}

std::vector<api::ControlNetSetting> ControlNetPanel::controlnets() const {
    if (!isChecked()) return {};
    api::ControlNetSetting c = m_hidden;
    c.model = m_model->text().toStdString();
    c.image = m_image->text().toStdString();
    c.preprocessor = m_preprocessor->currentText().toStdString();
    c.weight = m_weight->value();
    c.guidanceStart = m_start->value();
    c.guidanceEnd = m_end->value();
    c.thresholdA = m_thresholdA->isEnabled() ? m_thresholdA->value() : -1;
    c.thresholdB = m_thresholdB->isEnabled() ? m_thresholdB->value() : -1;
    std::vector<api::ControlNetSetting> out{c};
    out.insert(out.end(), m_others.begin(), m_others.end());
    return out;
}

void ControlNetPanel::setControlNets(const std::vector<api::ControlNetSetting>& units) {
    setChecked(!units.empty());
    if (units.empty()) {
        m_others.clear();
        m_more->hide();
        return;
    }
    const auto& c = units.front();
    m_hidden = c;
    m_model->setText(QString::fromStdString(c.model));
    m_image->setText(QString::fromStdString(c.image));
    m_preprocessor->setCurrentText(QString::fromStdString(c.preprocessor));  // sets the defaults first
    double a = c.thresholdA, b = c.thresholdB;
    api::defaultThresholds(c.preprocessor, a, b);
    m_thresholdA->setValue(std::max(a, 0.0));
    m_thresholdB->setValue(std::max(b, 0.0));
    m_weight->setValue(c.weight);
    m_start->setValue(c.guidanceStart);
    m_end->setValue(c.guidanceEnd);
    m_others.assign(units.begin() + 1, units.end());
    m_more->setText(tr("+ %n more ControlNet(s) from the restored settings, kept as they were", nullptr, int(m_others.size())));
    m_more->setVisible(!m_others.empty());
    updateThresholds();
}

} // namespace dd::ui
