// MainWindow: the generation queue. Generate adds one job per run of the batch count (seed + i·batch size) and
// runs the queue; jobs run one after the other through the same launch path as before. The journal is written on
// the queue's thread (QueueService); this side keeps the last snapshot.
#include "ui/compareview.h"
#include "ui/mainwindow.h"
#include "ui/modelpicker.h"
#include "ui/promptpanel.h"
#include "ui/queueview.h"

#include <nlohmann/json.hpp>

#include <QLabel>
#include <QPushButton>
#include <QStandardPaths>
#include <QStatusBar>

namespace dd::ui {

QString MainWindow::queueFile() {
    return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + QStringLiteral("/queue.jsonl");
}

void MainWindow::startGeneration() {
    api::GenerationSettings s = currentSettings();
    s.seed = m_panel->takeSeed();
    const int runs = m_panel->batchCount();
    for (int i = 0; i < runs; ++i) {
        api::GenerationSettings job = s;
        job.seed = s.seed + int64_t(i) * s.batchSize;
        ++m_enqueuesInFlight;
        emit enqueueRequested(QString::fromStdString(nlohmann::json(job).dump()));
    }
    m_runIndex = 0;
    m_runCount = 1;
    m_cancelRequested = false;
    m_queueActive = true;
    updateButtons();
    if (!m_running) m_eta->setText(tr("queued…"));
}

void MainWindow::runQueue() {
    m_leftoverJobs.clear();  // the user asked for them
    m_cancelRequested = false;
    m_queueActive = true;
    updateButtons();
    runNextJob();
}

void MainWindow::stopQueue() {
    m_queueActive = false;
    updateButtons();
}

void MainWindow::onJobsChanged(const QList<JobRow>& jobs) {
    // Jobs still pending from the last session wait for Run queue: a new Generate never runs them first.
    if (!m_sawFirstSnapshot) {
        m_sawFirstSnapshot = true;
        for (const auto& j : jobs)
            if (j.state == QLatin1String("pending")) m_leftoverJobs.insert(j.id);
        if (!m_leftoverJobs.empty())
            statusBar()->showMessage(tr("%n job(s) left from the last session wait in the queue: Run queue to run "
                                        "them, or remove them.", nullptr, int(m_leftoverJobs.size())));
    }
    m_jobs = jobs;
    m_queueView->setJobs(jobs);
    runNextJob();
}

// The first pending job not launched yet, once nothing runs and no model loads. The queue stops when none is left
// and no enqueue is still on its way.
void MainWindow::runNextJob() {
    if (!m_queueActive || m_running || m_picker->loading() || m_ab->running()) return;
    for (const auto& job : m_jobs) {
        if (job.state != QLatin1String("pending") || m_launchedJobs.count(job.id) || m_leftoverJobs.count(job.id)) continue;
        m_launchedJobs.insert(job.id);
        api::GenerationSettings s;
        try {
            s = nlohmann::json::parse(job.specJson.toStdString()).get<api::GenerationSettings>();
        } catch (const std::exception& e) {
            emit jobFailed(job.id, tr("unreadable settings: %1").arg(QString::fromStdString(e.what())));
            continue;
        }
        m_currentJob = job.id;
        emit jobStarted(job.id);
        launch(s);
        return;
    }
    if (m_enqueuesInFlight > 0) return;  // its snapshot is on the way
    m_queueActive = false;
    setRunning(false);
    emit runFinished();
}

} // namespace dd::ui
