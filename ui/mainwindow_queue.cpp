// MainWindow: the generation queue. Generate adds one job per run of the batch count (seed + i·batch size) and
// runs the queue (RunController decides what runs; the journal is written on the queue's thread, QueueService).
#include "ui/mainwindow.h"
#include "ui/modelpicker.h"
#include "ui/promptpanel.h"
#include "ui/runcontroller.h"

#include <QLabel>
#include <QStatusBar>
#include <QStandardPaths>

namespace dd::ui {

QString MainWindow::queueFile() {
    return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + QStringLiteral("/queue.jsonl");
}

void MainWindow::startGeneration() {
    api::GenerationSettings s = currentSettings();
    s.seed = m_panel->takeSeed();
    try {
        m_run->generate(s, m_panel->batchCount());
    } catch (const std::exception& e) {
        statusBar()->showMessage(QString::fromStdString(e.what()), 10000);  // a wildcard without its file: nothing queued
        return;
    }
    if (!m_run->running()) m_eta->setText(tr("queued…"));
}

void MainWindow::runQueue() { m_run->runQueue(); }

} // namespace dd::ui
