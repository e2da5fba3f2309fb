#include "ui/mainwindow.h"
#include "ui/xyzplot.h"

#include "core/pipeline/engine.h"
#include "core/resources.h"
#include "ui/compareview.h"
#include "ui/controlnetpanel.h"
#include "ui/hirespanel.h"
#include "ui/imageinputpanel.h"
#include "ui/masklayer.h"
#include "ui/dialoghooks.h"
#include "ui/librarypanel.h"
#include "ui/libraryservice.h"
#include "ui/modelpicker.h"
#include "ui/peakprediction.h"
#include "ui/preferencesdialog.h"
#include "ui/presetdialog.h"
#include "ui/previewview.h"
#include "ui/promptpanel.h"
#include "ui/queueview.h"
#include "ui/runcontroller.h"
#include "ui/section.h"
#include "ui/vramgauge.h"

#include <QCloseEvent>
#include <QDockWidget>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenuBar>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QEvent>
#include <QScrollBar>
#include <QSettings>
#include <QShortcut>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTimer>
#include <QVBoxLayout>

#include <utility>

namespace dd::ui {
namespace {

// Keeps a vertically scrolling column as wide as its content needs: an opened section or a restore report widens
// the column instead of being cut off at its left.
class FollowContentWidth : public QObject {
public:
    explicit FollowContentWidth(QScrollArea* scroll) : QObject(scroll), m_scroll(scroll) {
        scroll->widget()->installEventFilter(this);
        fit();
    }
    bool eventFilter(QObject*, QEvent* e) override {
        if (e->type() == QEvent::LayoutRequest) fit();
        return false;
    }

private:
    void fit() {
        m_scroll->setMinimumWidth(m_scroll->widget()->minimumSizeHint().width() + m_scroll->verticalScrollBar()->sizeHint().width());
    }
    QScrollArea* m_scroll;
};

QPushButton* button(const char* name, const QString& text, QWidget* parent) {
    auto* b = new QPushButton(text, parent);
    b->setObjectName(name);
    return b;
}

constexpr const char* kFirstPrompt = "a lighthouse on a cliff at sunset, oil painting";

QString seconds(double s) { return s < 10 ? QString::number(s, 'f', 2) + " s" : QString::number(s, 'f', 1) + " s"; }

} // namespace

MainWindow::MainWindow(const QString& model, QWidget* parent)
    : QMainWindow(parent), m_price(PriceProfile::load()), m_prefs(AppPreferences::load()) {
    setObjectName("mainWindow");
    setWindowTitle(tr("DiffusionDesk"));
    m_run = new RunController(this);
    m_run->setLaunchGate([this] { return m_picker->loading(); });  // a Generate pressed during a load waits
    m_run->setAutosave(m_prefs.autosave);
    m_picker = new ModelPicker(this);
    m_panel = new PromptPanel(this);
    m_panel->setStylesFile(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + QStringLiteral("/styles.csv"));
    m_plots = std::make_unique<PlotBook>(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + QStringLiteral("/plots.json"));
    m_modelSize = QSize(m_panel->settings().width, m_panel->settings().height);
    m_controlNet = new ControlNetPanel(this);
    m_imageInput = new ImageInputPanel(this);
    m_hires = new HiresPanel(this);
    m_modelBanner = new QLabel(this);
    m_modelBanner->setObjectName("modelBanner");
    m_modelBanner->setWordWrap(true);
    m_restoreNotice = new QLabel(this);
    m_restoreNotice->setObjectName("restoreNotice");
    m_restoreNotice->setWordWrap(true);
    m_restoreNotice->hide();
    m_reproduce = new QPushButton(this);
    m_reproduce->setObjectName("reproduceButton");
    m_reproduce->setToolTip(tr("Run the settings read from the image and compare the two pictures: the report says what "
                               "was matched, what could not be, and how far the pixels are"));
    m_reproduce->hide();
    connect(m_reproduce, &QPushButton::clicked, this, [this] { verifyFile(m_reproducePath); });
    m_pasteNotice = new QLabel(tr("The prompt holds A1111 parameters. <a href='apply'>Apply them as settings</a>"), this);
    m_pasteNotice->setObjectName("pasteNotice");
    m_pasteNotice->setWordWrap(true);
    m_pasteNotice->hide();
    connect(m_pasteNotice, &QLabel::linkActivated, this, &MainWindow::applyPastedParameters);
    m_previewLabel = new QLabel(this);
    m_previewLabel->setObjectName("previewSource");
    m_presetLabel = new QLabel(this);
    m_presetLabel->setObjectName("presetLabel");
    auto* presetButton = button("presetButton", tr("Presets…"), this);
    m_generate = button("generate", tr("Generate"), this);
    m_generate->setDefault(true);
    m_generate->setMinimumHeight(34);
    QFont bold = m_generate->font();
    bold.setBold(true);
    m_generate->setFont(bold);
    m_generate->setToolTip(tr("Ctrl+Enter"));
    m_cancel = button("cancel", tr("Cancel"), this);
    m_cancel->setToolTip(tr("Esc"));
    m_live = button("live", tr("Live"), this);
    m_live->setCheckable(true);
    m_live->setStyleSheet(QStringLiteral("QPushButton:checked { background: #2e7d32; color: white; font-weight: bold; }"));
    m_live->setToolTip(tr("Draw again at every edit of prompt, negative, seed, steps, CFG or sampler. Live pictures "
                          "are not saved: Keep on the canvas saves the one shown."));
    m_progress = new QProgressBar(this);
    m_progress->setObjectName("progress");
    m_eta = new QLabel(this);
    m_eta->setObjectName("eta");
    m_gauge = new VramGauge(this);
    m_preview = new PreviewView(this);
    m_costLabel = new QLabel(this);
    m_costLabel->setObjectName("costLabel");

    auto* presetRow = new QHBoxLayout;
    presetRow->addWidget(m_presetLabel, 1);
    presetRow->addWidget(presetButton);
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(m_generate, 1);
    buttons->addWidget(m_live);
    buttons->addWidget(m_cancel);
    // The left column: the settings scroll (vertically only); what every run needs to see stays below them,
    // never scrolled away: Generate / Cancel, progress and ETA, the preset, the predicted peak and the gauge.
    auto* settingsWidget = new QWidget(this);
    auto* settingsLayout = new QVBoxLayout(settingsWidget);
    settingsLayout->addWidget(m_picker);
    settingsLayout->addWidget(m_modelBanner);
    settingsLayout->addWidget(m_restoreNotice);
    settingsLayout->addWidget(m_reproduce);
    settingsLayout->addWidget(m_pasteNotice);
    settingsLayout->addWidget(m_panel);
    // Starting from an image and ControlNet fold away like the refiner: each group's checkbox says whether it is used.
    auto* imageSection = new Section(tr("Start from an image"), m_imageInput, this);
    imageSection->setObjectName("imageInputSection");
    auto imageSummary = [this, imageSection] { imageSection->setSummary(m_imageInput->summary()); };
    connect(m_imageInput, &ImageInputPanel::changed, imageSection, imageSummary);
    connect(m_imageInput, &QGroupBox::toggled, imageSection, [imageSection](bool on) {
        if (on) imageSection->setExpanded(true);
    });
    imageSummary();
    settingsLayout->addWidget(imageSection);
    auto* hiresSection = new Section(tr("Hires fix"), m_hires, this);
    hiresSection->setObjectName("hiresSection");
    auto hiresSummary = [this, hiresSection] { hiresSection->setSummary(m_hires->summary(m_panel->settings())); };
    connect(m_hires, &HiresPanel::changed, hiresSection, hiresSummary);
    connect(m_panel, &PromptPanel::shapeChanged, hiresSection, hiresSummary);
    connect(m_hires, &QGroupBox::toggled, hiresSection, [hiresSection](bool on) {
        if (on) hiresSection->setExpanded(true);
    });
    hiresSummary();
    settingsLayout->addWidget(hiresSection);
    // The hires fix is for txt2img: switching one on switches the other off, rather than Generate failing later.
    connect(m_hires, &QGroupBox::toggled, this, [this](bool on) {
        if (on && m_imageInput->isChecked()) {
            m_imageInput->setChecked(false);
            statusBar()->showMessage(tr("Hires fix on: the run starts from noise again (Start from an image is off)"), 6000);
        }
    });
    connect(m_imageInput, &QGroupBox::toggled, this, [this](bool on) {
        if (on && m_hires->isChecked()) {
            m_hires->setChecked(false);
            statusBar()->showMessage(tr("Starting from an image: the hires fix is off (it is for txt2img)"), 6000);
        }
    });
    auto* controlNetSection = new Section(tr("ControlNet"), m_controlNet, this);
    auto controlNetSummary = [this, controlNetSection] {
        controlNetSection->setSummary(m_controlNet->isChecked() ? tr("on") : tr("off"));
    };
    connect(m_controlNet, &QGroupBox::toggled, controlNetSection, [controlNetSection, controlNetSummary](bool on) {
        controlNetSummary();
        if (on) controlNetSection->setExpanded(true);
    });
    controlNetSummary();
    settingsLayout->addWidget(controlNetSection);
    settingsLayout->addStretch();
    auto* scroll = new QScrollArea(this);
    scroll->setObjectName("settingsScroll");
    scroll->setWidget(settingsWidget);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    new FollowContentWidth(scroll);
    auto* runBox = new QWidget(this);
    runBox->setObjectName("runBox");
    auto* run = new QVBoxLayout(runBox);
    run->setContentsMargins(9, 4, 9, 4);
    run->addLayout(buttons);
    run->addWidget(m_progress);
    run->addWidget(m_eta);
    run->addLayout(presetRow);
    auto* predicted = new QLabel(this);
    predicted->setObjectName("predictedPeak");
    run->addWidget(predicted);
    run->addWidget(m_gauge);
    run->addWidget(m_previewLabel);
    auto* leftColumn = new QWidget(this);
    auto* left = new QVBoxLayout(leftColumn);
    left->setContentsMargins(0, 0, 0, 0);
    left->setSpacing(0);
    left->addWidget(scroll, 1);
    left->addWidget(runBox);
    // The settings column spans the window's height; the library, the queue and this session's strip share one
    // tabbed area under the picture.
    auto* settingsDock = new QDockWidget(tr("Settings"), this);
    settingsDock->setObjectName("settingsDock");
    settingsDock->setWidget(leftColumn);
    settingsDock->setTitleBarWidget(new QWidget(settingsDock));
    settingsDock->setFeatures(QDockWidget::NoDockWidgetFeatures);
    setCorner(Qt::BottomLeftCorner, Qt::LeftDockWidgetArea);
    setCorner(Qt::TopLeftCorner, Qt::LeftDockWidgetArea);
    addDockWidget(Qt::LeftDockWidgetArea, settingsDock);
    QDockWidget* libraryDock = buildLibrary();
    setCentralWidget(buildCanvas());
    addDockWidget(Qt::BottomDockWidgetArea, libraryDock);
    auto* queueDock = new QDockWidget(tr("Queue"), this);
    queueDock->setObjectName("queueDock");
    m_queueView = new QueueView(this);
    queueDock->setWidget(m_queueView);
    queueDock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable);
    addDockWidget(Qt::BottomDockWidgetArea, queueDock);
    tabifyDockWidget(libraryDock, queueDock);
    libraryDock->raise();
    resizeDocks({libraryDock}, {230}, Qt::Vertical);
    statusBar()->addPermanentWidget(m_costLabel);
    connect(m_panel, &PromptPanel::notice, this, [this](const QString& message) { statusBar()->showMessage(message, 10000); });
    if (!m_plots->problem().isEmpty()) statusBar()->showMessage(m_plots->problem(), 15000);
    m_costLabel->setVisible(m_price.enabled);

