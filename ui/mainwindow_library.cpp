// MainWindow: keeping images (autosave through the library thread), the library panel, and what can be done
// with the image on the canvas or in the library (save as, copy, use its settings, seed or prompt, compare).
#include "ui/librarypanel.h"
#include "ui/hirespanel.h"
#include "ui/imageinputpanel.h"
#include "ui/libraryservice.h"
#include "ui/mainwindow.h"
#include "ui/previewview.h"
#include "ui/promptpanel.h"
#include "ui/runcontroller.h"

#include "core/settings/restore.h"
#include "imaging/export.h"
#include "imaging/png.h"

#include <QClipboard>
#include <QDesktopServices>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QGuiApplication>
#include <QMimeData>
#include <QSettings>
#include <QStatusBar>
#include <QUrl>

namespace dd::ui {

QDockWidget* MainWindow::buildLibrary() {
    m_library = new LibraryPanel(this);
    auto* dock = new QDockWidget(tr("Library"), this);
    dock->setObjectName("libraryDock");
    dock->setWidget(m_library);
    dock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable);

    // Its folders come with the preferences (applyPreferences).
    m_libraryThread = std::make_unique<ServiceThread<LibraryService>>("library", LibraryService::defaultIndexFile());
    auto* service = m_libraryThread->service();
    connect(service, &LibraryService::opened, this, [this](const QString& path, const QString& note) {
        m_library->open(path);
        if (!note.isEmpty()) statusBar()->showMessage(note, 15000);
    });
    connect(service, &LibraryService::changed, m_library, &LibraryPanel::refresh);
    connect(service, &LibraryService::problem, this, [this](const QString& message) { statusBar()->showMessage(message, 10000); });
    connect(service, &LibraryService::saved, m_run, &RunController::onSaved);
    connect(service, &LibraryService::saved, this, [this](const QString& jobId, const QStringList& files) {
        if (files.isEmpty()) return;
        if (jobId == m_shownJob && m_shownFiles.isEmpty()) {  // the run on the canvas: its images' files
            for (const QString& f : files)
                if (imaging::hasImageExtension(f.toStdString())) m_shownFiles << f;
            updateImageActions();
        }
        // Added to the run's times, which stay in the status bar.
        const QString current = statusBar()->currentMessage();
        statusBar()->showMessage((current.isEmpty() ? QString() : current + QStringLiteral(" · ")) +
                                 tr("saved %1").arg(QFileInfo(files.front()).fileName()));
        emit imagesSaved(files);
    });
    connect(service, &LibraryService::saved, this, &MainWindow::plotCellSaved);  // after the cell's own announcement
    connect(m_library, &LibraryPanel::showRequested, this, &MainWindow::showLibraryImage);
    connect(m_library, &LibraryPanel::restoreRequested, this, &MainWindow::restoreFromFile);
    connect(m_library, &LibraryPanel::useSeedRequested, this, [this](const QString& path) { useFromFile(path, false); });
    connect(m_library, &LibraryPanel::usePromptRequested, this, [this](const QString& path) { useFromFile(path, true); });
    connect(m_library, &LibraryPanel::sendToImg2ImgRequested, this, &MainWindow::sendToImg2Img);
    connect(m_library, &LibraryPanel::compareRequested, this, &MainWindow::compareFiles);
    connect(m_library, &LibraryPanel::compareWithRequested, this, &MainWindow::compareWith);
    connect(m_library, &LibraryPanel::verifyRequested, this, &MainWindow::verifyFile);
    connect(m_library, &LibraryPanel::trashRequested, service, &LibraryService::trash, Qt::QueuedConnection);
    connect(m_library, &LibraryPanel::favouriteRequested, service, &LibraryService::setFavourite, Qt::QueuedConnection);
    connect(m_library, &LibraryPanel::ratingRequested, service, &LibraryService::setRating, Qt::QueuedConnection);
    connect(service, &LibraryService::imported, this, [this](const QString& folder, int added, int problems) {
        statusBar()->showMessage(problems ? tr("Imported %n image(s) from %1; %2 could not be read (listed before)", nullptr, added)
                                                .arg(folder).arg(problems)
                                          : tr("Imported %n image(s) from %1", nullptr, added).arg(folder),
                                 15000);
    });
    QMetaObject::invokeMethod(service, &LibraryService::open, Qt::QueuedConnection);
    return dock;
}

// Every finished image goes to today's folder with its metadata and sidecar (autosave on: RunController asks);
// the queue's job is done when the files are on disk (its journal then lists them).
void MainWindow::keepResult(const QString& jobId, const api::GenerationResult& result, double wallSeconds) {
    SaveOptions o;
    o.folder = m_prefs.todaysFolder();
    o.nameTemplate = m_prefs.nameTemplate;
    o.format = m_prefs.format;
    o.quality = m_prefs.quality;
    o.wallSeconds = wallSeconds;
    o.pricePerHour = m_price.costUsd(3600.0);
    QMetaObject::invokeMethod(m_libraryThread->service(), "save", Qt::QueuedConnection, Q_ARG(QString, jobId),
                              Q_ARG(dd::api::GenerationResult, result), Q_ARG(dd::ui::SaveOptions, o));
}

