#pragma once
// A QSignalSpy for signals emitted on another thread. QSignalSpy connects directly, so it appends from the
// emitting thread while the test reads it: a real data race when the emitter is the engine worker (ThreadSanitizer
// found it). This one records through a queued connection, so its list is only touched by the test's thread;
// queued events arrive in order, so everything emitted before a later signal the test waits for is recorded.
#include <QList>
#include <QObject>
#include <QTest>
#include <QVariant>

#include <type_traits>

class MainThreadSpy : public QObject, public QList<QList<QVariant>> {
public:
    template <typename Sender, typename... Args>
    MainThreadSpy(const Sender* sender, void (Sender::*signal)(Args...)) {
        connect(sender, signal, this, [this](Args... args) {
            append(QList<QVariant>{QVariant::fromValue(std::decay_t<Args>(args))...});
        }, Qt::QueuedConnection);
    }

    // Like QSignalSpy::wait: true when at least one more signal arrives within `ms`.
    bool wait(int ms = 5000) {
        const auto before = size();
        return QTest::qWaitFor([&] { return size() > before; }, ms);
    }
};
