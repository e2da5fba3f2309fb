#pragma once
// The app's window: model picker, prompt panel, memory preset, Generate / Cancel, live preview, memory gauge,
// the canvas, the image library (every saved image, this session's too; autosave runs on the library's thread),
// the generation queue, and a status bar with per-stage times and the cost per image. It lays out and displays:
// what runs and when (the queue, A/B pairs, Verify, saving) is RunController's, which it feeds with clicks and
// the workers' answers. All engine work goes to the EngineWorker thread through queued signals; the queue's
// journal lives on its own thread (QueueService). A job that was running when the app died comes back
// interrupted and waits for Retry; pending jobs wait for Run queue.
#include "core/api/generation_result.h"
#include "core/compare/ab_settings.h"
#include "core/compare/xyz_plot.h"
#include "core/memory/preset.h"
#include "ui/apppreferences.h"
#include "ui/engineworker.h"
#include "ui/pricing.h"
#include "ui/libraryservice.h"
#include "ui/queueservice.h"
#include "ui/servicethread.h"

#include <QElapsedTimer>
#include <QMainWindow>
#include <QSize>

#include <functional>
#include <memory>
#include <optional>
#include <vector>

class QDockWidget;
class QMenu;
class QLabel;
class QProgressBar;
class QAction;
class QPushButton;
class QSpinBox;
class QToolBar;
class QTimer;

namespace dd::ui {

class CompareView;
class EngineThread;
class LibraryPanel;
struct LibraryItem;
class ModelPicker;
class PreviewView;
class ControlNetPanel;
class HiresPanel;
class ImageInputPanel;
class MaskLayer;
class PlotBook;
class PromptPanel;
class QueueView;
class RunController;
class VramGauge;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(const QString& model, QWidget* parent = nullptr);
    ~MainWindow() override;

    // What Generate would run now: the panel's values, the chosen model and the preset's plan.
    api::GenerationSettings currentSettings() const;
    // A generation runs, or the queue still has jobs of a Generate click to run.
    bool isRunning() const;
    RunController* runController() const { return m_run; }
    int apiPort() const;  // the port Serve API listens on, 0 when it is off
    // The queue's journal: queue.jsonl in the app's data folder.
    static QString queueFile();
    const std::optional<memory::Preset>& preset() const { return m_preset; }
    const PreviewStats& lastPreviewStats() const { return m_lastPreviewStats; }

    PromptPanel* promptPanel() const { return m_panel; }
    ControlNetPanel* controlNetPanel() const { return m_controlNet; }
    ImageInputPanel* imageInputPanel() const { return m_imageInput; }
    HiresPanel* hiresPanel() const { return m_hires; }
    PreviewView* previewView() const { return m_preview; }
    VramGauge* gauge() const { return m_gauge; }
    LibraryPanel* libraryPanel() const { return m_library; }
    // The saved file of the image on the canvas ("" when it is not saved: autosave off, or not yet written; the
    // grid of a batch: its first image).
    QString shownImageFile() const;
    const std::optional<VerifyOutcome>& lastVerify() const { return m_lastVerify; }
    const AppPreferences& preferences() const { return m_prefs; }
    ModelPicker* modelPicker() const { return m_picker; }
    QueueView* queueView() const { return m_queueView; }
    const QList<JobRow>& jobs() const;
    QString previewSource() const { return m_previewSource; }  // "TAESD (…)" or "latent approximation"
    // The folders searched for a restored image's model: preferences' model folders, then the folders of the
    // recent single-file models.
    QStringList knownModelFolders() const;
    EngineWorker* worker() const;
    CompareView* compareView() const { return m_compareView; }  // null until a comparison was opened