void MainWindow::useFromFile(const QString& path, bool promptOnly) {
    try {
        const auto r = settings::restoreFromFile(path.toStdString());
        api::GenerationSettings s = m_panel->settings();
        m_imageInput->apply(s);
        m_hires->apply(s);
        if (promptOnly) {
            s.prompt = r.settings.prompt;
            s.negativePrompt = r.settings.negativePrompt;
        } else {
            s.seed = r.settings.seed;
            m_panel->setRandomSeed(false);
        }
        applyRestoredSettings(s);
        statusBar()->showMessage(promptOnly ? tr("Prompt from %1").arg(QFileInfo(path).fileName())
                                            : tr("Seed %1 from %2").arg(s.seed).arg(QFileInfo(path).fileName()), 5000);
    } catch (const std::exception& e) {
        statusBar()->showMessage(QString::fromStdString(e.what()), 8000);
    }
}

void MainWindow::sendToImg2Img(const QString& path) {
    if (path.isEmpty()) return;
    m_imageInput->useImage(path);
    statusBar()->showMessage(tr("%1 is the next run's starting image: set the strength, or add a mask to repaint part of it")
                                 .arg(QFileInfo(path).fileName()), 8000);
}

// Two saved images, from any day or model, in the compare view (settings diff, PSNR / SSIM, heatmap).
void MainWindow::compareFiles(const QString& pathA, const QString& pathB) {
    auto load = [](const QString& path) {
        api::GenerationResult r;
        r.images.push_back(imaging::readImage(path.toStdString()));
        try {
            const auto restored = settings::restoreFromFile(path.toStdString());
            r.settings = restored.settings;
            r.modelName = restored.modelName;
        } catch (const std::exception&) {
            // an image without settings compares by its pixels alone
        }
        return r;
    };
    try {
        showComparison(load(pathA), 0, load(pathB), 0);
    } catch (const std::exception& e) {
        statusBar()->showMessage(QString::fromStdString(e.what()), 8000);
    }
}

void MainWindow::saveImageAs() {
    const QString shown = shownImageFile();
    if (shown.isEmpty() || !QFile::exists(shown)) {
        statusBar()->showMessage(tr("Nothing saved to copy from yet: generate an image or pick one in the library."), 5000);
        return;
    }
    QSettings q;
    const QString start = QDir(q.value("saving/lastSaveAsFolder", QDir::homePath()).toString())
                              .filePath(QFileInfo(shown).fileName());
    const QString target = QFileDialog::getSaveFileName(this, tr("Save image as"), start, tr("Images (*.png *.jpg *.webp)"));
    if (target.isEmpty()) return;
    q.setValue("saving/lastSaveAsFolder", QFileInfo(target).absolutePath());
    try {
        // Re-encoded from the saved file's pixels and settings: the copy carries the same metadata and sidecar.
        const auto restored = settings::restoreFromFile(shown.toStdString());
        settings::Sidecar sc = restored.sidecar ? *restored.sidecar : settings::Sidecar{};
        if (!restored.sidecar) {
            sc.settings = restored.settings;
            sc.modelName = restored.modelName;
            sc.modelHash = restored.modelHash;
        }
        const auto format = imaging::exportFormatFromName(QFileInfo(target).suffix().toLower().toStdString());
        imaging::exportImageAs(target.toStdString(), format, m_prefs.quality, imaging::readImage(shown.toStdString()),
                               sc, sc.modelName, true);
        statusBar()->showMessage(tr("Saved %1").arg(target), 5000);
    } catch (const std::exception& e) {
        statusBar()->showMessage(tr("Save as %1: %2").arg(target, QString::fromStdString(e.what())), 10000);
    }
}

// The picture for programs that paste pixels, the saved PNG (with its metadata) for those that paste files.
void MainWindow::copyImage() {
    const QImage image = m_preview->image();
    if (image.isNull() || !m_preview->isFinal()) return;
    auto* mime = new QMimeData;
    mime->setImageData(image);
    if (const QString shown = shownImageFile(); !shown.isEmpty()) {
        mime->setUrls({QUrl::fromLocalFile(shown)});
        QFile f(shown);
        if (shown.endsWith(QLatin1String(".png"), Qt::CaseInsensitive) && f.open(QIODevice::ReadOnly))
            mime->setData(QStringLiteral("image/png"), f.readAll());
    }
    QGuiApplication::clipboard()->setMimeData(mime);
    statusBar()->showMessage(tr("Image copied"), 3000);
}

void MainWindow::copyParameters() {
    const QString text = parametersOfFile(shownImageFile());
    if (text.isEmpty()) return;
    QGuiApplication::clipboard()->setText(text);
    statusBar()->showMessage(tr("Parameters copied"), 3000);
}

void MainWindow::showInFolder() {
    const QString shown = shownImageFile();
    if (shown.isEmpty()) return;
    QDesktopServices::openUrl(QUrl::fromLocalFile(QFileInfo(shown).absolutePath()));
}

} // namespace dd::ui