    m_engine = new EngineThread(this);
    auto* worker = m_engine->worker();
    connect(m_run, &RunController::generateRequested, worker, &EngineWorker::generate, Qt::QueuedConnection);
    connect(m_run, &RunController::verifyRequested, worker, &EngineWorker::verify, Qt::QueuedConnection);
    connectUpscaling();
    connect(m_run, &RunController::cancelRequested, this, [worker] { worker->cancel(); });  // an atomic flag
    connect(m_run, &RunController::runStarted, this, &MainWindow::onRunStarted);
    connect(m_run, &RunController::resultReady, this, &MainWindow::showResult);
    connect(m_run, &RunController::saveRequested, this, &MainWindow::keepResult);
    connect(m_run, &RunController::runFailed, this, [this](const QString& message) {
        m_eta->setText(message);
        statusBar()->showMessage(message);
    });
    connect(m_run, &RunController::verified, this, &MainWindow::onVerified);
    connectLive();
    connect(m_run, &RunController::stateChanged, this, &MainWindow::updateButtons);
    connect(m_run, &RunController::finished, this, &MainWindow::runFinished);
    connect(m_run, &RunController::leftoversFound, this, [this](int n) {
        statusBar()->showMessage(tr("%n job(s) left from the last session wait in the queue: Run queue to run them, or "
                                    "remove them.", nullptr, n));
    });
    connect(m_run, &RunController::abFinished, this,
            [this](const api::GenerationResult& a, const api::GenerationResult& b, const QString& label) {
                showComparison(a, 0, b, 0);
                statusBar()->showMessage(tr("A/B done: %1").arg(label));
            });
    connect(this, &MainWindow::previewDecoderRequested, worker, &EngineWorker::setPreviewDecoder, Qt::QueuedConnection);
    connect(this, &MainWindow::locateRequested, worker, &EngineWorker::locateModel, Qt::QueuedConnection);
    connect(this, &MainWindow::memorySampleRequested, worker, &EngineWorker::sampleMemory, Qt::QueuedConnection);
    connect(worker, &EngineWorker::progress, this, &MainWindow::onProgress);
    connect(worker, &EngineWorker::finished, this, [this](const api::GenerationResult& result, const PreviewStats& stats) {
        m_lastPreviewStats = stats;
        m_run->onFinished(result);
    });
    connect(worker, &EngineWorker::failed, m_run, &RunController::onFailed);
    connect(worker, &EngineWorker::verified, m_run, &RunController::onVerified);
    connect(worker, &EngineWorker::memorySampled, m_gauge, &VramGauge::addSample);
    connect(worker, &EngineWorker::modelLoading, m_picker, &ModelPicker::setLoading);
    connect(worker, &EngineWorker::modelLoaded, m_picker, &ModelPicker::setLoaded);
    connect(worker, &EngineWorker::modelFailed, m_picker, &ModelPicker::setFailed);
    // A Generate pressed during a load waits for it.
    connect(worker, &EngineWorker::modelLoaded, this, [this] { updateButtons(); m_run->resume(); });
    connect(worker, &EngineWorker::modelFailed, this, [this] { updateButtons(); m_run->resume(); });
    connect(worker, &EngineWorker::modelLoading, this, &MainWindow::updateButtons);
    connect(worker, &EngineWorker::previewDecoderChanged, this, [this](const QString& description, const QString& problem) {
        m_previewSource = description;
        m_previewLabel->setText(tr("preview: %1").arg(description));
        m_previewLabel->setToolTip(problem);
        if (!problem.isEmpty()) statusBar()->showMessage(problem, 10000);
    });
    connect(worker, &EngineWorker::modelLocated, this, [this](const QString& path, const QString& how) {
        m_restoreNotice->setText(tr("Model found by %1: %2").arg(how, path.toHtmlEscaped()));
        m_restoreNotice->show();
        if (path != m_picker->currentModel()) {
            m_keepSizeForModel = path;
            m_picker->choose(path);
        }
    });
    connect(worker, &EngineWorker::modelNotFound, this, [this](const QString& message) {
        m_restoreNotice->setText(QStringLiteral("<span style='color:#b00'>%1</span>").arg(message.toHtmlEscaped()));
        m_restoreNotice->show();
        statusBar()->showMessage(message);
    });
    connect(this, &MainWindow::locateRefinerRequested, worker, &EngineWorker::locateRefiner, Qt::QueuedConnection);
    connect(worker, &EngineWorker::refinerLocated, m_panel, &PromptPanel::setRefinerPath);
    connect(worker, &EngineWorker::refinerNotFound, this, [this](const QString& message) { statusBar()->showMessage(message); });
    connect(worker, &EngineWorker::logLine, this, [this](const QString& line) { statusBar()->showMessage(line, 5000); });
    connect(m_picker, &ModelPicker::loadRequested, this, [this, worker](const QString& path) {
        updateButtons();
        worker->post([worker, path, plan = currentSettings().plan] { worker->loadModel(path, plan); });
    });
    connect(m_picker, &ModelPicker::cancelRequested, this, [worker] { worker->cancel(); });
    connect(m_picker, &ModelPicker::modelChanged, this, &MainWindow::onModelChanged);
    connect(m_generate, &QPushButton::clicked, this, &MainWindow::startGeneration);
    connect(m_cancel, &QPushButton::clicked, this, &MainWindow::cancel);
    connect(presetButton, &QPushButton::clicked, this, &MainWindow::openPresetDialog);
    connect(m_panel, &PromptPanel::shapeChanged, this, &MainWindow::updatePrediction);
    connect(m_panel->promptEdit(), &QPlainTextEdit::textChanged, this, &MainWindow::checkPastedParameters);
    connect(m_controlNet, &ControlNetPanel::changed, this, &MainWindow::updatePrediction);
    connect(m_imageInput, &ImageInputPanel::changed, this, &MainWindow::updatePrediction);
    connect(m_hires, &HiresPanel::changed, this, &MainWindow::updatePrediction);
    // The queue: requests to its thread, snapshots back.
    m_queue = std::make_unique<ServiceThread<QueueService>>("queue", queueFile());
    auto* service = m_queue->service();
    connect(m_run, &RunController::enqueueRequested, service, &QueueService::enqueue, Qt::QueuedConnection);
    connect(m_run, &RunController::jobStarted, service, &QueueService::start, Qt::QueuedConnection);
    connect(m_run, &RunController::jobDone, service, &QueueService::done, Qt::QueuedConnection);
    connect(m_run, &RunController::jobFailed, service, &QueueService::fail, Qt::QueuedConnection);
    connect(m_run, &RunController::jobCancelled, service, &QueueService::cancel, Qt::QueuedConnection);
    connect(m_run, &RunController::retryRequested, service, &QueueService::retry, Qt::QueuedConnection);
    connect(service, &QueueService::enqueued, m_run, &RunController::onEnqueued);
    connect(service, &QueueService::changed, m_queueView, &QueueView::setJobs);
    connect(service, &QueueService::changed, m_run, &RunController::onJobsChanged);
    connect(service, &QueueService::problem, this, [this](const QString& message) { statusBar()->showMessage(message, 10000); });
    connect(m_queueView, &QueueView::runRequested, m_run, &RunController::runQueue);
    connect(m_queueView, &QueueView::retryRequested, m_run, &RunController::retry);
    connect(m_queueView, &QueueView::removeRequested, service, &QueueService::remove, Qt::QueuedConnection);
    QMetaObject::invokeMethod(service, &QueueService::open, Qt::QueuedConnection);
    m_engine->start();  // every connection to the workers is made: now their threads
    m_queue->start();
    m_libraryThread->start();

