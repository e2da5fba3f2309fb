#include "ui/preferencesdialog.h"

#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QRadioButton>
#include <QVBoxLayout>

namespace dd::ui {
namespace {

QDoubleSpinBox* number(const char* name, double lo, double hi, int decimals, double value, const QString& suffix, QWidget* parent) {
    auto* s = new QDoubleSpinBox(parent);
    s->setObjectName(name);
    s->setRange(lo, hi);
    s->setDecimals(decimals);
    s->setValue(value);
    s->setSuffix(suffix);
    return s;
}

} // namespace

PreferencesDialog::PreferencesDialog(const PriceProfile& price, QWidget* parent) : QDialog(parent) {
    setObjectName("preferencesDialog");
    setWindowTitle(tr("Preferences"));
    m_cloud = new QRadioButton(tr("Cloud GPU, billed per hour"), this);
    m_cloud->setObjectName("priceCloud");
    m_local = new QRadioButton(tr("Local GPU, electricity"), this);
    m_local->setObjectName("priceLocal");
    (price.mode == PriceProfile::Mode::Cloud ? m_cloud : m_local)->setChecked(true);
    m_usdPerHour = number("usdPerHour", 0, 1000, 3, price.usdPerHour, tr(" USD/h"), this);
    m_watts = number("watts", 0, 5000, 0, price.watts, tr(" W"), this);
    m_usdPerKwh = number("usdPerKwh", 0, 10, 3, price.usdPerKwh, tr(" USD/kWh"), this);
    auto sync = [this] {
        m_usdPerHour->setEnabled(m_cloud->isChecked());
        m_watts->setEnabled(m_local->isChecked());
        m_usdPerKwh->setEnabled(m_local->isChecked());
    };
    connect(m_cloud, &QRadioButton::toggled, this, sync);
    sync();

    auto* group = new QGroupBox(tr("Cost per image"), this);
    auto* form = new QFormLayout(group);
    form->addRow(m_cloud);
    form->addRow(tr("Price"), m_usdPerHour);
    form->addRow(m_local);
    form->addRow(tr("Power draw"), m_watts);
    form->addRow(tr("Electricity"), m_usdPerKwh);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(group);
    layout->addWidget(buttons);
}

PriceProfile PreferencesDialog::price() const {
    PriceProfile p;
    p.mode = m_cloud->isChecked() ? PriceProfile::Mode::Cloud : PriceProfile::Mode::Local;
    p.usdPerHour = m_usdPerHour->value();
    p.watts = m_watts->value();
    p.usdPerKwh = m_usdPerKwh->value();
    return p;
}

} // namespace dd::ui
