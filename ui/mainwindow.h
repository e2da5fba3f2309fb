#pragma once
#include "core/pipeline/generation.h"

#include <QMainWindow>

class QLabel;
class QProgressBar;
class QPushButton;

namespace dd::ui {

class EngineThread;
class PromptPanel;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(const QString& model, QWidget* parent = nullptr);

signals:
    void generateRequested(const dd::settings::GenerationSettings& settings);

private:
    void startGeneration();
    void showResult(const pipeline::GenerationResult& result);
    void showFailure(const QString& message);
    void setRunning(bool running);

    PromptPanel* m_panel;
    QLabel* m_preview;
    QLabel* m_modelBanner;
    QProgressBar* m_progress;
    QPushButton* m_generate;
    QPushButton* m_cancel;
    EngineThread* m_engine;
};

} // namespace dd::ui
