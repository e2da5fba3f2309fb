#include "ui/runcontroller.h"

#include "core/settings/wildcards.h"

#include "core/compare/settings_diff.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <utility>

namespace dd::ui {

void ABRunner::start(const compare::AbPair& pair) {
    m_pair = pair;
    m_a = {};
    m_current = 'A';
    emit generate(m_pair.a);
}

void ABRunner::onFinished(const api::GenerationResult& result) {
    if (!m_current) return;
    const auto& want = m_current == 'A' ? m_pair.a : m_pair.b;
    if (!compare::diffSettings(result.settings, want).empty()) return;  // someone else's run
    if (m_current == 'A') {
        m_a = result;
        m_current = 'B';
        emit generate(m_pair.b);
        return;
    }
    m_current = 0;
    emit finished(m_a, result, QString::fromStdString(m_pair.label));
}

void ABRunner::onFailed(const QString& message) {
    if (!m_current) return;
    const char which = m_current;
    m_current = 0;
    emit failed(tr("A/B run %1 failed: %2").arg(QChar(which)).arg(message));
}

void ABRunner::cancel() { m_current = 0; }

double runSeconds(const api::GenerationResult& result) {
    const auto& t = result.timings;
    double steps = 0;
    for (double s : t.stepSeconds) steps += s;
    return t.loadSeconds + t.encodeSeconds + steps + t.decodeSeconds;
}

RunController::RunController(QObject* parent) : QObject(parent), m_ab(new ABRunner(this)) {
    connect(m_ab, &ABRunner::generate, this, &RunController::launch);
    connect(m_ab, &ABRunner::finished, this,
            [this](const api::GenerationResult& a, const api::GenerationResult& b, const QString& label) {
                setRunning(false);
                emit abFinished(a, b, label);
                emit finished();
                launchLive();
            });
}

int RunController::queuedCount() const {
    return int(std::count_if(m_jobs.begin(), m_jobs.end(), [this](const JobRow& j) {
        return j.state == QLatin1String("pending") && !m_launchedJobs.count(j.id);
    }));
}

int RunController::waitingCount() const {
    return int(std::count_if(m_jobs.begin(), m_jobs.end(), [this](const JobRow& j) {
        return j.state == QLatin1String("pending") && !m_leftoverJobs.count(j.id) && j.id != m_currentJob;
    }));
}

// One job per run of the batch count (seed + i · batch size), its wildcards picked with its seed (not an API
// request's: A1111's API has none); they run after whatever runs now. Throws std::invalid_argument for a wildcard
// without a file, before any job is queued.
void RunController::generate(const api::GenerationSettings& settings, int runs, const QString& tag, const QString& plotCell) {
    std::vector<api::GenerationSettings> jobs;
    for (int i = 0; i < runs; ++i) {
        jobs.push_back(api::fromImage(settings, int64_t(i) * settings.batchSize));
        if (tag.isEmpty()) settings::resolveWildcards(jobs.back(), m_wildcardFolders);
    }
    for (const auto& job : jobs) {
        ++m_enqueuesInFlight;
        nlohmann::json spec = job;
        if (!tag.isEmpty()) spec["api_task"] = tag.toStdString();
        if (!plotCell.isEmpty()) spec["xyz_plot"] = plotCell.toStdString();
        emit enqueueRequested(QString::fromStdString(spec.dump()));
    }
    m_runIndex = 0;
    m_runCount = 1;
    m_cancelRequested = false;
    m_queueActive = true;
    emit stateChanged();
}

void RunController::runQueue() {
    m_leftoverJobs.clear();  // the user asked for them
    m_cancelRequested = false;
    m_queueActive = true;
    emit stateChanged();
    resume();
}

// Retry runs the job again now (it launches from the next snapshot), whatever it ended as.
void RunController::retry(const QString& id) {
    m_launchedJobs.erase(id);
    m_leftoverJobs.erase(id);
    emit retryRequested(id);
    m_cancelRequested = false;
    m_queueActive = true;
    emit stateChanged();
}

void RunController::startAb(const compare::AbPair& pair) {
    if (busy()) return;
    m_runCount = 2;
    m_runIndex = 0;
    m_cancelRequested = false;
    m_ab->start(pair);
}

bool RunController::verify(const QString& file, const QStringList& modelFolders) {
    if (busy()) return false;  // an A/B pair is running too
    m_verifying = true;
    m_cancelRequested = false;
    setRunning(true);
    emit verifyRequested(file, modelFolders);
    return true;
}

void RunController::cancel() {
    m_queueActive = false;
    m_liveWanted.reset();
    m_ab->cancel();
    m_cancelRequested = true;
    emit cancelRequested();
    emit stateChanged();
}

void RunController::cancelCurrent() {
    if (!m_running || m_currentJob.isEmpty()) return;
    m_cancelCurrent = true;
    emit cancelRequested();
}

void RunController::onJobsChanged(const QList<JobRow>& jobs) {
    // Jobs still pending from the last session wait for Run queue: a new Generate never runs them first.
    if (!m_sawFirstSnapshot) {
        m_sawFirstSnapshot = true;
        for (const auto& j : jobs)
            if (j.state == QLatin1String("pending")) m_leftoverJobs.insert(j.id);
        if (!m_leftoverJobs.empty()) emit leftoversFound(int(m_leftoverJobs.size()));
    }
    m_jobs = jobs;
    resume();
}

void RunController::onEnqueued() {
    m_enqueuesInFlight = std::max(0, m_enqueuesInFlight - 1);
    resume();
}

// The first pending job not launched yet, once nothing runs and the gate is open. The queue stops when none is
// left and no enqueue is still on its way; then the newest live settings, if any, run.
void RunController::resume() {
    if (m_running || m_gateClosed() || m_ab->running()) return;
    if (m_queueActive) {
        if (launchNextJob() || m_enqueuesInFlight > 0) return;  // a snapshot is on the way
        m_queueActive = false;
        end();
    }
    launchLive();
}

bool RunController::launchNextJob() {
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
        return true;
    }
    return false;
}

