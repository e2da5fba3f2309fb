#pragma once
// Preferences: the price profile used for the cost per image.
#include "ui/pricing.h"

#include <QDialog>

class QDoubleSpinBox;
class QRadioButton;

namespace dd::ui {

class PreferencesDialog : public QDialog {
    Q_OBJECT
public:
    explicit PreferencesDialog(const PriceProfile& price, QWidget* parent = nullptr);
    PriceProfile price() const;

private:
    QRadioButton* m_cloud;
    QRadioButton* m_local;
    QDoubleSpinBox* m_usdPerHour;
    QDoubleSpinBox* m_watts;
    QDoubleSpinBox* m_usdPerKwh;
};

} // namespace dd::ui