    // Predicted peak bytes for a plan at the current model and size (< 0: unknown). Set by the predictor.
    qint64 predictedPeakFor(const api::MemoryPlan& plan) const;

public slots:
    void startGeneration();
    void cancel();
    void openPresetDialog();
    void openPreferences();
    void applyPreset(const dd::memory::Preset& preset);
    // The two images selected in the library side by side (CompareView).
    void compareSelected();
    // Quick A/B: two runs on the worker, then the compare view. Seeds: this seed against the next one.
    void runAbSeeds();
    void runAbSetting(const QString& fieldPath, const QString& valueB);
    void chooseAbSetting();  // asks for the field and B's value
    // Settings from a PNG / JPEG / WebP / sidecar / A1111 .txt (also by drag and drop). False + status message
    // when the file has none.
    bool restoreFromFile(const QString& path);
    void openSettingsFile();
    void runQueue();  // runs the pending jobs one after the other
    // The image on the canvas: a copy elsewhere (metadata and sidecar too), the clipboard, its folder.
    void saveImageAs();
    void copyImage();
    void copyParameters();
    void showInFolder();
    void compareFiles(const QString& pathA, const QString& pathB);
    void compareWith(const QString& path);  // asks for the other image
    // Reruns what the file records and compares the pixels (the CLI's verify); the compare view shows both.
    void verifyFile(const QString& path);
    void deleteShownImage();  // to the trash, and out of the library
    void importFolder();      // asks for a folder; its images join the library
    void undoRestore();      // the settings before the last restore come back
    // An X/Y/Z plot of the window's settings (seed taken once): every cell queued as a job of its own; the sheets
    // follow when the last cell is saved (plotFinished). False + status message when an axis does not fit.
    bool startPlot(const std::vector<compare::PlotAxis>& axes);
    void openPlotDialog();

    void newRandomSeed();
    void showShortcuts();
    void applyPastedParameters();

signals:
    void previewDecoderRequested(bool enabled, const QString& folder);
    void locateRequested(const QString& name, const QString& hash, const QStringList& folders);
    void locateRefinerRequested(const QString& recorded, const QString& hash, const QStringList& folders);
    void memorySampleRequested();
    void runFinished();  // after the last image of a Generate click (or a failure / cancel)
    void imagesSaved(const QStringList& files);  // a finished run's images and sidecars, on disk and indexed
    void upscaleRequested(const QString& imagePath, const QString& upscaler);
    void upscaleDone(const QString& written);  // the bigger copy is saved and shown (or "" when it failed)
    void plotFinished(const QStringList& sheets);  // an X/Y/Z plot's sheets, written beside its cells
    void libraryScanRequested(const QString& folder);

protected:
    void closeEvent(QCloseEvent* event) override;
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    void startAbPair(const std::function<compare::AbPair(const api::GenerationSettings&)>& makePair);
    void buildMenus();
    QDockWidget* buildLibrary();
    QWidget* buildCanvas();
    QToolBar* buildMaskBar(QWidget* canvas);
    void setPaintingMask(bool on);
    void setExtendingCanvas(bool on);
    void makeVariations(const QString& file);
    void plotCellSaved(const QString& jobId, const QStringList& files);
    bool takeShownImageAsInit(QAction* tool);
    void saveMask();
    void updateMaskedArea();  // the dashed "only masked" box on the canvas
    void showRunImages(const api::GenerationResult& result, const std::vector<QImage>& images, const QString& jobId);
    void updateImageActions();
    void onVerified(const VerifyOutcome& outcome);
    void keepResult(const QString& jobId, const api::GenerationResult& result, double wallSeconds);
    void showLibraryImage(const LibraryItem& item);
    void useFromFile(const QString& path, bool promptOnly);
    void sendToImg2Img(const QString& path);
    // Upscale (mainwindow_upscale.cpp): the networks of DD_UPSCALER_PATH and "Upscaler file…", for `path`.
    void connectUpscaling();
    void fillUpscaleMenu(QMenu* menu, const std::function<QString()>& path);
    void applyRestoredSettings(const api::GenerationSettings& s);
    void checkPastedParameters();
    void showComparison(const api::GenerationResult& a, int indexA, const api::GenerationResult& b, int indexB);
    // Live mode (mainwindow_live.cpp): the Live switch, the debounced rerun on each edit, Keep on the canvas bar.
    void connectLive();
    void runLive();
    // Serve API (mainwindow_api.cpp): the A1111 web API on the window's queue.
    void setServingApi(bool on);
    void onRunStarted(const api::GenerationSettings& s);
    void onProgress(int step, int total, const QImage& preview);
    void showResult(const api::GenerationResult& result, const QString& jobId);
    void onModelChanged(const ModelInfo& info);
    void updateButtons();
    void applyPreferences();
    void locateRestoredModel(const QString& name, const QString& hash, const QString& recordedModel);
    void updatePresetLabel();
    void updatePrediction();
    void restoreState();
    void saveState() const;