    setAcceptDrops(true);
    for (auto key : {Qt::Key_Return, Qt::Key_Enter})
        connect(new QShortcut(QKeySequence(Qt::CTRL | key), this), &QShortcut::activated, this, &MainWindow::startGeneration);
    connect(new QShortcut(QKeySequence(Qt::Key_Escape), this), &QShortcut::activated, this, &MainWindow::cancel);

    // Between runs the gauge still moves (other programs, a model load): ask the worker for a sample each second.
    m_idleSampler = new QTimer(this);
    m_idleSampler->setInterval(1000);
    connect(m_idleSampler, &QTimer::timeout, this, [this] {
        if (!m_run->running() && !m_picker->loading()) emit memorySampleRequested();
    });
    m_idleSampler->start();

    buildMenus();
    restoreState();
    applyPreferences();
    api::GenerationSettings defaults = m_panel->settings();
    if (defaults.prompt.empty()) defaults.prompt = kFirstPrompt;
    m_panel->setSettings(defaults);
    QString startModel = model;
    if (startModel.isEmpty()) startModel = QSettings().value("lastModel").toString();
    m_picker->choose(startModel);
    updateButtons();
    updatePresetLabel();
    emit memorySampleRequested();
}

MainWindow::~MainWindow() {
    // The worker threads end first (each joins its thread, its worker deleted there), so the widgets torn down
    // next never share a moment with a live worker; children would otherwise go in creation order, widgets first.
    m_api.reset();  // first: its waiting requests are answered while the queue and the engine still run
    delete m_engine;
    m_queue.reset();
    m_libraryThread.reset();  // after the engine: a save the last run posted is written first
}

