#pragma once
// Runs the engine on its own thread. The UI talks to it only with queued signals carrying values;
// cancellation is an atomic flag the engine polls each step (a queued "cancel" would wait behind the run).
#include "core/api/generation_result.h"
#include "core/api/run_control.h"
#include "ui/modelinfo.h"
#include "ui/thread_inbox.h"

#include <QImage>
#include <QObject>
#include <QThread>

#include <atomic>
#include <functional>
#include <memory>

namespace dd::pipeline {
class Engine;
}

namespace dd::ui {

// How much the live preview cost during a run (measured on the worker).
struct PreviewStats {
    int steps = 0;
    int previews = 0;             // previews sent to the UI
    int computed = 0;             // previews the engine computed (only those the cadence wanted)
    double stepSeconds = 0;       // denoising time, previews excluded
    double previewSeconds = 0;    // building + converting the previews that were sent
    double costFraction() const { return stepSeconds > 0 ? previewSeconds / stepSeconds : 0; }
};

// What Verify found for one file (the CLI's verify: rerun its settings, compare the pixels hash for hash).
struct VerifyOutcome {
    QString file;
    QString error;             // set: no verdict (unreadable file, model not found, cancelled)
    bool identical = false;
    QString report;            // compare::describe: verdict, hashes, pixel difference, environment changes; for another
                               // tool's image compare::describeReproduction: what was matched and what not
    api::GenerationResult recorded, rerun;  // the file's image and the rerun's, each with its settings (batch of 1)
};

class EngineWorker : public QObject {
    Q_OBJECT
public:
    EngineWorker();
    ~EngineWorker() override;
    // Any thread: stops a run at the next step, or a model load between its phases.
    void cancel() { m_cancel.cancel(); }
    // Any thread: the share of step time live previews may cost (0.05); a large value previews every step.
    void setPreviewBudget(double fraction) { m_previewBudget.store(fraction); }
    double previewBudget() const { return m_previewBudget.load(); }
    // Any thread: runs `job` on the engine thread, in order with the other posted jobs (ui/thread_inbox.h).
    void post(std::function<void()> job) { m_inbox->post(std::move(job)); }

public slots:
    void generate(const dd::api::GenerationSettings& settings);
    // Reads what the model is (family, dtypes, size, hash), then loads its networks placed as `plan` says
    // (Engine::load), telling each part through modelLoading. Cancel stops between parts; a cancelled or failed
    // load keeps the previous model loaded.
    void loadModel(const QString& path, const dd::api::MemoryPlan& plan);
    // Live previews: TAESD at `folder` when set, else one found next to the model, else the latent→RGB
    // approximation; `enabled` false always takes the approximation. Applied now and at every model load.
    void setPreviewDecoder(bool enabled, const QString& folder);
    // Finds the model a restored image needs by A1111 hash (or name) in `folders` (hashing is slow: it runs here,
    // not on the UI thread): modelLocated or modelNotFound.
    void locateModel(const QString& name, const QString& hash, const QStringList& folders);
    // The same for a restored SDXL refiner (docs/refiner.md): refinerLocated or refinerNotFound.
    void locateRefiner(const QString& recorded, const QString& hash, const QStringList& folders);
    // One memory sample now (the UI asks for one periodically while no run is going).
    void sampleMemory();
    // Reruns what `file` records (model found by hash or name in `modelFolders`) and compares: verified.
    void verify(const QString& file, const QStringList& modelFolders);
    // Makes the image at `file` bigger with the upscaler network `upscaler` (a name in DD_UPSCALER_PATH or a file;
    // Engine::upscale) and saves it beside it as A1111's Extras would (imaging::writeUpscaled): upscaled, or
    // upscaleFailed naming the problem. Cancel stops it between tiles.
    void upscaleFile(const QString& file, const QString& upscaler);
    // Where upscaler networks are found by name (Preferences), before DD_UPSCALER_PATH: Engine::setUpscalerFolders.
    void setUpscalerFolders(const QStringList& folders);
    // Where a prompt's <lora:name> is found (Preferences), before DD_LORA_PATH: Engine::setLoraFolders.
    void setLoraFolders(const QStringList& folders);
    // Where textual-inversion embeddings are found (Preferences), before the defaults: Engine::setEmbeddingFolders.
    void setEmbeddingFolders(const QStringList& folders);

signals:
    // `preview` is null on steps the adaptive cadence skipped.
    void progress(int step, int totalSteps, const QImage& preview);
    void memorySampled(const QString& stage, const dd::api::MemorySample& sample);
    void finished(const dd::api::GenerationResult& result, const dd::ui::PreviewStats& previewStats);
    void failed(const QString& message);
    // `done` of `total` parts (total 0: not known yet).
    void modelLoading(const QString& path, const QString& phase, int done, int total);
    void modelLoaded(const dd::ui::ModelInfo& info);
    void modelFailed(const QString& path, const QString& message);
    void logLine(const QString& line);
    // "TAESD (path)" or "latent approximation"; `problem` says why a configured TAESD was not used.
    void previewDecoderChanged(const QString& description, const QString& problem);
    void modelLocated(const QString& path, const QString& how);
    void modelNotFound(const QString& message);
    void refinerLocated(const QString& path);
    void refinerNotFound(const QString& message);
    void verified(const dd::ui::VerifyOutcome& outcome);
    void upscaleProgress(int tile, int tiles);
    void upscaled(const QString& source, const QString& written, const QString& summary);
    void upscaleFailed(const QString& source, const QString& message);

private:
    ThreadInbox* m_inbox = new ThreadInbox(this);
    pipeline::Engine& engine();  // created lazily on the worker thread
    void applyPreviewDecoder();

    std::unique_ptr<pipeline::Engine> m_engine;
    QString m_model;             // the model loaded last (for a TAESD next to it)
    bool m_modelIsXl = false;
    bool m_taesdEnabled = true;
    QString m_taesdFolder;
    std::vector<std::string> m_loraFolders;  // Preferences': a reproduction leaves out the LoRAs not found there
    api::CancelToken m_cancel;
    std::atomic<double> m_previewBudget{0.05};
    int m_cudaDevice = -2;  // -2: not asked yet
};

// How much lower the engine thread's priority is than the UI thread's (nice steps, Linux).
inline constexpr int kEngineNiceIncrement = 5;

// Owns the thread: quits and joins it on destruction, so closing the window never leaves a run behind.
class EngineThread : public QObject {
    Q_OBJECT
public:
    explicit EngineThread(QObject* parent = nullptr);
    ~EngineThread() override;
    EngineWorker* worker() const { return m_worker; }
    // Starts the thread: after the owner has made its connections to worker(), so thread creation orders them
    // for ThreadSanitizer (Qt's own connection locks are invisible to it).
    void start();

private:
    QThread m_thread;
    EngineWorker* m_worker;
};

// Between the engine's 8-bit RGB images and Qt's: deep copies both ways.
QImage toQImage(const api::Image& image);
api::Image toApiImage(const QImage& image);

} // namespace dd::ui

Q_DECLARE_METATYPE(dd::api::GenerationSettings)
Q_DECLARE_METATYPE(dd::api::GenerationResult)
Q_DECLARE_METATYPE(dd::api::MemorySample)
Q_DECLARE_METATYPE(dd::ui::PreviewStats)
Q_DECLARE_METATYPE(dd::api::MemoryPlan)
Q_DECLARE_METATYPE(dd::ui::VerifyOutcome)
