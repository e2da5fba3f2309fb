#include "ui/engineworker.h"

#include "core/io/model_error.h"
#include "core/pipeline/engine.h"

namespace dd::ui {
namespace {

class SignalObserver : public pipeline::Observer {
public:
    explicit SignalObserver(EngineWorker* w) : m_worker(w) {}
    void onStep(int step, int total, const pipeline::Image& preview) override {
        emit m_worker->progress(step, total, toQImage(preview));
    }

private:
    EngineWorker* m_worker;
};

} // namespace

QImage toQImage(const pipeline::Image& image) {
    if (image.rgb.empty()) return {};
    // Deep copy: the QImage must own its pixels once it crosses to the UI thread.
    return QImage(image.rgb.data(), image.width, image.height, image.width * 3, QImage::Format_RGB888).copy();
}

EngineWorker::EngineWorker() = default;
EngineWorker::~EngineWorker() = default;

// The one catch boundary between the engine and the UI: nothing throws through a slot.
void EngineWorker::generate(const settings::GenerationSettings& settings) {
    m_cancel.reset();
    try {
        if (!m_engine)
            m_engine = std::make_unique<pipeline::Engine>([this](const std::string& line) { emit logLine(QString::fromStdString(line)); });
        SignalObserver observer(this);
        emit finished(m_engine->generate(settings, m_cancel, &observer));
    } catch (const pipeline::Cancelled&) {
        emit failed(tr("Cancelled."));
    } catch (const io::ModelFileError& e) {
        emit failed(QString::fromStdString(e.what()));
    } catch (const std::bad_alloc&) {
        emit failed(tr("Out of memory: try a smaller size, a smaller batch or a lower-memory preset."));
    } catch (const std::exception& e) {
        emit failed(QString::fromStdString(e.what()));
    }
}

EngineThread::EngineThread(QObject* parent) : QObject(parent), m_worker(new EngineWorker) {
    qRegisterMetaType<dd::settings::GenerationSettings>();
    qRegisterMetaType<dd::pipeline::GenerationResult>();
    m_thread.setObjectName("engine");
    m_worker->moveToThread(&m_thread);
    connect(&m_thread, &QThread::finished, m_worker, &QObject::deleteLater);
    m_thread.start();
}

EngineThread::~EngineThread() {
    m_worker->cancel();
    m_thread.quit();
    m_thread.wait();
}

} // namespace dd::ui