void RunController::live(const api::GenerationSettings& settings) {
    m_liveWanted = settings;
    if (m_liveRunning) {
        m_liveCancelled = true;
        emit cancelRequested();  // stops at its next step; finishLive launches the newest settings
        return;
    }
    resume();
}

void RunController::stopLive() {
    m_liveWanted.reset();
    if (!m_liveRunning) return;
    m_liveCancelled = true;
    emit cancelRequested();
}

bool RunController::keepLive() {
    if (!canKeepLive()) return false;
    m_lastLiveKept = true;
    addToSession(m_lastLive);
    emit saveRequested(kLiveJob, *m_lastLive, runSeconds(*m_lastLive));
    return true;
}

void RunController::launchLive() {
    if (!m_liveWanted || m_running || m_queueActive || m_gateClosed() || m_ab->running()) return;
    const api::GenerationSettings s = *std::exchange(m_liveWanted, std::nullopt);
    m_liveRunning = true;
    m_liveCancelled = false;
    m_cancelRequested = false;
    m_runIndex = 0;
    m_runCount = 1;
    launch(s);
}

// A live run's end: its picture is shown unless newer settings wait (it is stale); a run we cancelled is silent.
void RunController::finishLive(const api::GenerationResult* result, const QString& failure) {
    m_liveRunning = false;
    const bool stale = m_liveWanted.has_value();
    const bool cancelled = std::exchange(m_liveCancelled, false) || m_cancelRequested;
    setRunning(false);
    if (result && !stale) {
        m_lastLive = std::make_shared<const api::GenerationResult>(*result);
        m_lastLiveKept = false;
        emit resultReady(*result, kLiveJob);
    }
    if (!result && !cancelled) emit runFailed(failure);
    const bool queueWasActive = m_queueActive;  // its end says finished
    resume();
    if (!m_running && !queueWasActive) emit finished();
}

// Each image of the run, with its own seed and as a batch of one.
void RunController::addToSession(const std::shared_ptr<const api::GenerationResult>& run) {
    for (size_t i = 0; i < run->images.size(); ++i) {
        SessionImage image{run->settings, run, int(i)};
        image.settings.seed += int64_t(i);
        image.settings.batchSize = 1;
        m_session.push_back(std::move(image));
    }
}

void RunController::launch(const api::GenerationSettings& settings) {
    ++m_runIndex;
    setRunning(true);
    emit runStarted(settings);
    emit generateRequested(settings);
}

// Shown first, then kept: a job is done in the journal once its files are on disk (onSaved), or at once when
// nothing is saved.
void RunController::onFinished(const api::GenerationResult& result) {
    if (m_liveRunning) return finishLive(&result, {});
    m_cancelCurrent = false;  // it finished before the cancel reached it
    const QString job = std::exchange(m_currentJob, QString());
    addToSession(std::make_shared<const api::GenerationResult>(result));
    emit resultReady(result, job);
    if (m_autosave) emit saveRequested(job, result, runSeconds(result));
    else if (!job.isEmpty()) emit jobDone(job, {});
    if (m_ab->running()) {
        m_ab->onFinished(result);  // B starts, or the pair is done
        return;
    }
    setRunning(false);
    if (m_queueActive) {
        resume();
        return;
    }
    emit finished();
    launchLive();
}

// A run the user stopped is cancelled in the queue, not failed; one job's bad settings do not stop the others.
void RunController::onFailed(const QString& message) {
    if (m_liveRunning) return finishLive(nullptr, message);
    const QString job = std::exchange(m_currentJob, QString());
    const bool cancelledCurrent = std::exchange(m_cancelCurrent, false);
    if (!job.isEmpty()) {
        if (m_cancelRequested || cancelledCurrent) emit jobCancelled(job);
        else emit jobFailed(job, message);
    }
    setRunning(false);
    emit runFailed(message);
    m_ab->onFailed(message);
    if (m_queueActive && !m_cancelRequested) {
        resume();
        return;
    }
    m_queueActive = false;
    end();
    launchLive();
}

void RunController::onVerified(const VerifyOutcome& outcome) {
    m_verifying = false;
    setRunning(false);
    emit verified(outcome);
    emit finished();
    resume();  // a Generate pressed meanwhile waited
}

void RunController::onSaved(const QString& jobId, const QStringList& files) {
    if (!jobId.isEmpty() && jobId != kLiveJob) emit jobDone(jobId, files);
}

void RunController::setRunning(bool running) {
    m_running = running;
    emit stateChanged();
}

void RunController::end() {
    emit stateChanged();
    emit finished();
}

} // namespace dd::ui
