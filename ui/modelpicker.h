#pragma once
// Which model to run: the built-in demo, recent models (QSettings), or a diffusers folder / single .safetensors
// file opened from disk. Shows what was detected (family, dtypes, size, hash) and a load in progress (a progress
// bar per part and Cancel). A load that fails or is cancelled leaves the previously loaded model selected.
#include "ui/modelinfo.h"

#include <QWidget>

class QComboBox;
class QLabel;
class QProgressBar;
class QToolButton;

namespace dd::ui {

class ModelPicker : public QWidget {
    Q_OBJECT
public:
    explicit ModelPicker(QWidget* parent = nullptr);
    QString currentModel() const { return m_current; }
    const ModelInfo& info() const { return m_info; }
    bool loading() const { return m_loading; }
    QString loadedModel() const { return m_loaded; }  // "" until a load succeeded
    QStringList recentModels() const;

public slots:
    // Selects `path` (added to the recent list) and asks for it to be loaded.
    void choose(const QString& path);
    void openFolder();
    void openFile();
    void setLoading(const QString& path, const QString& phase, int done, int total);
    void setLoaded(const dd::ui::ModelInfo& info);
    void setFailed(const QString& path, const QString& message);

signals:
    void loadRequested(const QString& path);
    void cancelRequested();
    void modelChanged(const dd::ui::ModelInfo& info);

private:
    void rebuildCombo();
    void rememberRecent(const QString& path);

    QComboBox* m_combo;
    QToolButton* m_openFolder;
    QToolButton* m_openFile;
    QLabel* m_details;
    QProgressBar* m_busy;
    QToolButton* m_cancel;
    QString m_current;
    QString m_loaded;
    ModelInfo m_info;
    bool m_loading = false;
};

} // namespace dd::ui
