#pragma once
// The A1111 API's runs on the window's own queue (Serve API): a request becomes queue jobs tagged with its task,
// which the window runs, shows and saves to its library like its own; the HTTP thread that asked waits for their
// files. Lives on the window's thread; run(), progress(), interrupt() and skip() are called from HTTP threads.
#include "server/generation_service.h"
#include "ui/queueservice.h"  // JobRow

#include <QImage>
#include <QObject>

#include <condition_variable>
#include <map>
#include <mutex>
#include <set>

namespace dd::ui {

class RunController;

class ApiBridge : public QObject, public server::GenerationService {
    Q_OBJECT
public:
    explicit ApiBridge(RunController* run, QObject* parent = nullptr);
    ~ApiBridge() override;
    void close();  // answers every waiting request ("the window closed"); call before the server stops

    server::ServiceResult run(const server::ServiceJob& job) override;
    server::ServiceProgress progress() const override;
    void interrupt() override;
    void skip() override;

public slots:
    void onJobsChanged(const QList<dd::ui::JobRow>& jobs);
    void onProgress(int step, int totalSteps, const QImage& preview);

private:
    struct Task {
        api::GenerationSettings settings;
        int jobs = 1;                    // queue jobs it became (n_iter)
        std::set<QString> ids;           // their queue ids, as snapshots show them
        std::map<QString, std::vector<std::string>> files;  // finished job → its saved images
        int ended = 0;
        bool interrupted = false;
        std::string error;
    };
    void jobEnded(const QString& id, const std::vector<std::string>& files, const QString& error, bool cancelled);
    Task* taskOfJob(const QString& id);

    RunController* m_run;
    mutable std::mutex m_lock;
    std::condition_variable m_changed;
    std::map<QString, Task> m_tasks;  // by tag
    std::map<QString, QString> m_jobTask;  // queue id → tag
    int m_next = 0;
    bool m_closing = false;
    QString m_currentJob;
    std::set<QString> m_skipped;  // jobs skip() cancelled: their request goes on
    server::ServiceProgress m_progress;
    qint64 m_startedMs = 0;
};

} // namespace dd::ui