EngineWorker* MainWindow::worker() const { return m_engine->worker(); }

void MainWindow::buildMenus() {
    auto* file = menuBar()->addMenu(tr("&File"));
    file->addAction(tr("Open model &folder…"), m_picker, &ModelPicker::openFolder);
    file->addAction(tr("Open model &file…"), m_picker, &ModelPicker::openFile);
    file->addAction(tr("Open &settings from image…"), this, &MainWindow::openSettingsFile);
    file->addAction(tr("&Import images from a folder…"), this, &MainWindow::importFolder);
    file->addSeparator();
    file->addAction(tr("Save image &as…"), QKeySequence::Save, this, &MainWindow::saveImageAs);
    file->addAction(tr("Show in f&older"), this, &MainWindow::showInFolder);
    file->addSeparator();
    file->addAction(tr("&Preferences…"), this, &MainWindow::openPreferences);
    file->addSeparator();
    file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);
    auto* edit = menuBar()->addMenu(tr("&Edit"));
    edit->addAction(tr("&Undo restored settings"), QKeySequence::Undo, this, &MainWindow::undoRestore);
    edit->addSeparator();
    edit->addAction(tr("&Copy image"), QKeySequence::Copy, this, &MainWindow::copyImage);
    edit->addAction(tr("Copy &parameters"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C), this, &MainWindow::copyParameters);
    auto* run = menuBar()->addMenu(tr("&Generate"));
    run->addAction(tr("&Generate\tCtrl+Enter"), this, &MainWindow::startGeneration);
    run->addAction(tr("&Cancel\tEsc"), this, &MainWindow::cancel);
    run->addAction(tr("New &random seed"), QKeySequence(Qt::CTRL | Qt::Key_R), this, &MainWindow::newRandomSeed);
    run->addSeparator();
    run->addAction(tr("A/B &seeds"), this, &MainWindow::runAbSeeds);
    run->addAction(tr("A/B s&etting…"), this, &MainWindow::chooseAbSetting);
    run->addAction(tr("C&ompare selected"), this, &MainWindow::compareSelected);
    run->addAction(tr("&X/Y/Z plot…"), this, &MainWindow::openPlotDialog)->setObjectName("xyzPlot");
    run->addSeparator();
    run->addAction(tr("Memory &presets…"), this, &MainWindow::openPresetDialog);
    run->addSeparator();
    m_serveApi = run->addAction(tr("Serve A1111 &API"));
    m_serveApi->setObjectName("serveApi");
    m_serveApi->setCheckable(true);
    m_serveApi->setToolTip(tr("AUTOMATIC1111's web API on 127.0.0.1 for its clients (Krita, Photoshop, webuiapi "
                              "scripts): their jobs run in this queue and land in the library"));
    connect(m_serveApi, &QAction::toggled, this, &MainWindow::setServingApi);
    m_apiLabel = new QLabel(this);
    m_apiLabel->setObjectName("apiLabel");
    m_apiLabel->hide();
    statusBar()->addPermanentWidget(m_apiLabel);
    auto* view = menuBar()->addMenu(tr("&View"));
    for (const char* name : {"libraryDock", "queueDock"})
        if (auto* dock = findChild<QDockWidget*>(name)) view->addAction(dock->toggleViewAction());
    auto* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&Keyboard shortcuts"), this, &MainWindow::showShortcuts);
}

