#pragma once
// The window's image library on a thread of its own (ServiceThread), as the queue's journal (QueueService): saving a finished
// image (the CLI's export: atomic, never overwriting, metadata and sidecar) and indexing it, scanning the output
// folder on start, importing folders, deleting to the trash. Disk and index writes never stall the UI thread.
// The index (core/library) is opened here first, checked and rebuilt when damaged; `opened` then tells the
// window it may open its own reading connection (LibraryModel).
#include "core/api/generation_result.h"

#include <QList>
#include <QMetaType>
#include <QObject>
#include <QString>
#include <QStringList>

#include <memory>

class QFileSystemWatcher;
class QTimer;

namespace dd::library {
class Library;
struct ScanReport;
}

namespace dd::ui {

// How and where a finished run's images are saved (AppPreferences' saving part, resolved to today's folder).
struct SaveOptions {
    QString folder;
    QString nameTemplate;
    QString format = QStringLiteral("png");
    int quality = 95;
    double wallSeconds = 0;    // the run's, for the sidecar's cost and timings
    double pricePerHour = 0;
};

// Its folders (setFolders: the output folder, the watched folders) are scanned once the index is open and again
// when they change; the watched ones are also watched while the app runs (images another program drops there
// join the library a moment later).
class LibraryService : public QObject {
    Q_OBJECT
public:
    explicit LibraryService(const QString& dbPath);
    ~LibraryService() override;
    static QString defaultIndexFile();  // library.db in the app's data folder

public slots:
    void open();
    // Saves every image of the run (jobId: the queue's job, "" for none), indexes them, then `saved`.
    void save(const QString& jobId, const dd::api::GenerationResult& result, const dd::ui::SaveOptions& options);
    void scan(const QString& folder);
    // The folders to keep indexed (at start, and when Preferences change them): the new ones are scanned (now, or
    // by open()), the watch follows.
    void setFolders(const QStringList& folders, const QStringList& watched);
    // An import: a scan of a folder once, then `imported` with how many images it added.
    void import(const QString& folder);
    void trash(const QList<qint64>& ids);
    void trashFiles(const QStringList& imagePaths);  // indexed or not
    void setFavourite(const QList<qint64>& ids, bool favourite);
    void setRating(const QList<qint64>& ids, int rating);

signals:
    void opened(const QString& dbPath, const QString& note);  // note: "" unless the index was rebuilt
    void saved(const QString& jobId, const QStringList& files);
    void changed();  // the index has new, changed or removed entries
    void problem(const QString& message);
    void imported(const QString& folder, int added, int problems);

private:
    void scanAll();
    void watch();
    library::ScanReport scanned(const QString& folder);
    bool moveToTrash(const QString& image, const QString& sidecar);
    template <class Change>
    void changeEach(const QList<qint64>& ids, const QString& what, Change change);

    QString m_path;
    QStringList m_folders, m_watched;
    QFileSystemWatcher* m_watcher = nullptr;
    QTimer* m_watchDelay = nullptr;
    QStringList m_changedFolders;
    std::unique_ptr<library::Library> m_library;
};

} // namespace dd::ui

Q_DECLARE_METATYPE(dd::ui::SaveOptions)
