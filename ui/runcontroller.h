#pragma once
// What runs on the engine worker, and when — the window's run logic, without a widget. The queue: its last
// snapshot, the job that runs, the jobs left from the last session (they wait for Run queue), a cancel that
// ends as "cancelled"; an A/B pair; a Verify; the saving of finished images. MainWindow feeds it clicks and the
// workers' answers and shows what it says; tests drive it with no window, worker or thread (test_runcontroller).
// One generation at a time: a job launches only when nothing runs, no model loads (the launch gate) and no A/B
// pair or Verify is under way. Live mode runs the newest settings outside the queue whenever nothing else runs;
// its pictures are shown, not saved, unless kept.
//
//   connect(&queueService, &QueueService::changed, &run, &RunController::onJobsChanged);
//   connect(&run, &RunController::generateRequested, worker, &EngineWorker::generate, Qt::QueuedConnection);
//   run.generate(settings, 4);   // four jobs, seeds s, s + batch, ...
#include "core/api/generation_result.h"
#include "core/compare/ab_settings.h"
#include "ui/engineworker.h"   // metatypes of the settings and results, VerifyOutcome
#include "ui/queueservice.h"   // JobRow

#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <vector>

namespace dd::ui {

// Runs an A/B pair (core/compare/ab_settings.h): emits generate(A), then generate(B) when A has finished, then
// finished(A, B). Results whose settings are not the pair's (another run of the window) are ignored.
class ABRunner : public QObject {
    Q_OBJECT
public:
    using QObject::QObject;
    void start(const compare::AbPair& pair);
    bool running() const { return m_current != 0; }
    char current() const { return m_current; }  // 'A', 'B', or 0 when idle
    const compare::AbPair& pair() const { return m_pair; }

public slots:
    void onFinished(const dd::api::GenerationResult& result);
    void onFailed(const QString& message);
    void cancel();

signals:
    void generate(const dd::api::GenerationSettings& settings);
    void finished(const dd::api::GenerationResult& a, const dd::api::GenerationResult& b, const QString& label);
    void failed(const QString& message);

private:
    compare::AbPair m_pair;
    api::GenerationResult m_a;
    char m_current = 0;
};

// Load + encode + steps + decode: a run's own seconds (the sidecar's cost and the status bar's total).
double runSeconds(const api::GenerationResult& result);

// One image this session made: the settings that made it (its own seed, a batch of one) and its whole run.
struct SessionImage {
    api::GenerationSettings settings;
    std::shared_ptr<const api::GenerationResult> run;
    int index = 0;  // in run->images
};

// The job id of a live result: shown on the canvas, saved only by keepLive().
inline const QString kLiveJob = QStringLiteral("live");

class RunController : public QObject {
    Q_OBJECT
public:
    explicit RunController(QObject* parent = nullptr);

