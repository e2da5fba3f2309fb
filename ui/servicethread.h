#pragma once
// A service object on a thread of its own (the queue's journal, the image library): the window sends it requests
// as queued calls and it answers with signals, so no disk write ever stalls the UI thread.
//
//   ServiceThread<QueueService> queue("queue", journalPath);
//   connect(..., queue.service(), &QueueService::enqueue, Qt::QueuedConnection);
//   queue.start();   // after every connection to service()
//
// Destroying it first finishes every request already sent (a save, a job's done), then joins the thread.
#include <QMetaObject>
#include <QObject>
#include <QThread>

#include <utility>

namespace dd::ui {

template <typename Service>
class ServiceThread {
public:
    template <typename... Args>
    explicit ServiceThread(const char* name, Args&&... args) : m_service(new Service(std::forward<Args>(args)...)) {
        m_thread.setObjectName(name);
        m_service->moveToThread(&m_thread);
        QObject::connect(&m_thread, &QThread::finished, m_service, &QObject::deleteLater);
    }
    ~ServiceThread() {
        if (!m_thread.isRunning()) {
            delete m_service;  // never started: no event loop would run its deleteLater
            return;
        }
        QMetaObject::invokeMethod(m_service, [] {}, Qt::BlockingQueuedConnection);
        m_thread.quit();
        m_thread.wait();
    }
    ServiceThread(const ServiceThread&) = delete;
    ServiceThread& operator=(const ServiceThread&) = delete;

    Service* service() const { return m_service; }
    void start() { m_thread.start(); }

private:
    QThread m_thread;
    Service* m_service;
};

} // namespace dd::ui
