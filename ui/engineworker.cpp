#include "ui/engineworker.h"

#include "core/io/model_error.h"
#include "core/pipeline/engine.h"
#include "ui/modelinspector.h"
#include "ui/previewcadence.h"

#include <chrono>

namespace dd::ui {
namespace {

using Clock = std::chrono::steady_clock;
double secondsBetween(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// Forwards the engine's callbacks as queued signals. The engine builds a latent preview right after
// onLatents and then calls onStep, so the gap between the two is the preview's build cost; the time from the
// previous onStep's end to onLatents is the step itself. Previews go out only while their cost stays within
// 5 % of the step time (PreviewCadence).
class SignalObserver : public pipeline::Observer {
public:
    SignalObserver(EngineWorker* w, double budget) : m_worker(w), m_cadence(budget), m_last(Clock::now()) {}
    void onLatents(int, const at::Tensor&) override {
        m_latentsAt = Clock::now();
        // The first step's interval also holds loading and encoding: not a step time.
        if (m_stats.steps++ > 0) m_cadence.addStepSeconds(secondsBetween(m_last, m_latentsAt));
    }
    void onStep(int step, int total, const pipeline::Image& preview) override {
        const auto start = Clock::now();
        const double build = m_latentsAt.time_since_epoch().count() ? secondsBetween(m_latentsAt, start) : 0;
        QImage image;
        if (!preview.rgb.empty() && m_cadence.wantPreview(step, total)) {
            image = toQImage(preview);
            m_cadence.addPreviewSeconds(build + secondsBetween(start, Clock::now()));
        }
        emit m_worker->progress(step, total, image);
        m_last = Clock::now();
    }
    void onMemory(const char* stage, const memory::MemorySample& sample) override {
        emit m_worker->memorySampled(QString::fromLatin1(stage), sample);
    }
    PreviewStats stats() const {
        PreviewStats s = m_stats;
        s.previews = m_cadence.previews();
        s.stepSeconds = m_cadence.stepSeconds();
        s.previewSeconds = m_cadence.previewSeconds();
        return s;
    }

private:
    EngineWorker* m_worker;
    PreviewCadence m_cadence;
    PreviewStats m_stats;
    Clock::time_point m_last, m_latentsAt{};
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
        SignalObserver observer(this, m_previewBudget.load());
        auto result = m_engine->generate(settings, m_cancel, &observer);
        emit finished(result, observer.stats());
    } catch (const pipeline::Cancelled&) {
        emit failed(tr("Cancelled."));
    } catch (const io::ModelFileError& e) {
        emit failed(QString::fromStdString(e.what()));
    } catch (const std::bad_alloc&) {
        emit failed(tr("Out of memory: try a smaller size, a smaller batch or a lower-memory preset."));
    } catch (const std::exception& e) {
        const QString what = QString::fromStdString(e.what());
        if (what.contains(QLatin1String("out of memory"), Qt::CaseInsensitive))
            emit failed(tr("Out of memory: try a smaller size, a smaller batch or a lower-memory preset. (%1)").arg(what));
        else
            emit failed(what);
    }
}

void EngineWorker::loadModel(const QString& path) {
    m_cancel.reset();
    try {
        const ModelInfo info = inspectModel(path, m_cancel, [&](const QString& phase) { emit modelLoading(path, phase); });
        emit modelLoaded(info);
    } catch (const pipeline::Cancelled&) {
        emit modelFailed(path, tr("Loading cancelled."));
    } catch (const std::exception& e) {
        emit modelFailed(path, QString::fromStdString(e.what()));
    }
}

void EngineWorker::sampleMemory() {
    try {
        if (m_cudaDevice == -2) m_cudaDevice = memory::cudaDeviceCount() > 0 ? 0 : -1;
        emit memorySampled(QStringLiteral("idle"), memory::sampleMemory(m_cudaDevice));
    } catch (const std::exception& e) {
        emit logLine(QString::fromStdString(e.what()));
    }
}

EngineThread::EngineThread(QObject* parent) : QObject(parent), m_worker(new EngineWorker) {
    qRegisterMetaType<dd::settings::GenerationSettings>();
    qRegisterMetaType<dd::pipeline::GenerationResult>();
    qRegisterMetaType<dd::memory::MemorySample>();
    qRegisterMetaType<dd::ui::PreviewStats>();
    qRegisterMetaType<dd::ui::ModelInfo>();
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
