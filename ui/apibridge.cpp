#include "ui/apibridge.h"

#include "server/saved_images.h"
#include "ui/engineworker.h"
#include "ui/runcontroller.h"
#include "ui/stringlists.h"

#include <nlohmann/json.hpp>

#include <QDateTime>
#include <QUuid>

#include <algorithm>

namespace dd::ui {

ApiBridge::ApiBridge(RunController* run, QObject* parent) : QObject(parent), m_run(run) {
    connect(run, &RunController::jobStarted, this, [this](const QString& id) {
        {
            std::lock_guard<std::mutex> g(m_lock);
            m_currentJob = id;
            m_progress = server::ServiceProgress{};
            m_progress.busy = true;
            m_progress.jobId = id.toStdString();
            m_progress.iterations = 1;
            m_progress.jobTimestamp = QDateTime::currentDateTimeUtc().toString("yyyyMMddHHmmss").toStdString();
            m_startedMs = QDateTime::currentMSecsSinceEpoch();
        }
        // The rest of an interrupted request's iterations end as they start.
        const Task* task = taskOfJob(id);
        if (task && task->interrupted) m_run->cancelCurrent();
    });
    connect(run, &RunController::jobDone, this,
            [this](const QString& id, const QStringList& files) { jobEnded(id, toStdStrings(files), {}, false); });
    connect(run, &RunController::jobFailed, this, [this](const QString& id, const QString& error) { jobEnded(id, {}, error, false); });
    connect(run, &RunController::jobCancelled, this, [this](const QString& id) { jobEnded(id, {}, {}, true); });
    connect(run, &RunController::stateChanged, this, [this] {
        std::lock_guard<std::mutex> g(m_lock);
        if (!m_run->running()) m_progress = server::ServiceProgress{};
        if (m_run->busy()) return;
        // The artist stopped the queue (Cancel): requests whose jobs still wait there are answered as interrupted
        // rather than left hanging; the jobs stay queued for Run queue, and their images then join the library.
        // (A job that ran but whose files are still being saved is not stranded: its jobDone is on the way.)
        for (auto& [tag, task] : m_tasks) {
            const bool stranded = std::any_of(task.ids.begin(), task.ids.end(), [&](const QString& id) { return !m_run->launched(id); });
            if (int(task.ids.size()) == task.jobs && task.ended < task.jobs && stranded) task.ended = task.jobs, task.interrupted = true;
        }
        m_changed.notify_all();
    });
}

ApiBridge::~ApiBridge() { close(); }

void ApiBridge::close() {
    std::lock_guard<std::mutex> g(m_lock);
    m_closing = true;
    m_changed.notify_all();
}

ApiBridge::Task* ApiBridge::taskOfJob(const QString& id) {
    std::lock_guard<std::mutex> g(m_lock);
    const auto tag = m_jobTask.find(id);
    if (tag == m_jobTask.end()) return nullptr;
    const auto task = m_tasks.find(tag->second);
    return task == m_tasks.end() ? nullptr : &task->second;
}

server::ServiceResult ApiBridge::run(const server::ServiceJob& job) {
    const QString tag = QStringLiteral("api-") + QUuid::createUuid().toString(QUuid::WithoutBraces);
    std::unique_lock<std::mutex> l(m_lock);
    server::ServiceResult r;
    r.id = tag.toStdString();
    r.settings = job.settings;
    r.jobTimestamp = QDateTime::currentDateTimeUtc().toString("yyyyMMddHHmmss").toStdString();
    if (m_closing) {
        r.error = "the window is closing";
        return r;
    }
    m_tasks[tag] = Task{job.settings, job.iterations, {}, {}, 0, false, {}};
    QMetaObject::invokeMethod(
        m_run, [run = m_run, s = job.settings, n = job.iterations, tag] { run->generate(s, n, tag); }, Qt::QueuedConnection);
    m_changed.wait(l, [&] { return m_closing || m_tasks[tag].ended >= m_tasks[tag].jobs; });
    Task task = std::move(m_tasks[tag]);
    m_tasks.erase(tag);
    for (const auto& id : task.ids) m_jobTask.erase(id);
    l.unlock();
    if (task.ended < task.jobs) r.error = "the window closed before the job ran";
    std::vector<std::string> files;
    for (const auto& [id, saved] : task.files) files.insert(files.end(), saved.begin(), saved.end());
    server::addSavedImages(files, r);
    std::sort(r.images.begin(), r.images.end(), [](const auto& a, const auto& b) { return a.seed < b.seed; });
    if (r.error.empty()) r.error = task.error;
    r.interrupted = task.interrupted;
    return r;
}

// A snapshot names the queue ids of the jobs a request became (their spec carries its tag).
void ApiBridge::onJobsChanged(const QList<JobRow>& jobs) {
    std::lock_guard<std::mutex> g(m_lock);
    if (m_tasks.empty()) return;
    for (const auto& row : jobs) {
        if (m_jobTask.count(row.id) || !row.specJson.contains(QLatin1String("api_task"))) continue;
        const auto spec = nlohmann::json::parse(row.specJson.toStdString(), nullptr, false);
        if (!spec.is_object() || !spec.contains("api_task") || !spec["api_task"].is_string()) continue;
        const QString tag = QString::fromStdString(spec["api_task"].get<std::string>());
        if (auto task = m_tasks.find(tag); task != m_tasks.end()) {
            m_jobTask[row.id] = tag;
            task->second.ids.insert(row.id);
        }
    }
}

void ApiBridge::jobEnded(const QString& id, const std::vector<std::string>& files, const QString& error, bool cancelled) {
    std::lock_guard<std::mutex> g(m_lock);
    if (id == m_currentJob) m_progress = server::ServiceProgress{};
    const auto tag = m_jobTask.find(id);
    if (tag == m_jobTask.end()) return;
    Task& task = m_tasks[tag->second];
    task.files[id] = files;
    ++task.ended;
    if (!error.isEmpty() && task.error.empty()) task.error = error.toStdString();
    if (cancelled && !m_skipped.erase(id)) task.interrupted = true;
    m_changed.notify_all();
}

void ApiBridge::onProgress(int step, int totalSteps, const QImage& preview) {
    std::lock_guard<std::mutex> g(m_lock);
    if (!m_progress.busy) return;  // a live run's or an A/B pair's
    m_progress.step = step, m_progress.steps = totalSteps;
    if (!preview.isNull()) m_progress.preview = toApiImage(preview);
}

server::ServiceProgress ApiBridge::progress() const {
    std::lock_guard<std::mutex> g(m_lock);
    server::ServiceProgress p = m_progress;
    if (p.busy) p.elapsedSeconds = double(QDateTime::currentMSecsSinceEpoch() - m_startedMs) / 1000.0;
    return p;
}

// Only the API's own jobs: a client never stops the artist's.
void ApiBridge::interrupt() {
    QMetaObject::invokeMethod(this, [this] {
        const QString id = m_run->currentJob();
        Task* task = taskOfJob(id);
        if (!task) return;
        {
            std::lock_guard<std::mutex> g(m_lock);
            task->interrupted = true;
            m_progress.interrupted = true;
        }
        m_run->cancelCurrent();
    });
}

void ApiBridge::skip() {
    QMetaObject::invokeMethod(this, [this] {
        const QString id = m_run->currentJob();
        if (!taskOfJob(id)) return;
        {
            std::lock_guard<std::mutex> g(m_lock);
            m_progress.skipped = true;
            m_skipped.insert(id);
        }
        m_run->cancelCurrent();
    });
}

} // namespace dd::ui
