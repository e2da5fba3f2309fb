#include "ui/engineworker.h"

#include "core/compare/reproduction.h"
#include "core/compare/verify_file.h"
#include "core/io/model_error.h"
#include "core/memory/memory_probe.h"
#include "core/pipeline/engine.h"
#include "core/pipeline/find_taesd.h"
#include "core/settings/model_lookup.h"
#include "core/settings/restore.h"
#include "imaging/compare.h"
#include "imaging/export.h"
#include "imaging/png.h"
#include "imaging/run_images.h"
#include "ui/modelinspector.h"
#include "ui/previewcadence.h"
#include "ui/stringlists.h"
#include "ui/threadpriority.h"

#include <QFileInfo>

#include <algorithm>
#include <cmath>
#include <chrono>

namespace dd::ui {
namespace {

using Clock = std::chrono::steady_clock;
double secondsBetween(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// Forwards the engine's callbacks as queued signals and answers wantsPreview from the adaptive cadence, so the
// engine computes only the previews that will be shown (5 % of the step time, PreviewCadence). Timing: onLatents
// ends a step; a preview's cost runs from there (the build happens between wantsPreview and onStep) to the end of
// its conversion; the time from the previous onStep's end to onLatents is the step itself.
class SignalObserver : public pipeline::LatentObserver {
public:
    SignalObserver(EngineWorker* w, double budget) : m_worker(w), m_cadence(budget), m_last(Clock::now()) {}
    void onLatents(int, const at::Tensor&) override {
        m_latentsAt = Clock::now();
        // The first step's interval also holds loading and encoding: not a step time.
        if (m_stats.steps++ > 0) m_cadence.addStepSeconds(secondsBetween(m_last, m_latentsAt));
    }
    bool wantsPreview(int step, int total) override { return m_cadence.wantPreview(step, total); }
    void onStep(int step, int total, const api::Image& preview) override {
        QImage image;
        if (!preview.rgb.empty()) {
            ++m_stats.computed;
            image = toQImage(preview);
            m_cadence.addPreviewSeconds(secondsBetween(m_latentsAt, Clock::now()));
        }
        emit m_worker->progress(step, total, image);
        m_last = Clock::now();
    }
    void onMemory(const char* stage, const api::MemorySample& sample) override {
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

QImage toQImage(const api::Image& image) {
    if (image.rgb.empty()) return {};
    // Deep copy: the QImage must own its pixels once it crosses to the UI thread.
    return QImage(image.rgb.data(), image.width, image.height, image.width * 3, QImage::Format_RGB888).copy();
}

api::Image toApiImage(const QImage& image) {
    const QImage rgb = image.convertToFormat(QImage::Format_RGB888);
    api::Image out{rgb.width(), rgb.height(), std::vector<uint8_t>(size_t(rgb.width()) * size_t(rgb.height()) * 3)};
    for (int y = 0; y < rgb.height(); ++y)  // scan lines may be padded: row by row
        std::copy_n(rgb.constScanLine(y), size_t(rgb.width()) * 3, out.rgb.begin() + ptrdiff_t(size_t(y) * rgb.width() * 3));
    return out;
}

EngineWorker::EngineWorker() = default;
EngineWorker::~EngineWorker() = default;

pipeline::Engine& EngineWorker::engine() {
    if (!m_engine)
        m_engine = std::make_unique<pipeline::Engine>([this](const std::string& line) { emit logLine(QString::fromStdString(line)); });
    return *m_engine;
}

// The one catch boundary between the engine and the UI: nothing throws through a slot.
void EngineWorker::generate(const api::GenerationSettings& settings) {
    m_cancel.reset();
    try {
        SignalObserver observer(this, m_previewBudget.load());
        // The init image, mask and control images are read and prepared here, on the worker thread.
        auto result = engine().generate(settings, m_cancel, &observer, imaging::readRunImages(settings));
        emit finished(result, observer.stats());
    } catch (const std::exception& e) {
        emit failed(QString::fromStdString(api::failureMessage(e)));
    }
}

void EngineWorker::loadModel(const QString& path, const api::MemoryPlan& plan) {
    m_cancel.reset();
    const QString name = QFileInfo(path).fileName().isEmpty() ? path : QFileInfo(path).fileName();
    try {
        ModelInfo info = inspectModel(path, m_cancel, [&](const QString& phase) { emit modelLoading(path, phase, 0, 0); });
        const auto report = engine().load(info.path.toStdString(), plan, m_cancel,
                                          [&](const std::string& part, int done, int total) {
                                              emit modelLoading(path, QString::fromStdString(part), done, total);
                                          },
                                          info.hash.toStdString());
        info.loaded = true;
        info.loadSeconds = report.seconds;
        m_model = info.path;
        m_modelIsXl = info.isXl();
        applyPreviewDecoder();
        emit modelLoaded(info);
    } catch (const api::Cancelled&) {
        emit modelFailed(path, tr("Loading %1 was cancelled.").arg(name));
    } catch (const io::ModelFileError& e) {
        emit modelFailed(path, QString::fromStdString(e.what()));  // names the file and the problem
    } catch (const std::exception& e) {
        emit modelFailed(path, tr("%1: %2").arg(path, QString::fromStdString(api::failureMessage(e))));
    }
}

void EngineWorker::setUpscalerFolders(const QStringList& folders) { engine().setUpscalerFolders(toStdStrings(folders)); }

void EngineWorker::setLoraFolders(const QStringList& folders) {
    m_loraFolders = toStdStrings(folders);
    engine().setLoraFolders(m_loraFolders);
}

void EngineWorker::setEmbeddingFolders(const QStringList& folders) { engine().setEmbeddingFolders(toStdStrings(folders)); }

void EngineWorker::setPreviewDecoder(bool enabled, const QString& folder) {
    m_taesdEnabled = enabled;
    m_taesdFolder = folder;
    applyPreviewDecoder();
}

void EngineWorker::applyPreviewDecoder() {
    QString wanted, problem;
    if (m_taesdEnabled) {
        wanted = m_taesdFolder;
        if (wanted.isEmpty() && !m_model.isEmpty())
            wanted = QString::fromStdString(pipeline::findTaesdNextTo(m_model.toStdString(), m_modelIsXl));
    }
    try {
        engine().setPreviewDecoder(wanted.toStdString());
    } catch (const std::exception& e) {
        problem = tr("TAESD not used: %1").arg(QString::fromStdString(e.what()));
        engine().setPreviewDecoder({});
    }
    const QString used = QString::fromStdString(engine().previewDecoder());
    emit previewDecoderChanged(used.isEmpty() ? tr("latent approximation") : tr("TAESD (%1)").arg(used), problem);
}

void EngineWorker::locateModel(const QString& name, const QString& hash, const QStringList& folders) {
    const auto dirs = toStdStrings(folders);
    try {
        const std::string path = settings::resolveRestoredModel(name.toStdString(), hash.toStdString(), dirs);
        emit modelLocated(QString::fromStdString(path), hash.isEmpty() ? tr("name %1").arg(name) : tr("hash %1").arg(hash));
    } catch (const std::exception&) {
        // resolveRestoredModel's message speaks to CLI users (--model); say the same in the window's terms.
        const QString model = tr("model '%1'").arg(name.isEmpty() ? tr("(unnamed)") : name) +
                              (hash.isEmpty() ? QString() : tr(" (hash %1)").arg(hash));
        const QString where = folders.isEmpty() ? tr("no model folders are known yet") : tr("not found in %1").arg(folders.join(", "));
        emit modelNotFound(tr("These settings need %1: %2. Open it with Folder… or File…, or add its folder under "
                              "Preferences → Folders → Models.").arg(model, where));
    }
}

void EngineWorker::locateRefiner(const QString& recorded, const QString& hash, const QStringList& folders) {
    const auto dirs = toStdStrings(folders);
    try {
        emit refinerLocated(QString::fromStdString(settings::resolveRestoredRefiner(recorded.toStdString(), hash.toStdString(), dirs)));
    } catch (const std::exception&) {
        const QString where = folders.isEmpty() ? tr("no model folders are known yet") : tr("not found in %1").arg(folders.join(", "));
        emit refinerNotFound(tr("These settings used the refiner '%1'%2: %3. Choose it under Refiner, or add its folder "
                                "under Preferences → Folders → Models.")
                                 .arg(recorded, hash.isEmpty() ? QString() : tr(" (hash %1)").arg(hash), where));
    }
}

namespace {

// Image `index` of a run as a run of its own: its seed, a batch of one (what the compare view's diff should see).
api::GenerationResult single(const api::GenerationResult& run, const api::Image& image, int index) {
    api::GenerationResult r = run;
    r.images = {image};
    r.settings.seed += index;
    r.settings.batchSize = 1;
    return r;
}

} // namespace

void EngineWorker::verify(const QString& file, const QStringList& modelFolders) {
    m_cancel.reset();
    VerifyOutcome out;
    out.file = file;
    try {
        // Another tool's image: reproduced as near as it goes on the open model (restoring it found and loaded the
        // model it names, or the artist chose one), with what could not be matched (verify --against).
        const bool ours = settings::restoreFromFile(file.toStdString()).format == "diffusiondesk";
        const std::string model = ours ? std::string() : m_model.isEmpty() ? std::string(pipeline::kDemoModel) : m_model.toStdString();
        compare::VerifyFile input = compare::verifyFileFrom(file.toStdString(), {}, model, toStdStrings(modelFolders));
        if (!ours) compare::dropMissingLoras(input.recorded.settings, m_loraFolders, input.notes);
        if (!input.imagePath.empty()) input.recorded.images[0].image = imaging::readImage(input.imagePath);
        SignalObserver observer(this, m_previewBudget.load());
        const compare::VerifyReport report = compare::verify(engine(), input.recorded, m_cancel, &observer, imaging::readRunImages(input.recorded.settings));
        out.identical = report.identical;
        double ssim = std::nan("");
        if (!ours && !report.identical && !report.images.empty() && report.images[0].pixels.sameSize)
            ssim = imaging::ssim(input.recorded.images[0].image, report.rerun.images[size_t(report.images[0].index)]);
        out.report = QString::fromStdString(ours ? compare::describe(report) : compare::describeReproduction(input, report, ssim));
        if (!report.images.empty()) {
            const int index = report.images.front().index;
            api::GenerationResult recorded;
            recorded.settings = input.recorded.settings;
            if (input.recorded.environment) recorded.environment = *input.recorded.environment;
            out.recorded = single(recorded, input.recorded.images.front().image, index);
            out.rerun = single(report.rerun, report.rerun.images[size_t(index)], index);
        }
    } catch (const std::exception& e) {
        out.error = QString::fromStdString(api::failureMessage(e));
    }
    emit verified(out);
}

void EngineWorker::upscaleFile(const QString& file, const QString& upscaler) {
    m_cancel.reset();
    try {
        const api::Image source = imaging::readImage(file.toStdString());
        const auto r = engine().upscale(source, upscaler.toStdString(), {}, m_cancel,
                                        [this](int done, int total) { emit upscaleProgress(done, total); });
        const std::string out = imaging::upscaledPathFor(file.toStdString(), r.scale, r.name);
        imaging::writeUpscaled(out, r.image, file.toStdString(), r.scale, r.name);
        emit upscaled(file, QString::fromStdString(out),
                      tr("%1×%2 → %3×%4 with %5 (%6)")
                          .arg(source.width).arg(source.height).arg(r.image.width).arg(r.image.height)
                          .arg(QString::fromStdString(r.name), QString::fromStdString(r.description)));
    } catch (const std::exception& e) {
        emit upscaleFailed(file, QString::fromStdString(api::failureMessage(e)));
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
    qRegisterMetaType<dd::api::GenerationSettings>();
    qRegisterMetaType<dd::api::GenerationResult>();
    qRegisterMetaType<dd::api::MemorySample>();
    qRegisterMetaType<dd::ui::PreviewStats>();
    qRegisterMetaType<dd::ui::ModelInfo>();
    qRegisterMetaType<dd::api::MemoryPlan>();
    qRegisterMetaType<dd::ui::VerifyOutcome>();
    m_thread.setObjectName("engine");
    m_worker->moveToThread(&m_thread);
    connect(&m_thread, &QThread::finished, m_worker, &QObject::deleteLater);
    // Before any torch work, so torch's thread pool (made by this thread later) inherits the lower priority:
    // the UI thread then gets a core first whenever both want one (test_mainwindow's latency check).
    connect(&m_thread, &QThread::started, m_worker, [] { lowerCurrentThreadPriority(kEngineNiceIncrement); }, Qt::DirectConnection);
}

void EngineThread::start() { m_thread.start(); }

EngineThread::~EngineThread() {
    m_worker->cancel();
    m_thread.quit();
    m_thread.wait();
}

} // namespace dd::ui
