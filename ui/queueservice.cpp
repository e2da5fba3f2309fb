#include "ui/queueservice.h"
#include "ui/stringlists.h"

#include "core/queue/job_queue.h"

#include <QDir>
#include <QFileInfo>

namespace dd::ui {

QueueService::QueueService(const QString& journalPath) : m_path(journalPath) {
    qRegisterMetaType<dd::ui::JobRow>();
    qRegisterMetaType<QList<dd::ui::JobRow>>();
}
QueueService::~QueueService() = default;

// One request: change the queue, then send the whole snapshot (queues are short; done jobs are small).
template <typename Change>
void QueueService::apply(Change&& change) {
    try {
        if (!m_queue) throw std::runtime_error("the queue is not open");
        change(*m_queue);
    } catch (const std::exception& e) {
        emit problem(tr("Queue (%1): %2").arg(m_path, QString::fromStdString(e.what())));
    }
    QList<JobRow> rows;
    if (m_queue)
        for (const auto& j : m_queue->jobs())
            rows.append({QString::fromStdString(j.id), QString::fromLatin1(queue::jobStateName(j.state)),
                         QString::fromStdString(j.spec.dump()), QString::fromStdString(j.error), j.interruptions});
    emit changed(rows);
}

void QueueService::open() {
    try {
        QDir().mkpath(QFileInfo(m_path).absolutePath());
        m_queue = std::make_unique<queue::JobQueue>(m_path.toStdString());
        for (const auto& w : m_queue->warnings()) emit problem(QString::fromStdString(w));
    } catch (const std::exception& e) {
        emit problem(tr("Queue %1 cannot be opened: %2").arg(m_path, QString::fromStdString(e.what())));
    }
    apply([](queue::JobQueue&) {});
}

void QueueService::enqueue(const QString& specJson) {
    QString id;
    apply([&](queue::JobQueue& q) { id = QString::fromStdString(q.enqueue("", nlohmann::json::parse(specJson.toStdString()), "")); });
    emit enqueued(id);  // also when it failed (""): the UI stops waiting for it
}
void QueueService::start(const QString& id) { apply([&](queue::JobQueue& q) { q.start(id.toStdString()); }); }
void QueueService::done(const QString& id, const QStringList& files) {
    const auto names = toStdStrings(files);
    apply([&](queue::JobQueue& q) { q.done(id.toStdString(), names); });
}
void QueueService::fail(const QString& id, const QString& error) {
    apply([&](queue::JobQueue& q) { q.fail(id.toStdString(), error.toStdString()); });
}
void QueueService::cancel(const QString& id) { apply([&](queue::JobQueue& q) { q.cancel(id.toStdString()); }); }
void QueueService::retry(const QString& id) { apply([&](queue::JobQueue& q) { q.retry(id.toStdString()); }); }
void QueueService::remove(const QString& id) { apply([&](queue::JobQueue& q) { q.remove(id.toStdString()); }); }

} // namespace dd::ui
