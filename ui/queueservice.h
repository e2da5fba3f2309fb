#pragma once
// The GUI's generation queue (core/queue JobQueue, a crash-safe journal in the app's data folder) on a thread of
// its own (ServiceThread): every change is fsync'ed before it counts, and an fsync on a busy disk can take longer than the UI may
// stall, so the UI thread never touches the file. The UI sends requests and keeps the snapshot `changed` sends.
// Opening the journal marks a job left running by a dead process as interrupted; nothing is re-run by itself.
#include <QList>
#include <QMetaType>
#include <QObject>
#include <QString>
#include <QStringList>

#include <memory>

namespace dd::queue {
class JobQueue;
}

namespace dd::ui {

struct JobRow {
    QString id;
    QString state;      // "pending", "running", "done", "failed", "cancelled", "interrupted"
    QString specJson;   // GenerationSettings as JSON
    QString error;
    int interruptions = 0;
};

class QueueService : public QObject {
    Q_OBJECT
public:
    explicit QueueService(const QString& journalPath);
    ~QueueService() override;

public slots:
    void open();
    void enqueue(const QString& specJson);
    void start(const QString& id);
    void done(const QString& id, const QStringList& files);
    void fail(const QString& id, const QString& error);
    void cancel(const QString& id);
    void retry(const QString& id);
    void remove(const QString& id);

signals:
    void changed(const QList<dd::ui::JobRow>& jobs);
    void enqueued(const QString& id);  // after the snapshot with it; "" when the enqueue failed (problem says why)
    void problem(const QString& message);

private:
    template <typename Change>
    void apply(Change&& change);

    QString m_path;
    std::unique_ptr<queue::JobQueue> m_queue;
};

} // namespace dd::ui

Q_DECLARE_METATYPE(dd::ui::JobRow)
