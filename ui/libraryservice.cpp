#include "ui/libraryservice.h"

#include "core/library/library.h"
#include "core/library/scan.h"
#include "core/settings/sidecar.h"
#include "imaging/export.h"
#include "imaging/thumbnail.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QFileSystemWatcher>
#include <QStandardPaths>
#include <QTimer>

#include <algorithm>
#include <utility>

namespace dd::ui {

LibraryService::LibraryService(const QString& dbPath) : m_path(dbPath) {
    qRegisterMetaType<dd::ui::SaveOptions>();
    qRegisterMetaType<QList<qint64>>();
}
LibraryService::~LibraryService() = default;

// The file library::defaultIndexPath() names for the CLI, found through Qt so that its test mode applies.
QString LibraryService::defaultIndexFile() {
    return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + QStringLiteral("/library.db");
}

void LibraryService::open() {
    try {
        QDir().mkpath(QFileInfo(m_path).absolutePath());
        m_library = std::make_unique<library::Library>(m_path.toStdString());
    } catch (const std::exception& e) {
        emit problem(tr("The image library cannot be opened: %1").arg(QString::fromStdString(e.what())));
        return;
    }
    const QString note = QString::fromStdString(m_library->note());
    emit opened(m_path, note);
    scanAll();  // the folders are the truth: files added, changed or deleted while the app was closed
    watch();
}

void LibraryService::scanAll() {
    for (const QString& folder : std::as_const(m_folders)) scan(folder);
}

void LibraryService::setFolders(const QStringList& folders, const QStringList& watched) {
    const QStringList before = m_folders;
    m_folders = folders + watched;
    m_watched = watched;
    if (!m_library) return;  // open() scans them all
    for (const QString& folder : std::as_const(m_folders))
        if (!before.contains(folder)) scan(folder);
    watch();
}

// A watched folder's changes come in bursts (a copy of many files): one scan a second after the last.
void LibraryService::watch() {
    if (!m_watcher) {
        if (m_watched.isEmpty()) return;
        m_watcher = new QFileSystemWatcher(this);
        m_watchDelay = new QTimer(this);
        m_watchDelay->setSingleShot(true);
        m_watchDelay->setInterval(1000);
        connect(m_watcher, &QFileSystemWatcher::directoryChanged, this, [this](const QString& folder) {
            if (!m_changedFolders.contains(folder)) m_changedFolders << folder;
            m_watchDelay->start();
        });
        connect(m_watchDelay, &QTimer::timeout, this, [this] {
            const QStringList folders = std::exchange(m_changedFolders, {});
            for (const QString& folder : folders) scan(folder);
        });
    }
    if (!m_watcher->directories().isEmpty()) m_watcher->removePaths(m_watcher->directories());
    for (const QString& folder : std::as_const(m_watched))
        if (QFileInfo(folder).isDir()) m_watcher->addPath(folder);
}

library::ScanReport LibraryService::scanned(const QString& folder) {
    library::ScanReport report;
    if (!m_library) return report;
    try {
        report = library::scanFolder(*m_library, folder.toStdString(),
                                     [](const std::string& path) { return imaging::thumbnailOfFile(path); });
        for (const auto& p : report.problems) emit problem(QString::fromStdString(p));
        if (report.added + report.updated + report.removed > 0) emit changed();
    } catch (const std::exception& e) {
        report.problems.push_back(e.what());
        emit problem(tr("Library scan of %1: %2").arg(folder, QString::fromStdString(e.what())));
    }
    return report;
}

void LibraryService::scan(const QString& folder) { scanned(folder); }

void LibraryService::import(const QString& folder) {
    const auto report = scanned(folder);
    emit imported(folder, report.added, int(report.problems.size()));
}

// Many images at once (a selection): one commit, one refresh of the panel.
template <class Change>
void LibraryService::changeEach(const QList<qint64>& ids, const QString& what, Change change) {
    if (!m_library) return;
    try {
        library::Library::Transaction batch(*m_library);
        for (qint64 id : ids) change(id);
        batch.commit();
        emit changed();
    } catch (const std::exception& e) {
        emit problem(tr("%1: %2").arg(what, QString::fromStdString(e.what())));
    }
}

void LibraryService::setFavourite(const QList<qint64>& ids, bool favourite) {
    changeEach(ids, tr("Favourite"), [&](qint64 id) { m_library->setFavourite(id, favourite); });
}

void LibraryService::setRating(const QList<qint64>& ids, int rating) {
    changeEach(ids, tr("Rating"), [&](qint64 id) { m_library->setRating(id, std::clamp(rating, 0, 5)); });
}

void LibraryService::save(const QString& jobId, const api::GenerationResult& result, const SaveOptions& o) {
    QStringList files;
    try {
        QDir().mkpath(o.folder);
        imaging::ExportRequest req;
        req.folder = o.folder.toStdString();
        req.nameTemplate = o.nameTemplate.toStdString();
        req.format = imaging::exportFormatFromName(o.format.toStdString());
        req.quality = o.quality;
        for (size_t i = 0; i < result.images.size(); ++i) {
            const auto sc = imaging::sidecarFor(result, int(i), o.wallSeconds, o.pricePerHour, DD_VERSION);
            const auto f = imaging::exportImage(req, result.images[i], sc, result.modelName);
            files << QString::fromStdString(f.image);
            if (!f.sidecar.empty()) files << QString::fromStdString(f.sidecar);
            if (!m_library) continue;
            // The file is saved whatever happens to the index: a failed index write is rebuilt by the next scan.
            try {
                library::indexFile(*m_library, f.image,
                                   [&](const std::string&) { return imaging::thumbnailOf(result.images[i]); });
            } catch (const std::exception& e) {
                emit problem(tr("Saved %1, but the library index did not take it: %2")
                                 .arg(QString::fromStdString(f.image), QString::fromStdString(e.what())));
            }
        }
    } catch (const std::exception& e) {
        emit problem(tr("Saving the image failed: %1").arg(QString::fromStdString(e.what())));
    }
    emit saved(jobId, files);
    if (!files.isEmpty()) emit changed();
}

// The image first: when it cannot go, its sidecar and its index entry stay too. False (and a problem) then.
bool LibraryService::moveToTrash(const QString& image, const QString& sidecar) {
    if (QFile::exists(image) && !QFile::moveToTrash(image)) {
        emit problem(tr("%1 could not be moved to the trash").arg(image));
        return false;
    }
    if (!sidecar.isEmpty() && QFile::exists(sidecar)) QFile::moveToTrash(sidecar);
    return true;
}

void LibraryService::trash(const QList<qint64>& ids) {
    if (!m_library) return;
    int removed = 0;
    for (qint64 id : ids) {
        try {
            const auto e = m_library->byId(id);
            if (!e || !moveToTrash(QString::fromStdString(e->path), QString::fromStdString(e->sidecarPath))) continue;
            removed += m_library->remove(id);
        } catch (const std::exception& e) {
            emit problem(tr("Delete: %1").arg(QString::fromStdString(e.what())));
        }
    }
    if (removed) emit changed();
}

// Files the index has go through trash(); others (saved while the index could not take them) go alone.
void LibraryService::trashFiles(const QStringList& imagePaths) {
    QList<qint64> ids;
    for (const QString& path : imagePaths) {
        std::optional<library::Entry> e;
        try {
            if (m_library) e = m_library->byPath(library::indexedPath(path.toStdString()));
        } catch (const std::exception&) {
        }
        if (e) ids << e->id;
        else moveToTrash(path, QString::fromStdString(settings::sidecarPathFor(path.toStdString())));
    }
    trash(ids);
}

} // namespace dd::ui
