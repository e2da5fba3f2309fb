#pragma once
// The image library in the window: every image the app (and anything else in the watched folders) saved,
// newest first, as a thumbnail grid with a search box (words of the prompt or negative prompt, and filters typed
// as seed:42, size:512x768, date:…, rating:3, is:favourite: library/search.h), a model filter, favourites only,
// and a Sort menu (the order; the sampler). The grid is virtual: the model holds the matching ids only and reads a row (and its thumbnail) when
// the view paints it, so 50 000 images cost the ids and the rows on screen.
//
// Click (or the arrow keys): show the image. Double-click or "Use settings": restore its settings. Context menu:
// use settings / seed / prompt, compare two (or one with any file), verify, favourite, rating, copy parameters,
// show in folder, delete (to the trash).
#include "core/api/generation_settings.h"

#include <QAbstractListModel>
#include <QCache>
#include <QPixmap>
#include <QWidget>

#include <memory>
#include <optional>
#include <vector>

class QComboBox;
class QLabel;
class QLineEdit;
class QMenu;
class QListView;
class QTimer;
class QToolButton;

namespace dd::library {
class Library;
struct Entry;
struct Query;
enum class Sort;
}

namespace dd::ui {

// What the window needs of one library image.
struct LibraryItem {
    qint64 id = 0;
    QString path;
    QString prompt;
    qint64 seed = -1;
    QString modelName;
    int rating = 0;
    bool favourite = false;
};

class LibraryModel : public QAbstractListModel {
    Q_OBJECT
public:
    explicit LibraryModel(QObject* parent = nullptr);
    ~LibraryModel() override;

    // Opens the reading connection to an index its owner (LibraryService) has opened and checked; the rows come
    // with the next setQuery or refresh.
    void open(const QString& dbPath);
    bool isOpen() const { return bool(m_library); }
    void setQuery(const library::Query& query);
    void refresh();  // the same query again (the index changed)

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    Qt::ItemFlags flags(const QModelIndex& index) const override;
    QStringList mimeTypes() const override;
    QMimeData* mimeData(const QModelIndexList& indexes) const override;

    qint64 idAt(int row) const { return m_ids[size_t(row)]; }
    std::optional<LibraryItem> item(int row) const;
    QStringList modelNames() const;
    QStringList samplers() const;

private:
    const library::Entry* entry(int row) const;

    std::unique_ptr<library::Library> m_library;
    std::unique_ptr<library::Query> m_query;
    std::vector<qint64> m_ids;
    mutable QCache<qint64, library::Entry> m_entries{4000};
    mutable QCache<qint64, QPixmap> m_thumbnails{1500};
};

class LibraryPanel : public QWidget {
    Q_OBJECT
public:
    explicit LibraryPanel(QWidget* parent = nullptr);
    LibraryModel* model() const { return m_model; }
    QListView* view() const { return m_view; }
    QLineEdit* searchBox() const { return m_search; }
    std::vector<LibraryItem> selectedItems() const;

    QString searchProblem() const { return m_searchProblem; }  // filters of the search box not applied

public slots:
    void open(const QString& dbPath);
    void refresh();
    void step(int delta);  // the previous / next image in the grid becomes current and is shown
    void setOrder(dd::library::Sort sort);
    void setSampler(const QString& sampler);  // "" = every sampler

signals:
    void showRequested(const dd::ui::LibraryItem& item);
    void restoreRequested(const QString& imagePath);  // every setting
    void useSeedRequested(const QString& imagePath);
    void usePromptRequested(const QString& imagePath);
    void sendToImg2ImgRequested(const QString& imagePath);  // the image becomes the next run's init image
    void upscaleRequested(const QString& imagePath);        // a bigger copy through an upscaler network
    void compareRequested(const QString& pathA, const QString& pathB);
    void compareWithRequested(const QString& path);  // with a file the user picks
    void verifyRequested(const QString& path);
    void favouriteRequested(const QList<qint64>& ids, bool favourite);
    void ratingRequested(const QList<qint64>& ids, int rating);
    void trashRequested(const QList<qint64>& ids);

private:
    void applyQuery();
    void showMenu(const QPoint& pos);
    void rebuildOrderMenu(QStringList samplers);

    LibraryModel* m_model;
    QListView* m_view;
    QLineEdit* m_search;
    QComboBox* m_modelFilter;
    QToolButton* m_favourites;
    QToolButton* m_orderButton;
    QMenu* m_orderMenu;
    library::Sort m_order;
    QString m_sampler;  // "" = all
    QLabel* m_count;
    QString m_searchProblem;
    QTimer* m_searchDelay;
};

// The A1111 parameters text of an image file ("" when it has none): what "Copy parameters" puts on the clipboard.
QString parametersOfFile(const QString& path);

} // namespace dd::ui

Q_DECLARE_METATYPE(dd::ui::LibraryItem)