    bool running() const { return m_running; }                 // a generation or a Verify is on the worker
    bool busy() const { return m_running || m_queueActive; }   // or queued jobs still to run
    bool verifying() const { return m_verifying; }
    bool abRunning() const { return m_ab->running(); }
    QString currentJob() const { return m_currentJob; }       // "" for A/B runs and Verify
    const QList<JobRow>& jobs() const { return m_jobs; }
    int runIndex() const { return m_runIndex; }                // of runCount(): A/B shows "run 1 of 2"
    int runCount() const { return m_runCount; }
    int queuedCount() const;      // pending jobs not launched yet
    bool launched(const QString& id) const { return m_launchedJobs.count(id) > 0; }  // this session ran (or runs) it
    int waitingCount() const;     // pending jobs a quit would leave for the next start (not the leftovers)
    // Every image the runs of this session made, in the order they were made (the library has them on disk).
    const std::vector<SessionImage>& session() const { return m_session; }
    // While the gate says true (a model loads), no job launches; resume() when it opens.
    void setLaunchGate(std::function<bool()> closed) { m_gateClosed = std::move(closed); }
    void setAutosave(bool on) { m_autosave = on; }
    // Where each job's __wildcards__ are picked from, with its own seed (settings/wildcards.h).
    void setWildcardFolders(std::vector<std::string> folders) { m_wildcardFolders = std::move(folders); }
    bool liveRunning() const { return m_liveRunning; }
    bool canKeepLive() const { return m_lastLive && !m_lastLiveKept; }  // a live result not saved yet
    const api::GenerationResult* lastLive() const { return m_lastLive.get(); }  // the live result shown last

public slots:
    // `tag` ("" = none) rides in each job's spec as "api_task": the API server finds its requests' jobs by it.
    // `plotCell`: the X/Y/Z plot's cell the job is ("<plot id>/<cell>", as "xyz_plot"; ui/xyzplot.h).
    void generate(const dd::api::GenerationSettings& settings, int runs, const QString& tag = {}, const QString& plotCell = {});
    void runQueue();                      // the leftovers too
    void retry(const QString& id);        // any finished job, at once
    void startAb(const dd::compare::AbPair& pair);
    bool verify(const QString& file, const QStringList& modelFolders);  // false (nothing asked) while busy
    void cancel();
    void cancelCurrent();  // the running job only (the A1111 API's interrupt): the queue goes on
    // Live mode: `settings` run as soon as nothing else runs, outside the queue, and are not saved. A newer call
    // while a live run is under way cancels that run at its next step, so the picture follows the newest settings.
    void live(const dd::api::GenerationSettings& settings);
    void stopLive();   // drops the waiting live settings and cancels a live run under way
    bool keepLive();   // saves the last live result as a finished run is saved; false when there is none to keep
    void resume();                        // launches the next job when it may
    void onJobsChanged(const QList<dd::ui::JobRow>& jobs);
    void onEnqueued();
    void onFinished(const dd::api::GenerationResult& result);
    void onFailed(const QString& message);
    void onVerified(const dd::ui::VerifyOutcome& outcome);
    void onSaved(const QString& jobId, const QStringList& files);

signals:
    // To the queue's thread.
    void enqueueRequested(const QString& specJson);
    void jobStarted(const QString& id);
    void jobDone(const QString& id, const QStringList& files);
    void jobFailed(const QString& id, const QString& error);
    void jobCancelled(const QString& id);
    void retryRequested(const QString& id);
    // To the engine worker (cancelRequested: connect directly, it sets the worker's atomic flag).
    void generateRequested(const dd::api::GenerationSettings& settings);
    void verifyRequested(const QString& file, const QStringList& modelFolders);
    void cancelRequested();
    // To the library's thread: keep this result (autosave on); jobDone follows onSaved.
    void saveRequested(const QString& jobId, const dd::api::GenerationResult& result, double runSeconds);
    // To the window.
    void runStarted(const dd::api::GenerationSettings& settings);
    void resultReady(const dd::api::GenerationResult& result, const QString& jobId);  // before the next run starts
    void runFailed(const QString& message);
    void abFinished(const dd::api::GenerationResult& a, const dd::api::GenerationResult& b, const QString& label);
    void verified(const dd::ui::VerifyOutcome& outcome);
    void leftoversFound(int count);
    void stateChanged();  // running / busy changed
    void finished();      // after the last run of a Generate click, an A/B pair, a Verify, a failure or a cancel

private:
    void launch(const api::GenerationSettings& settings);
    void addToSession(const std::shared_ptr<const api::GenerationResult>& run);
    bool launchNextJob();
    void launchLive();
    void finishLive(const api::GenerationResult* result, const QString& failure);
    void setRunning(bool running);
    void end();

    ABRunner* m_ab;
    std::function<bool()> m_gateClosed = [] { return false; };
    bool m_autosave = true;
    std::vector<std::string> m_wildcardFolders;
    std::vector<SessionImage> m_session;
    QList<JobRow> m_jobs;               // the queue as last reported by its thread
    bool m_queueActive = false;         // run pending jobs as they come
    int m_enqueuesInFlight = 0;         // sent to the queue's thread, not yet in a snapshot
    QString m_currentJob;
    std::set<QString> m_launchedJobs;   // never launch a job twice from a stale snapshot
    std::set<QString> m_leftoverJobs;   // pending when the app started: run only by Run queue
    bool m_sawFirstSnapshot = false;
    bool m_running = false;
    bool m_verifying = false;
    bool m_cancelRequested = false;
    bool m_cancelCurrent = false;       // cancelCurrent(): this run ends as cancelled, the queue goes on
    int m_runIndex = 0, m_runCount = 1;
    std::optional<api::GenerationSettings> m_liveWanted;  // the newest live settings not launched yet
    bool m_liveRunning = false;
    bool m_liveCancelled = false;                         // the live run under way was cancelled by us
    std::shared_ptr<const api::GenerationResult> m_lastLive;
    bool m_lastLiveKept = false;
};

} // namespace dd::ui
