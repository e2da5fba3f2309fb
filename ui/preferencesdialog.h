#pragma once
// Preferences: where images are saved, TAESD previews, model folders, threads, the price profile used for the
// (opt-in) cost per image.
#include "ui/apppreferences.h"
#include "ui/pricing.h"

#include <QDialog>

class QCheckBox;
class QComboBox;
class QGroupBox;
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
    QCheckBox* m_autosave;
    QLineEdit* m_outputFolder;
    QLineEdit* m_nameTemplate;
    QComboBox* m_format;
    QSpinBox* m_quality;
    QGroupBox* m_costGroup;
    QRadioButton* m_cloud;
    QRadioButton* m_local;
    QDoubleSpinBox* m_usdPerHour;
    QDoubleSpinBox* m_watts;
    QDoubleSpinBox* m_usdPerKwh;
    QCheckBox* m_taesd;
    QLineEdit* m_taesdFolder;
    QPlainTextEdit* m_modelFolders;
    QPlainTextEdit* m_upscalerFolders;
    QPlainTextEdit* m_loraFolders;
    QPlainTextEdit* m_wildcardFolders;
    QPlainTextEdit* m_embeddingFolders;
    QPlainTextEdit* m_watchedFolders;
    QSpinBox* m_threads;
};

} // namespace dd::ui
