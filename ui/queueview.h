#pragma once
// The queue as a list: each job's state (pending, running, done, failed, interrupted), its prompt, seed and
// size; Run queue, Retry (interrupted or failed jobs) and Remove.
#include "ui/queueservice.h"

#include <QWidget>

class QPushButton;
class QTableWidget;

namespace dd::ui {

class QueueView : public QWidget {
    Q_OBJECT
public:
    explicit QueueView(QWidget* parent = nullptr);
    void setJobs(const QList<JobRow>& jobs);
    int count() const;
    QString stateOf(const QString& id) const;  // "" when the job is not listed
    QStringList ids() const;
    void select(const QString& id);

signals:
    void runRequested();
    void retryRequested(const QString& id);
    void removeRequested(const QString& id);

private:
    QString selectedId() const;

    QTableWidget* m_table;
    QPushButton* m_run;
    QPushButton* m_retry;
    QPushButton* m_remove;
    QList<JobRow> m_jobs;
};

} // namespace dd::ui
