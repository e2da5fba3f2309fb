#pragma once
// The memory presets. First a simple view: "my GPU has N GB" → the preset that will run, its predicted peak for
// the current model and size, and which of its toggles change the picture and which cannot (memory::planEffects).
// Then the advanced view, the table: one row per preset (the 4/6/8/12/24 GB recipe rows, cpu, and the user's
// own), each row's toggles editable in place, the recommendation for this machine highlighted, the predicted
// peak per row. OK chooses the selected row; "Save as custom" keeps an edited row.
#include "ui/presetstore.h"

#include <QDialog>

#include <functional>

class QComboBox;
class QLabel;
class QLineEdit;
class QTableWidget;

namespace dd::ui {

class PresetDialog : public QDialog {
    Q_OBJECT
public:
    // Predicted peak bytes for a plan (current model, size, batch), or < 0 when unknown.
    using Predictor = std::function<qint64(const api::MemoryPlan&)>;

    PresetDialog(std::vector<PresetEntry> presets, const QString& recommended, const QString& current,
                 Predictor predictor, QWidget* parent = nullptr);

    // The selected row with its edits.
    memory::Preset selectedPreset() const;
    int rowOf(const QString& name) const;
    void selectRow(int row);
    const std::vector<PresetEntry>& presets() const { return m_presets; }
    QTableWidget* table() const { return m_table; }
    // Column indices (tests and the screenshot script address cells by them).
    enum Column { Name, Budget, Precision, Attention, VaeSlicing, VaeTiling, Offload, Fp8, ChannelsLast, Winograd, Predicted, Strategy, Columns };

signals:
    void customSaved(const QString& path);

private:
    QWidget* buildSimpleView();
    void updateSimpleView();
    void fillRow(int row);
    void refreshPrediction(int row);
    void saveCustom();

    std::vector<PresetEntry> m_presets;
    QString m_recommended;
    Predictor m_predictor;
    QTableWidget* m_table;
    QLineEdit* m_customName;
    QLabel* m_message;
    QComboBox* m_gpuMemory = nullptr;
    QLabel* m_simpleSummary = nullptr;
};

} // namespace dd::ui