api::GenerationSettings MainWindow::currentSettings() const {
    api::GenerationSettings s = m_panel->settings();
    s.model = m_picker->currentModel().toStdString();
    s.controlnets = m_controlNet->controlnets();
    m_imageInput->apply(s);
    m_hires->apply(s);
    if (m_preset) {
        s.preset = m_preset->name;
        s.plan = m_preset->plan;
    } else {
        s.preset.clear();
    }
    if (s.plan.threads <= 0) s.plan.threads = m_prefs.threads;  // the plan's own count wins
    return s;
}

bool MainWindow::isRunning() const { return m_run->busy(); }
const QList<JobRow>& MainWindow::jobs() const { return m_run->jobs(); }

void MainWindow::onRunStarted(const api::GenerationSettings& s) {
    m_progress->setRange(0, s.steps);
    m_progress->setValue(0);
    m_eta->setText(m_run->runCount() > 1 ? tr("run %1 of %2: starting…").arg(m_run->runIndex()).arg(m_run->runCount())
                                         : tr("starting…"));
    m_firstStep = 0;
    m_gauge->beginRun();
}

void MainWindow::cancel() { m_run->cancel(); }

void MainWindow::onProgress(int step, int total, const QImage& preview) {
    m_progress->setRange(0, total);
    m_progress->setValue(step);
    // A Verify's rerun goes to the compare window: the canvas keeps the image being verified (and the bar its file).
    if (!m_run->verifying()) m_preview->showPreview(preview);
    // ETA from the steps seen so far (the first step's start is when its signal arrived).
    if (m_firstStep == 0) {
        m_firstStep = step;
        m_runClock.start();
    }
    QString text = tr("step %1/%2").arg(step).arg(total);
    if (step > m_firstStep) {
        const double perStep = double(m_runClock.elapsed()) / 1000.0 / (step - m_firstStep);
        text += tr(" · %1/step · about %2 left").arg(seconds(perStep), seconds(perStep * (total - step)));
    }
    if (m_run->runCount() > 1) text = tr("run %1 of %2: ").arg(m_run->runIndex()).arg(m_run->runCount()) + text;
    const int queued = m_run->queuedCount();
    if (!m_run->currentJob().isEmpty() && queued > 0) text += tr(" · %1 more queued").arg(queued);
    m_eta->setText(text);
}