    ModelPicker* m_picker;
    PromptPanel* m_panel;
    ControlNetPanel* m_controlNet;
    ImageInputPanel* m_imageInput;
    HiresPanel* m_hires;
    PreviewView* m_preview;
    VramGauge* m_gauge;
    QLabel* m_modelBanner;
    QLabel* m_presetLabel;
    QLabel* m_eta;
    QLabel* m_costLabel;
    QProgressBar* m_progress;
    QPushButton* m_generate;
    QPushButton* m_cancel;
    QTimer* m_idleSampler;
    QLabel* m_restoreNotice;
    QPushButton* m_reproduce;     // after a drop of an image: rerun it and say what matched (verify --against)
    QString m_reproducePath;
    QLabel* m_previewLabel;
    QueueView* m_queueView;
    std::unique_ptr<ServiceThread<QueueService>> m_queue;
    LibraryPanel* m_library;
    std::unique_ptr<ServiceThread<LibraryService>> m_libraryThread;
    QStringList m_shownFiles;    // the canvas's images on disk, in the canvas's order ("" until saved)
    QString m_shownJob;          // the run on the canvas, by queue job: its saved files are the canvas's
    QList<QAction*> m_imageActions;  // the canvas bar's actions that need a saved image
    QLabel* m_zoomLabel;
    QAction* m_gridAction;
    std::unique_ptr<PlotBook> m_plots;  // the X/Y/Z plots whose cells are being made (plots.json)
    double m_secondsPerStepPixel = 0;  // the last run's denoising time per step and pixel: the plot's estimate
    QAction* m_paintMask = nullptr;
    QAction* m_extendCanvas = nullptr;
    QToolBar* m_maskBar = nullptr;
    QSpinBox *m_brushSize, *m_brushHardness;
    QAction* m_eraser;
    std::unique_ptr<MaskLayer> m_maskLayer;  // the mask being painted, for the image m_maskFor
    QString m_maskFor;
    std::optional<VerifyOutcome> m_lastVerify;
    QLabel* m_pasteNotice;
    std::vector<api::GenerationSettings> m_undoRestores;          // before each restore, newest last
    std::optional<api::GenerationSettings> m_pastedParameters;    // what the prompt box's A1111 block says
    RunController* m_run;  // what runs, and when: the queue, A/B, Verify, saving
    QWidget* m_compareWindow = nullptr;
    CompareView* m_compareView = nullptr;
    EngineThread* m_engine;

    std::optional<memory::Preset> m_preset;
    PriceProfile m_price;
    AppPreferences m_prefs;
    QString m_previewSource;
    PreviewStats m_lastPreviewStats;
    std::optional<api::GenerationSettings> m_lastRunSettings;  // text inputs of the engine's hot cache
    QElapsedTimer m_runClock;  // since the current run's first step
    QPushButton* m_live;
    QTimer* m_liveTimer;          // a pause in typing starts the live run
    QAction* m_keepLive = nullptr;
    QString m_keepSizeForModel;  // a restore asked for this model: its load keeps the restored size
    QSize m_modelSize;           // the size the model set; a size the artist chose stays through a model change
    int m_firstStep = 0;
    struct ApiHost;
    struct ApiHostDeleter {
        void operator()(ApiHost* host) const;
    };
    std::unique_ptr<ApiHost, ApiHostDeleter> m_api;  // while Serve API is on
    QAction* m_serveApi = nullptr;
    QLabel* m_apiLabel = nullptr;
};

} // namespace dd::ui
