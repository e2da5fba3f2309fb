#pragma once
// Runs the engine on its own thread. The UI talks to it only with queued signals carrying values;
// cancellation is an atomic flag the engine polls each step (a queued "cancel" would wait behind the run).
#include "core/pipeline/generation.h"

#include <QImage>
#include <QObject>
#include <QThread>

#include <memory>

namespace dd::pipeline {
class Engine;
}

namespace dd::ui {

class EngineWorker : public QObject {
    Q_OBJECT
public:
    EngineWorker();
    ~EngineWorker() override;
    void cancel() { m_cancel.cancel(); }

public slots:
    void generate(const dd::settings::GenerationSettings& settings);

signals:
    void progress(int step, int totalSteps, const QImage& preview);
    void finished(const dd::pipeline::GenerationResult& result);
    void failed(const QString& message);
    void logLine(const QString& line);

private:
    std::unique_ptr<pipeline::Engine> m_engine;  // created lazily on the worker thread
    pipeline::CancelToken m_cancel;
};

// Owns the thread: quits and joins it on destruction, so closing the window never leaves a run behind.
class EngineThread : public QObject {
    Q_OBJECT
public:
    explicit EngineThread(QObject* parent = nullptr);
    ~EngineThread() override;
    EngineWorker* worker() const { return m_worker; }

private:
    QThread m_thread;
    EngineWorker* m_worker;
};

QImage toQImage(const pipeline::Image& image);

} // namespace dd::ui

Q_DECLARE_METATYPE(dd::settings::GenerationSettings)
Q_DECLARE_METATYPE(dd::pipeline::GenerationResult)
