#pragma once
// Requests for an object on another thread, handed over so ThreadSanitizer can see it. Qt's event queue orders
// the two threads with futex-based locks that an uninstrumented Qt hides from TSan, so a request that waited in
// the queue (a model load behind a running generation) was reported as a race once the sender's stack had left
// TSan's history. Here the request itself passes through a std::mutex; Qt's queued call only wakes the receiver.
#include <QMetaObject>
#include <QObject>

#include <deque>
#include <functional>
#include <mutex>

namespace dd::ui {

class ThreadInbox : public QObject {
public:
    using QObject::QObject;  // a child of the receiver, so it moves to the receiver's thread with it

    // Any thread: runs `job` on this object's thread, after the jobs posted before it.
    void post(std::function<void()> job) {
        {
            std::lock_guard lock(m_mutex);
            m_jobs.push_back(std::move(job));
        }
        QMetaObject::invokeMethod(this, &ThreadInbox::runOne, Qt::QueuedConnection);
    }

private:
    void runOne() {
        std::function<void()> job;
        {
            std::lock_guard lock(m_mutex);
            if (m_jobs.empty()) return;
            job = std::move(m_jobs.front());
            m_jobs.pop_front();
        }
        job();
    }

    std::mutex m_mutex;
    std::deque<std::function<void()>> m_jobs;
};

} // namespace dd::ui