void MainWindow::showResult(const api::GenerationResult& result, const QString& jobId) {
    const PreviewStats& stats = m_lastPreviewStats;
    std::vector<QImage> images;
    for (const auto& img : result.images) images.push_back(toQImage(img));
    showRunImages(result, images, jobId);
    for (const auto& [stage, peak] : {std::pair{"load", result.memory.load}, {"encode", result.memory.encode},
                                      {"denoise", result.memory.denoise}, {"decode", result.memory.decode}}) {
        api::MemorySample s;
        s.cuda = peak.device > 0;
        s.hostRss = s.hostPeak = peak.host;
        s.deviceAllocated = s.devicePeak = peak.device;
        if (peak.host > 0 || peak.device > 0) m_gauge->addSample(QString::fromLatin1(stage), s);
    }
    emit memorySampleRequested();  // the stage samples above carry no totals: show the live state again

    const auto& t = result.timings;
    double steps = 0;
    for (double s : t.stepSeconds) steps += s;
    const double total = runSeconds(result);
    const int n = std::max<int>(1, int(result.images.size()));
    const QString cost = formatUsd(m_price.costUsd(total) / n);
    m_costLabel->setText(tr("%1 per image (%2)").arg(cost, m_price.describe()));
    m_costLabel->setVisible(m_price.enabled);
    m_lastRunSettings = result.settings;
    if (!t.stepSeconds.empty())
        m_secondsPerStepPixel = steps / double(t.stepSeconds.size()) / (double(result.settings.width) * result.settings.height *
                                                                         std::max(1, result.settings.batchSize));
    updatePrediction();  // the next run with the same text skips the encoders
    const QString encode = result.textEncodeCached ? tr("cached") : seconds(t.encodeSeconds);
    QString message = tr("%1%2: load %3 · encode %4 · %5 steps %6 · decode %7")
                          .arg(jobId == kLiveJob ? tr("Live · ") : QString())
                          .arg(QString::fromStdString(result.modelName), seconds(t.loadSeconds), encode)
                          .arg(t.stepSeconds.size())
                          .arg(seconds(steps), seconds(t.decodeSeconds));
    if (m_price.enabled) message += tr(" · %1 per image").arg(cost);
    for (const auto& w : result.warnings) message += QStringLiteral(" · ⚠ ") + QString::fromStdString(w);
    statusBar()->showMessage(message);
    m_eta->setText(tr("done in %1 (previews: %2 of %3 steps, %4 % of step time)")
                       .arg(seconds(total))
                       .arg(stats.previews)
                       .arg(stats.steps)
                       .arg(100 * stats.costFraction(), 0, 'f', 1));
}

