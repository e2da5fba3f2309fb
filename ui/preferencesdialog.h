#pragma once
// Preferences: the price profile used for the cost per image, TAESD previews, model folders.
#include "ui/apppreferences.h"
#include "ui/pricing.h"

#include <QDialog>

class QCheckBox;
class QDoubleSpinBox;
class QLineEdit;
class QPlainTextEdit;
class QSpinBox;
class QRadioButton;

namespace dd::ui {

class PreferencesDialog : public QDialog {
    Q_OBJECT
public:
    PreferencesDialog(const PriceProfile& price, const AppPreferences& prefs, QWidget* parent = nullptr);
    PriceProfile price() const;
    AppPreferences preferences() const;

private:
    QRadioButton* m_cloud;
    QRadioButton* m_local;
    QDoubleSpinBox* m_usdPerHour;
    QDoubleSpinBox* m_watts;
    QDoubleSpinBox* m_usdPerKwh;
    QCheckBox* m_taesd;
    QLineEdit* m_taesdFolder;
    QPlainTextEdit* m_modelFolders;
    QSpinBox* m_threads;
};

} // namespace dd::ui
