#pragma once
// One ControlNet for the next run (docs/controlnet.md): model folder, control image, preprocessor, weight and step
// range. A checkable group: unchecked means no ControlNet. Several ControlNets at once are a CLI / settings-file
// feature; a restored run with more than one keeps the others unchanged (shown as a note).
#include "core/api/control_setting.h"

#include <QGroupBox>

#include <vector>

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;

namespace dd::ui {

class ControlNetPanel : public QGroupBox {
    Q_OBJECT
public:
    explicit ControlNetPanel(QWidget* parent = nullptr);
    // Empty when unchecked; else the shown unit first, then any further ones a restore brought.
    std::vector<api::ControlNetSetting> controlnets() const;
    void setControlNets(const std::vector<api::ControlNetSetting>& units);

signals:
    void changed();

private:
    void updateThresholds();
    QLineEdit *m_model, *m_image;
    QComboBox* m_preprocessor;
    QDoubleSpinBox *m_weight, *m_start, *m_end, *m_thresholdA, *m_thresholdB;
    QLabel* m_more;
    api::ControlNetSetting m_hidden;                  // fields not edited here (hash, resize mode)
    std::vector<api::ControlNetSetting> m_others;     // units after the first, from a restore
};

} // namespace dd::ui