// Generate adds to the queue at any time; the queue starts a job once no model is loading (RunController).
void MainWindow::updateButtons() {
    m_generate->setText(isRunning() ? tr("Add to queue") : tr("Generate"));
    m_cancel->setEnabled(m_run->running());
}

void MainWindow::onModelChanged(const ModelInfo& info) {
    const bool demo = info.path == QLatin1String(pipeline::kDemoModel);
    const bool shapes = isEmbeddedModel(info.path.toStdString());
    m_panel->setModelFamily(info.family, demo || shapes);
    m_modelBanner->setVisible(demo || shapes);
    if (demo)
        m_modelBanner->setText(tr("<b>Demo mode:</b> a tiny random-weight model the app builds itself. It exercises the "
                                  "whole pipeline but makes noise, not pictures. Open a real model above."));
    if (shapes)
        m_modelBanner->setText(tr("<b>Built-in shapes model:</b> trained by DiffusionDesk itself, offline. It draws one "
                                  "circle, square, triangle or star in red, orange, yellow, green, blue or purple, at "
                                  "128 × 128 — switch on <b>Live</b> and type: the picture follows. Open a real model above "
                                  "for everything else."));
    // The size follows the model (SD 1.x 512, SDXL 1024, the shapes model 128) unless the artist chose another
    // one, or a restored image asked for this model with its own size.
    api::GenerationSettings s = m_panel->settings();
    const bool restoring = info.path == std::exchange(m_keepSizeForModel, QString());
    if (info.nativeSize > 0) {
        if (QSize(s.width, s.height) == m_modelSize && !restoring) s.width = s.height = info.nativeSize;
        m_modelSize = QSize(info.nativeSize, info.nativeSize);
    }
    if (shapes) {  // it knows one world: start it where it works rather than on a lighthouse
        if (s.cfgScale == api::GenerationSettings{}.cfgScale) s.cfgScale = kEmbeddedModel.cfgScale;
        if (s.prompt == kFirstPrompt) s.prompt = "a large red star on a blue background";
    }
    m_panel->setSettings(s);
    QSettings().setValue("lastModel", info.path);
    updatePrediction();
}

} // namespace dd::ui
