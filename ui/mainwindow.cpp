#include "ui/mainwindow.h"

#include "core/pipeline/engine.h"
#include "ui/engineworker.h"
#include "ui/promptpanel.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QStatusBar>
#include <QVBoxLayout>

namespace dd::ui {

MainWindow::MainWindow(const QString& model, QWidget* parent) : QMainWindow(parent) {
    setWindowTitle(tr("DiffusionDesk"));
    m_panel = new PromptPanel(this);
    settings::GenerationSettings defaults;
    defaults.model = model.isEmpty() ? pipeline::kDemoModel : model.toStdString();
    defaults.prompt = "a lighthouse on a cliff at sunset, oil painting";
    m_panel->setSettings(defaults);

    m_modelBanner = new QLabel(this);
    m_modelBanner->setObjectName("modelBanner");
    m_modelBanner->setWordWrap(true);
    if (defaults.model == pipeline::kDemoModel)
        m_modelBanner->setText(tr("<b>Demo mode:</b> a tiny random-weight model the app builds itself. It exercises the "
                                  "whole pipeline but makes noise, not pictures. Enter a real model path above."));

    m_preview = new QLabel(tr("No image yet"), this);
    m_preview->setObjectName("preview");
    m_preview->setAlignment(Qt::AlignCenter);
    m_preview->setMinimumSize(512, 512);
    m_progress = new QProgressBar(this);
    m_progress->setObjectName("progress");
    m_generate = new QPushButton(tr("Generate"), this);
    m_generate->setObjectName("generate");
    m_generate->setDefault(true);
    m_cancel = new QPushButton(tr("Cancel"), this);
    m_cancel->setObjectName("cancel");

    auto* buttons = new QHBoxLayout;
    buttons->addWidget(m_generate);
    buttons->addWidget(m_cancel);
    auto* left = new QVBoxLayout;
    left->addWidget(m_modelBanner);
    left->addWidget(m_panel);
    left->addLayout(buttons);
    left->addWidget(m_progress);
    left->addStretch();
    auto* central = new QWidget(this);
    auto* layout = new QHBoxLayout(central);
    layout->addLayout(left, 0);
    layout->addWidget(m_preview, 1);
    setCentralWidget(central);

    m_engine = new EngineThread(this);
    auto* worker = m_engine->worker();
    connect(this, &MainWindow::generateRequested, worker, &EngineWorker::generate, Qt::QueuedConnection);
    connect(worker, &EngineWorker::progress, this, [this](int step, int total, const QImage& preview) {
        m_progress->setRange(0, total);
        m_progress->setValue(step);
        if (!preview.isNull()) m_preview->setPixmap(QPixmap::fromImage(preview).scaled(m_preview->size(), Qt::KeepAspectRatio));
    });
    connect(worker, &EngineWorker::finished, this, &MainWindow::showResult);
    connect(worker, &EngineWorker::failed, this, &MainWindow::showFailure);
    connect(worker, &EngineWorker::logLine, this, [this](const QString& line) { statusBar()->showMessage(line, 5000); });
    connect(m_generate, &QPushButton::clicked, this, &MainWindow::startGeneration);
    connect(m_cancel, &QPushButton::clicked, this, [this] { m_engine->worker()->cancel(); });
    setRunning(false);
}

void MainWindow::startGeneration() {
    setRunning(true);
    m_progress->setValue(0);
    emit generateRequested(m_panel->settings());
}

void MainWindow::showResult(const pipeline::GenerationResult& result) {
    setRunning(false);
    if (!result.images.empty())
        m_preview->setPixmap(QPixmap::fromImage(toQImage(result.images.front())).scaled(m_preview->size(), Qt::KeepAspectRatio));
    double steps = 0;
    for (double s : result.timings.stepSeconds) steps += s;
    statusBar()->showMessage(tr("%1: load %2 s, encode %3 s, %4 steps %5 s, decode %6 s")
                                 .arg(QString::fromStdString(result.modelName))
                                 .arg(result.timings.loadSeconds, 0, 'f', 2)
                                 .arg(result.timings.encodeSeconds, 0, 'f', 2)
                                 .arg(result.timings.stepSeconds.size())
                                 .arg(steps, 0, 'f', 2)
                                 .arg(result.timings.decodeSeconds, 0, 'f', 2));
}

void MainWindow::showFailure(const QString& message) {
    setRunning(false);
    statusBar()->showMessage(message);
}

void MainWindow::setRunning(bool running) {
    m_generate->setEnabled(!running);
    m_cancel->setEnabled(running);
}

} // namespace dd::ui
