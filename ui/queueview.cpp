#include "ui/queueview.h"

#include "core/api/generation_settings.h"

#include <nlohmann/json.hpp>

#include <QHBoxLayout>
#include <QHeaderView>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

namespace dd::ui {
namespace {

QString describe(const JobRow& job) {
    try {
        const auto spec = nlohmann::json::parse(job.specJson.toStdString());
        const auto s = spec.get<api::GenerationSettings>();
        // A job an API client asked for (Serve API) says so: the artist did not queue it.
        const QString from = spec.contains("api_task") ? QObject::tr("API · ") : QString();
        return QObject::tr("%1%2 · seed %3 · %4×%5 · %6 steps")
            .arg(from, QString::fromStdString(s.prompt).left(60))
            .arg(s.seed)
            .arg(s.width)
            .arg(s.height)
            .arg(s.steps);
    } catch (const std::exception& e) {
        return QObject::tr("unreadable settings: %1").arg(QString::fromStdString(e.what()));
    }
}

} // namespace

QueueView::QueueView(QWidget* parent) : QWidget(parent) {
    setObjectName("queueView");
    m_table = new QTableWidget(0, 3, this);
    m_table->setObjectName("queueTable");
    m_table->setHorizontalHeaderLabels({tr("Job"), tr("State"), tr("Settings")});
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->verticalHeader()->hide();
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_run = new QPushButton(tr("Run queue"), this);
    m_run->setObjectName("runQueue");
    m_run->setToolTip(tr("Run the pending jobs (a job interrupted by a crash waits for Retry)"));
    m_retry = new QPushButton(tr("Retry"), this);
    m_retry->setObjectName("retryJob");
    m_remove = new QPushButton(tr("Remove"), this);
    m_remove->setObjectName("removeJob");
    auto* buttons = new QVBoxLayout;
    buttons->addWidget(m_run);
    buttons->addWidget(m_retry);
    buttons->addWidget(m_remove);
    buttons->addStretch();
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(2, 2, 2, 2);
    layout->addWidget(m_table, 1);
    layout->addLayout(buttons);
    connect(m_run, &QPushButton::clicked, this, &QueueView::runRequested);
    connect(m_retry, &QPushButton::clicked, this, [this] {
        if (!selectedId().isEmpty()) emit retryRequested(selectedId());
    });
    connect(m_remove, &QPushButton::clicked, this, [this] {
        if (!selectedId().isEmpty()) emit removeRequested(selectedId());
    });
}

void QueueView::setJobs(const QList<JobRow>& jobs) {
    const QString selected = selectedId();
    m_jobs = jobs;
    m_table->setRowCount(int(jobs.size()));
    for (int r = 0; r < jobs.size(); ++r) {
        const auto& j = jobs[r];
        QString state = j.state;
        if (!j.error.isEmpty()) state += QStringLiteral(": ") + j.error;
        m_table->setItem(r, 0, new QTableWidgetItem(j.id));
        m_table->setItem(r, 1, new QTableWidgetItem(state));
        m_table->setItem(r, 2, new QTableWidgetItem(describe(j)));
    }
    if (!selected.isEmpty()) select(selected);
}

int QueueView::count() const { return int(m_jobs.size()); }

QString QueueView::stateOf(const QString& id) const {
    for (const auto& j : m_jobs)
        if (j.id == id) return j.state;
    return {};
}

QStringList QueueView::ids() const {
    QStringList out;
    for (const auto& j : m_jobs) out << j.id;
    return out;
}

void QueueView::select(const QString& id) {
    for (int r = 0; r < m_jobs.size(); ++r)
        if (m_jobs[r].id == id) m_table->setCurrentCell(r, 0);  // rows select whole (SelectRows)
}

QString QueueView::selectedId() const {
    const int r = m_table->currentRow();
    return r >= 0 && r < m_jobs.size() && m_table->selectionModel()->isRowSelected(r, {}) ? m_jobs[r].id : QString();
}

} // namespace dd::ui
