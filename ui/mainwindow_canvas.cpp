// MainWindow: the canvas (a finished run, a batch as a grid, or a library image; zoom and pan) and its bar of
// what can be done with the image it shows: use its settings, seed or prompt, compare it, verify it, find it,
// delete it.
#include "ui/dialoghooks.h"
#include "ui/librarypanel.h"
#include "ui/libraryservice.h"
#include "ui/mainwindow.h"
#include "ui/previewview.h"
#include "ui/runcontroller.h"

#include <QAction>
#include <QFileInfo>
#include <QLabel>
#include <QMenu>
#include <QToolBar>
#include <QToolButton>
#include <QStatusBar>
#include <QVBoxLayout>

namespace dd::ui {
namespace {

QString captionFor(qint64 seed, const QString& prompt) {
    return seed >= 0 ? QObject::tr("seed %1 · %2").arg(seed).arg(prompt) : prompt;
}

} // namespace

QWidget* MainWindow::buildCanvas() {
    auto* canvas = new QWidget(this);
    canvas->setObjectName("canvas");
    // A tool bar: what does not fit a narrow window goes behind its » button, so the window keeps its width.
    auto* bar = new QToolBar(canvas);
    bar->setObjectName("canvasBar");
    bar->setFloatable(false);
    bar->setMovable(false);
    bar->setToolButtonStyle(Qt::ToolButtonTextOnly);
    auto add = [&](const char* name, const QString& text, const QString& tip, auto slot, bool needsFile) {
        QAction* a = bar->addAction(text, this, slot);
        a->setObjectName(name);
        a->setToolTip(tip.isEmpty() ? text : tip);
        if (needsFile) m_imageActions << a;
        return a;
    };
    add("canvasFit", tr("Fit"), tr("The whole image in the window (F)"), [this] { m_preview->fitToView(); }, false);
    add("canvasActualSize", tr("100%"), tr("One image pixel per screen pixel (1); the wheel zooms, a drag pans"),
        [this] { m_preview->setZoom(1.0); }, false);
    m_zoomLabel = new QLabel(canvas);
    m_zoomLabel->setObjectName("canvasZoom");
    m_zoomLabel->setMinimumWidth(fontMetrics().horizontalAdvance(QStringLiteral("6400 %")));
    bar->addWidget(m_zoomLabel);
    m_gridAction = add("canvasGrid", tr("Grid"), tr("Every image of the batch (G)"), [this] { m_preview->setCurrentIndex(-1); }, false);
    auto* gap = new QWidget(bar);
    gap->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
    bar->addWidget(gap);
    auto shown = [this] { return shownImageFile(); };
    m_keepLive = add("canvasKeep", tr("Keep"), tr("Save this live picture to the library, with its settings"),
                     [this] { if (m_run->keepLive()) updateImageActions(); }, false);
    m_keepLive->setVisible(false);  // while a live picture not kept yet is shown
    add("canvasUseSettings", tr("Use settings"), tr("Every setting of this image into the panel (Ctrl+Z undoes it)"),
        [this, shown] { restoreFromFile(shown()); }, true);
    add("canvasUseSeed", tr("Use seed"), tr("Only this image's seed into the panel"), [this, shown] { useFromFile(shown(), false); }, true);
    add("canvasUsePrompt", tr("Use prompt"), tr("Only this image's prompt and negative prompt"),
        [this, shown] { useFromFile(shown(), true); }, true);
    add("canvasSendToImg2Img", tr("Send to img2img"), tr("Start the next run from this image; add a mask to inpaint"),
        [this, shown] { sendToImg2Img(shown()); }, true);
    m_paintMask = add("canvasPaintMask", tr("Paint mask"), tr("Paint where this image should be repainted (inpainting)"), [] {}, true);
    m_paintMask->setCheckable(true);
    connect(m_paintMask, &QAction::toggled, this, &MainWindow::setPaintingMask);
    m_extendCanvas = add("canvasExtend", tr("Extend"), tr("Drag the picture's edges outwards to add pixels (outpainting)"), [] {}, true);
    m_extendCanvas->setCheckable(true);
    connect(m_extendCanvas, &QAction::toggled, this, &MainWindow::setExtendingCanvas);
    add("canvasVariations", tr("Variations…"), tr("Neighbours of this image: its seed's noise blended towards new seeds"),
        [this, shown] { makeVariations(shown()); }, true);
    QAction* upscale = add("canvasUpscale", tr("Upscale"), tr("A bigger copy through an upscaler network, saved beside this image"),
                           [] {}, true);
    auto* upscaleMenu = new QMenu(canvas);
    upscaleMenu->setObjectName("canvasUpscaleMenu");
    connect(upscaleMenu, &QMenu::aboutToShow, this, [this, upscaleMenu, shown] { fillUpscaleMenu(upscaleMenu, shown); });
    fillUpscaleMenu(upscaleMenu, shown);
    upscale->setMenu(upscaleMenu);
    if (auto* button = qobject_cast<QToolButton*>(bar->widgetForAction(upscale))) button->setPopupMode(QToolButton::InstantPopup);
    add("canvasCompare", tr("Compare with…"), tr("This image beside any other: settings, PSNR / SSIM, heatmap"),
        [this, shown] { compareWith(shown()); }, true);
    add("canvasVerify", tr("Verify"), tr("Rerun this image's settings and compare the pixels, hash for hash"),
        [this, shown] { verifyFile(shown()); }, true);
    add("canvasShowInFolder", tr("Show in folder"), QString(), [this] { showInFolder(); }, true);
    add("canvasCopyParameters", tr("Copy parameters"), tr("The A1111 text (Ctrl+Shift+C)"), [this] { copyParameters(); }, true);
    add("canvasDelete", tr("Delete"), tr("Move the image and its sidecar to the trash"), [this] { deleteShownImage(); }, true);
    for (QToolButton* b : bar->findChildren<QToolButton*>()) b->setFocusPolicy(Qt::NoFocus);  // arrows stay with the canvas

    auto* layout = new QVBoxLayout(canvas);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    layout->addWidget(bar);
    m_maskBar = buildMaskBar(canvas);
    layout->addWidget(m_maskBar);
    layout->addWidget(m_preview, 1);
    connect(m_preview, &PreviewView::zoomChanged, this, &MainWindow::updateImageActions);
    connect(m_preview, &PreviewView::currentChanged, this, &MainWindow::updateImageActions);
    connect(m_preview, &PreviewView::stepRequested, m_library, &LibraryPanel::step);
    updateImageActions();
    return canvas;
}

QString MainWindow::shownImageFile() const { return m_shownFiles.value(std::max(0, m_preview->currentIndex())); }

void MainWindow::updateImageActions() {
    const bool saved = !shownImageFile().isEmpty();
    for (QAction* a : m_imageActions) a->setEnabled(saved);
    m_keepLive->setVisible(m_shownJob == kLiveJob && m_run->canKeepLive());
    // The mask belongs to one image: another one on the canvas ends the painting.
    if (m_paintMask->isChecked() && (shownImageFile() != m_maskFor || m_preview->currentIndex() < 0)) m_paintMask->setChecked(false);
    if (m_extendCanvas->isChecked() && (shownImageFile() != m_imageInput->initImage() || m_preview->currentIndex() < 0))
        m_extendCanvas->setChecked(false);
    m_gridAction->setVisible(m_preview->isFinal() && m_preview->imageCount() > 1);
    m_gridAction->setEnabled(m_preview->currentIndex() >= 0);
    m_zoomLabel->setText(m_preview->isFinal() && !m_preview->showsGrid() && m_preview->imageCount() > 0
                             ? QStringLiteral("%1 %").arg(qRound(m_preview->zoom() * 100))
                             : QString());
}

// A finished run: its images on the canvas (a batch as a grid), each captioned with its own seed. Their files
// follow when the library thread has saved them (LibraryService::saved).
void MainWindow::showRunImages(const api::GenerationResult& result, const std::vector<QImage>& images, const QString& jobId) {
    QList<QImage> shown(images.begin(), images.end());
    QStringList captions;
    for (size_t i = 0; i < images.size(); ++i)
        captions << captionFor(api::imageSeeds(result.settings, int64_t(i)).seed, QString::fromStdString(result.settings.prompt));
    m_shownFiles.clear();
    m_shownJob = jobId;
    if (!shown.isEmpty()) m_preview->showBatch(shown, captions);
    updateImageActions();
}

void MainWindow::showLibraryImage(const LibraryItem& item) {
    const QImage image(item.path);
    if (image.isNull()) {
        statusBar()->showMessage(tr("%1 cannot be read (moved or deleted?)").arg(item.path), 8000);
        return;
    }
    m_shownFiles = {item.path};
    m_shownJob = QStringLiteral("library");  // no run's files replace it
    m_preview->showFinal(image, captionFor(item.seed, item.prompt));
    updateImageActions();
}

void MainWindow::compareWith(const QString& path) {
    if (path.isEmpty()) return;
    const QString other = chooseOpenPath(this, tr("Compare %1 with").arg(QFileInfo(path).fileName()),
                                         tr("Images (*.png *.jpg *.jpeg *.webp)"), false, QStringLiteral("images"));
    if (!other.isEmpty()) compareFiles(path, other);
}

void MainWindow::verifyFile(const QString& path) {
    if (path.isEmpty()) return;
    QStringList folders = knownModelFolders();
    folders << QFileInfo(path).absolutePath();
    if (!m_run->verify(path, folders)) {
        statusBar()->showMessage(tr("Verify runs when the generation in progress is done."), 5000);
        return;
    }
    m_eta->setText(tr("verifying %1: its settings again…").arg(QFileInfo(path).fileName()));
}

void MainWindow::onVerified(const VerifyOutcome& outcome) {
    m_lastVerify = outcome;
    const QString name = QFileInfo(outcome.file).fileName();
    QString verdict;
    if (!outcome.error.isEmpty()) verdict = tr("Verify %1: %2").arg(name, outcome.error);
    else if (outcome.identical) verdict = tr("Verified %1: the rerun is identical, pixel for pixel.").arg(name);
    else verdict = tr("Verify %1: the rerun differs (details in the compare window).").arg(name);
    m_eta->setText(verdict);
    statusBar()->showMessage(verdict);
    if (outcome.error.isEmpty() && !outcome.recorded.images.empty()) {
        showComparison(outcome.recorded, 0, outcome.rerun, 0);
        m_compareWindow->setWindowTitle(tr("Verify %1 — %2").arg(name, outcome.identical ? tr("identical") : tr("differs")));
        m_compareWindow->setToolTip(outcome.report);
    }
    // Another tool's image: the report, field by field, where the settings are.
    if (outcome.error.isEmpty() && outcome.report.startsWith(QLatin1String("made with:"))) {
        m_restoreNotice->setText(QStringLiteral("<pre style='white-space: pre-wrap'>%1</pre>").arg(outcome.report.toHtmlEscaped()));
        m_restoreNotice->show();
    }
}

void MainWindow::deleteShownImage() {
    const QString file = shownImageFile();
    if (file.isEmpty()) return;
    QMetaObject::invokeMethod(m_libraryThread->service(), "trashFiles", Qt::QueuedConnection, Q_ARG(QStringList, {file}));
    m_shownFiles.clear();
    m_preview->setPlaceholder(tr("%1 is in the trash").arg(QFileInfo(file).fileName()));
    m_preview->showBatch({}, {});
    updateImageActions();
}

void MainWindow::importFolder() {
    const QString folder = chooseOpenPath(this, tr("Import the images of a folder"), {}, true, QStringLiteral("imports"));
    if (folder.isEmpty()) return;
    statusBar()->showMessage(tr("Importing %1…").arg(folder));
    QMetaObject::invokeMethod(m_libraryThread->service(), "import", Qt::QueuedConnection, Q_ARG(QString, folder));
}

} // namespace dd::ui
