// MainWindow: Upscale on the image on the canvas or in the library. An upscaler network of the upscaler folders
// (Preferences) or DD_UPSCALER_PATH (or a file the artist picks) runs on the engine thread, after any run in
// progress; the bigger copy is saved beside the image with its generation parameters and A1111's "extras" record,
// joins the library and is shown.
#include "ui/dialoghooks.h"
#include "ui/engineworker.h"
#include "ui/librarypanel.h"
#include "ui/libraryservice.h"
#include "ui/mainwindow.h"
#include "ui/previewview.h"
#include "ui/stringlists.h"

#include "core/pipeline/model_search.h"

#include <QCursor>
#include <QFileInfo>
#include <QImage>
#include <QMenu>
#include <QStatusBar>

namespace dd::ui {

void MainWindow::connectUpscaling() {
    auto* worker = m_engine->worker();
    connect(this, &MainWindow::upscaleRequested, worker, &EngineWorker::upscaleFile, Qt::QueuedConnection);
    connect(worker, &EngineWorker::upscaleProgress, this, [this](int done, int total) {
        statusBar()->showMessage(tr("Upscaling: tile %1 of %2 (Cancel stops it)").arg(done).arg(total));
    });
    // A queued signal, not a posted lambda: ThreadSanitizer sees Qt's ordering of a queued call's arguments.
    connect(this, &MainWindow::libraryScanRequested, m_libraryThread->service(), &LibraryService::scan, Qt::QueuedConnection);
    connect(worker, &EngineWorker::upscaled, this, [this](const QString&, const QString& written, const QString& summary) {
        emit libraryScanRequested(QFileInfo(written).absolutePath());
        m_shownFiles = {written};
        m_shownJob = QStringLiteral("library");
        m_preview->showFinal(QImage(written), QFileInfo(written).fileName());
        updateImageActions();
        statusBar()->showMessage(tr("Upscaled %1: saved %2").arg(summary, QFileInfo(written).fileName()), 15000);
        emit upscaleDone(written);
    });
    connect(worker, &EngineWorker::upscaleFailed, this, [this](const QString& source, const QString& message) {
        statusBar()->showMessage(tr("Upscaling %1 failed: %2").arg(QFileInfo(source).fileName(), message), 20000);
        emit upscaleDone(QString());
    });
    connect(m_library, &LibraryPanel::upscaleRequested, this, [this](const QString& path) {
        QMenu menu(this);
        fillUpscaleMenu(&menu, [path] { return path; });
        menu.exec(QCursor::pos());
    });
}

// One entry per network found (named by its file's stem, as A1111's infotext names it), then any file.
void MainWindow::fillUpscaleMenu(QMenu* menu, const std::function<QString()>& path) {
    menu->clear();
    auto ask = [this, path](const QString& upscaler) {
        const QString image = path();
        if (image.isEmpty()) return;
        statusBar()->showMessage(tr("Upscaling %1 with %2…").arg(QFileInfo(image).fileName(), QFileInfo(upscaler).completeBaseName()));
        emit upscaleRequested(image, upscaler);
    };
    for (const auto& file : pipeline::upscalerFiles(toStdStrings(m_prefs.upscalerFolders))) {
        const QString f = QString::fromStdString(file);
        menu->addAction(QFileInfo(f).completeBaseName(), this, [ask, f] { ask(f); })->setToolTip(f);
    }
    if (menu->isEmpty()) menu->addAction(tr("No upscaler in the upscaler folders (Preferences) or DD_UPSCALER_PATH"))->setEnabled(false);
    menu->addSeparator();
    menu->addAction(tr("Upscaler file…"), this, [this, ask] {
        const QString f = chooseOpenPath(this, tr("Upscaler network (ESRGAN, Real-ESRGAN, SwinIR)"),
                                         tr("Upscalers (*.safetensors)"), false, QStringLiteral("upscalers"));
        if (!f.isEmpty()) ask(f);
    });
}

} // namespace dd::ui
