#include "ui/librarypanel.h"

#include "core/library/library.h"
#include "core/library/search.h"
#include "core/settings/a1111_parameters.h"
#include "core/settings/restore.h"

#include <QClipboard>
#include <QComboBox>
#include <QGuiApplication>
#include <QContextMenuEvent>
#include <QDesktopServices>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListView>
#include <QActionGroup>
#include <QMenu>
#include <QMimeData>
#include <QTimer>
#include <QToolButton>
#include <QUrl>
#include <QVBoxLayout>

#include <algorithm>

namespace dd::ui {
namespace {

constexpr int kCell = 132;  // thumbnail cell: a 128-pixel preview and its margin

// The seed (or the file name) and, when set, the favourite heart and the stars.
QString caption(const library::Entry& e) {
    QString text = e.seed >= 0 ? QString::number(e.seed) : QFileInfo(QString::fromStdString(e.path)).fileName();
    if (e.favourite) text = QStringLiteral("\u2665 ") + text;
    if (e.rating > 0) text += QStringLiteral(" ") + QString(e.rating, QChar(0x2605));
    return text;
}

QString tooltip(const library::Entry& e) {
    QString t = QStringLiteral("<b>%1</b>").arg(QString::fromStdString(e.prompt).toHtmlEscaped());
    if (!e.negativePrompt.empty())
        t += QStringLiteral("<br><i>%1</i>").arg(QString::fromStdString(e.negativePrompt).toHtmlEscaped());
    QStringList facts;
    if (e.seed >= 0) facts << QObject::tr("seed %1").arg(e.seed);
    if (e.width > 0) facts << QStringLiteral("%1×%2").arg(e.width).arg(e.height);
    if (e.steps > 0) facts << QObject::tr("%1 steps").arg(e.steps);
    if (!e.sampler.empty()) facts << QString::fromStdString(e.sampler);
    if (!e.modelName.empty()) facts << QString::fromStdString(e.modelName);
    facts << QString::fromStdString(e.createdAt);
    return t + QStringLiteral("<br>") + facts.join(QStringLiteral(" · ")).toHtmlEscaped() + QStringLiteral("<br>") +
           QString::fromStdString(e.path).toHtmlEscaped();
}

} // namespace

LibraryModel::LibraryModel(QObject* parent) : QAbstractListModel(parent), m_query(std::make_unique<library::Query>()) {}
LibraryModel::~LibraryModel() = default;

void LibraryModel::open(const QString& dbPath) {
    beginResetModel();
    m_entries.clear();
    m_thumbnails.clear();
    m_ids.clear();
    try {
        m_library = std::make_unique<library::Library>(dbPath.toStdString(), library::Library::Checked::No);
    } catch (const std::exception&) {
        m_library.reset();  // the owner reports what is wrong with the index
    }
    endResetModel();
}

void LibraryModel::setQuery(const library::Query& query) {
    *m_query = query;
    refresh();
}

void LibraryModel::refresh() {
    if (!m_library) return;
    std::vector<int64_t> ids;
    try {
        ids = m_library->ids(*m_query);
    } catch (const std::exception&) {
        return;
    }
    beginResetModel();
    m_ids.assign(ids.begin(), ids.end());
    m_entries.clear();  // ratings, prompts and thumbnails may have changed with the index
    m_thumbnails.clear();
    endResetModel();
}

int LibraryModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(m_ids.size()); }

const library::Entry* LibraryModel::entry(int row) const {
    if (row < 0 || size_t(row) >= m_ids.size() || !m_library) return nullptr;
    const qint64 id = m_ids[size_t(row)];
    if (auto* cached = m_entries.object(id)) return cached;
    try {
        auto e = m_library->byId(id);
        if (!e) return nullptr;
        auto* stored = new library::Entry(std::move(*e));
        m_entries.insert(id, stored);
        return stored;
    } catch (const std::exception&) {
        return nullptr;
    }
}

QVariant LibraryModel::data(const QModelIndex& index, int role) const {
    const library::Entry* e = entry(index.row());
    if (!e) return {};
    switch (role) {
    case Qt::DisplayRole: return caption(*e);
    case Qt::ToolTipRole: return tooltip(*e);
    case Qt::UserRole: return QString::fromStdString(e->path);
    case Qt::DecorationRole: {
        if (auto* cached = m_thumbnails.object(e->id)) return *cached;
        QPixmap pixmap;
        try {
            const std::string bytes = m_library->thumbnail(e->id);
            pixmap.loadFromData(reinterpret_cast<const uchar*>(bytes.data()), uint(bytes.size()));
        } catch (const std::exception&) {
        }
        if (pixmap.isNull()) {
            pixmap = QPixmap(kCell - 4, kCell - 4);
            pixmap.fill(QColor(0x44, 0x44, 0x44));
        } else {
            pixmap = pixmap.scaled(kCell - 4, kCell - 4, Qt::KeepAspectRatio, Qt::SmoothTransformation);
        }
        m_thumbnails.insert(e->id, new QPixmap(pixmap));
        return pixmap;
    }
    default: return {};
    }
}

Qt::ItemFlags LibraryModel::flags(const QModelIndex& index) const {
    return QAbstractListModel::flags(index) | Qt::ItemIsDragEnabled;
}

QStringList LibraryModel::mimeTypes() const { return {QStringLiteral("text/uri-list"), QStringLiteral("image/png")}; }

// Dragged out: the files as URLs (file managers, Krita, browsers), and the first image's pixels for programs
// that only take image data.
QMimeData* LibraryModel::mimeData(const QModelIndexList& indexes) const {
    auto* mime = new QMimeData;
    QList<QUrl> urls;
    for (const auto& i : indexes)
        if (const auto* e = entry(i.row())) urls << QUrl::fromLocalFile(QString::fromStdString(e->path));
    mime->setUrls(urls);
    if (!urls.isEmpty()) mime->setImageData(QImage(urls.front().toLocalFile()));
    return mime;
}

std::optional<LibraryItem> LibraryModel::item(int row) const {
    const library::Entry* e = entry(row);
    if (!e) return std::nullopt;
    return LibraryItem{e->id, QString::fromStdString(e->path), QString::fromStdString(e->prompt), e->seed,
                       QString::fromStdString(e->modelName), e->rating, e->favourite};
}

namespace {
template <class Read>
QStringList listOf(Read read) {
    QStringList out;
    try {
        for (const auto& v : read()) out << QString::fromStdString(v);
    } catch (const std::exception&) {
    }
    return out;
}
} // namespace

QStringList LibraryModel::modelNames() const {
    return m_library ? listOf([this] { return m_library->modelNames(); }) : QStringList();
}
QStringList LibraryModel::samplers() const {
    return m_library ? listOf([this] { return m_library->samplers(); }) : QStringList();
}

LibraryPanel::LibraryPanel(QWidget* parent) : QWidget(parent) {
    setObjectName("libraryPanel");
    m_model = new LibraryModel(this);
    m_search = new QLineEdit(this);
    m_search->setObjectName("librarySearch");
    m_search->setPlaceholderText(tr("Search prompts…"));
    m_search->setClearButtonEnabled(true);
    m_search->setToolTip(QString::fromStdString(library::searchHelp()));
    m_modelFilter = new QComboBox(this);
    m_modelFilter->setObjectName("libraryModelFilter");
    m_modelFilter->addItem(tr("All models"));
    m_favourites = new QToolButton(this);
    m_favourites->setObjectName("libraryFavourites");
    m_favourites->setText(QStringLiteral("\u2665"));
    m_favourites->setCheckable(true);
    m_favourites->setToolTip(tr("Favourites only"));
    // A long model name widens the list, not the window.
    m_modelFilter->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_modelFilter->setMinimumContentsLength(10);
    // The order and the sampler behind one button: the panel stays narrow enough for a 900-pixel window.
    m_order = library::Sort::Newest;
    m_orderMenu = new QMenu(this);
    m_orderButton = new QToolButton(this);
    m_orderButton->setObjectName("libraryOrder");
    m_orderButton->setText(tr("Sort"));
    m_orderButton->setMenu(m_orderMenu);
    m_orderButton->setPopupMode(QToolButton::InstantPopup);
    rebuildOrderMenu({});
    m_count = new QLabel(this);
    m_count->setObjectName("libraryCount");
    m_view = new QListView(this);
    m_view->setObjectName("libraryView");
    m_view->setModel(m_model);
    m_view->setViewMode(QListView::IconMode);
    m_view->setFlow(QListView::LeftToRight);
    m_view->setWrapping(true);
    m_view->setResizeMode(QListView::Adjust);
    m_view->setMovement(QListView::Static);
    // Every cell the same size, laid out in batches: the view never measures 50 000 rows.
    m_view->setUniformItemSizes(true);
    m_view->setLayoutMode(QListView::Batched);
    m_view->setBatchSize(200);
    m_view->setIconSize(QSize(kCell - 4, kCell - 4));
    m_view->setGridSize(QSize(kCell, kCell + 18));
    m_view->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_view->setDragEnabled(true);
    m_view->setDragDropMode(QAbstractItemView::DragOnly);
    m_view->setContextMenuPolicy(Qt::CustomContextMenu);

    m_searchDelay = new QTimer(this);
    m_searchDelay->setSingleShot(true);
    m_searchDelay->setInterval(150);  // a query per pause in typing, not per key
    connect(m_searchDelay, &QTimer::timeout, this, &LibraryPanel::applyQuery);
    connect(m_search, &QLineEdit::textChanged, m_searchDelay, qOverload<>(&QTimer::start));
    connect(m_modelFilter, &QComboBox::currentIndexChanged, this, &LibraryPanel::applyQuery);
    connect(m_favourites, &QToolButton::toggled, this, &LibraryPanel::applyQuery);
    // A click shows the image (again, when the canvas shows something else since); the arrow keys show each
    // image they land on. A click on a new image changes the current one too: shown once, by the click.
    connect(m_view, &QListView::clicked, this, [this](const QModelIndex& i) {
        if (auto item = m_model->item(i.row())) emit showRequested(*item);
    });
    connect(m_view->selectionModel(), &QItemSelectionModel::currentChanged, this, [this](const QModelIndex& i) {
        if (QGuiApplication::mouseButtons() != Qt::NoButton) return;
        if (auto item = m_model->item(i.row())) emit showRequested(*item);
    });
    connect(m_view, &QListView::doubleClicked, this, [this](const QModelIndex& i) {
        if (auto item = m_model->item(i.row())) emit restoreRequested(item->path);
    });
    connect(m_view, &QListView::customContextMenuRequested, this, &LibraryPanel::showMenu);

    auto* bar = new QHBoxLayout;
    bar->addWidget(m_search, 1);
    bar->addWidget(m_modelFilter);
    bar->addWidget(m_favourites);
    bar->addWidget(m_orderButton);
    bar->addWidget(m_count);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(2, 2, 2, 2);
    layout->addLayout(bar);
    layout->addWidget(m_view, 1);
}

void LibraryPanel::open(const QString& dbPath) {
    m_model->open(dbPath);
    refresh();
}

namespace {
// The choices again (the index changed), keeping the one chosen.
void refill(QComboBox* box, const QString& all, const QStringList& choices) {
    const QString current = box->currentIndex() > 0 ? box->currentText() : QString();
    const QSignalBlocker block(box);
    box->clear();
    box->addItem(all);
    box->addItems(choices);
    box->setCurrentIndex(std::max(0, box->findText(current)));
}
} // namespace

void LibraryPanel::refresh() {
    refill(m_modelFilter, tr("All models"), m_model->modelNames());
    rebuildOrderMenu(m_model->samplers());
    applyQuery();
}

void LibraryPanel::setOrder(library::Sort sort) {
    m_order = sort;
    applyQuery();
}

void LibraryPanel::setSampler(const QString& sampler) {
    m_sampler = sampler;
    applyQuery();
}

// Two exclusive groups: the order, then the sampler ("All samplers" or one the index holds; a chosen sampler no
// image has any more stays chosen, and listed, until another is).
void LibraryPanel::rebuildOrderMenu(QStringList samplers) {
    m_orderMenu->clear();
    auto group = [this](const QString& title) {
        m_orderMenu->addSection(title);
        auto* g = new QActionGroup(m_orderMenu);
        g->setExclusive(true);
        return g;
    };
    auto* order = group(tr("Order"));
    const std::pair<library::Sort, QString> orders[] = {
        {library::Sort::Newest, tr("Newest first")}, {library::Sort::Oldest, tr("Oldest first")}, {library::Sort::Rating, tr("Best rated first")}};
    for (const auto& [sort, text] : orders) {
        QAction* a = m_orderMenu->addAction(text, this, [this, sort] { setOrder(sort); });
        a->setCheckable(true);
        a->setChecked(sort == m_order);
        order->addAction(a);
    }
    auto* sampler = group(tr("Sampler"));
    if (!m_sampler.isEmpty() && !samplers.contains(m_sampler)) samplers.prepend(m_sampler);
    samplers.prepend(QString());
    for (const QString& name : samplers) {
        QAction* a = m_orderMenu->addAction(name.isEmpty() ? tr("All samplers") : name, this, [this, name] { setSampler(name); });
        a->setCheckable(true);
        a->setChecked(name == m_sampler);
        sampler->addAction(a);
    }
}

// The search box's words and filters, then the controls (a control that is set wins over a typed filter).
void LibraryPanel::applyQuery() {
    const library::ParsedSearch parsed = library::parseSearch(m_search->text().toStdString());
    library::Query q = parsed.query;
    if (m_modelFilter->currentIndex() > 0) q.modelName = m_modelFilter->currentText().toStdString();
    if (!m_sampler.isEmpty()) q.sampler = m_sampler.toStdString();
    if (m_favourites->isChecked()) q.favouritesOnly = true;
    if (m_order != library::Sort::Newest) q.sort = m_order;
    m_orderButton->setToolTip(tr("Order and sampler: %1").arg(m_sampler.isEmpty() ? tr("all samplers") : m_sampler));
    m_model->setQuery(q);
    QStringList problems;
    for (const auto& p : parsed.problems) problems << QString::fromStdString(p);
    m_searchProblem = problems.join(QStringLiteral("; "));
    // A filter not applied is said in a few words; which one and why, in the tooltip.
    m_count->setText(m_searchProblem.isEmpty() ? tr("%n image(s)", nullptr, m_model->rowCount())
                                               : tr("%n image(s) · ⚠ filter not applied", nullptr, m_model->rowCount()));
    m_count->setToolTip(m_searchProblem);
    m_count->setStyleSheet(m_searchProblem.isEmpty() ? QString() : QStringLiteral("color: #b00"));
}

void LibraryPanel::step(int delta) {
    const int rows = m_model->rowCount();
    if (rows == 0) return;
    const int row = m_view->currentIndex().isValid() ? std::clamp(m_view->currentIndex().row() + delta, 0, rows - 1) : 0;
    if (row == m_view->currentIndex().row()) return;
    m_view->setCurrentIndex(m_model->index(row));  // currentChanged shows it
    m_view->scrollTo(m_model->index(row));
}

std::vector<LibraryItem> LibraryPanel::selectedItems() const {
    std::vector<LibraryItem> out;
    for (const auto& i : m_view->selectionModel()->selectedIndexes())
        if (auto item = m_model->item(i.row())) out.push_back(*item);
    return out;
}

void LibraryPanel::showMenu(const QPoint& pos) {
    const QModelIndex at = m_view->indexAt(pos);
    if (!at.isValid()) return;
    if (!m_view->selectionModel()->isSelected(at)) m_view->setCurrentIndex(at);
    const auto items = selectedItems();
    if (items.empty()) return;
    const LibraryItem first = items.front();
    QMenu menu(this);
    menu.addAction(tr("Use settings"), this, [this, first] { emit restoreRequested(first.path); });
    menu.addAction(tr("Use seed"), this, [this, first] { emit useSeedRequested(first.path); })->setEnabled(first.seed >= 0);
    menu.addAction(tr("Use prompt"), this, [this, first] { emit usePromptRequested(first.path); });
    menu.addAction(tr("Send to img2img"), this, [this, first] { emit sendToImg2ImgRequested(first.path); });
    menu.addAction(tr("Upscale…"), this, [this, first] { emit upscaleRequested(first.path); });
    if (items.size() == 2)
        menu.addAction(tr("Compare the two selected"), this, [this, items] { emit compareRequested(items[0].path, items[1].path); });
    else
        menu.addAction(tr("Compare with…"), this, [this, first] { emit compareWithRequested(first.path); });
    menu.addAction(tr("Verify (rerun and compare)"), this, [this, first] { emit verifyRequested(first.path); })
        ->setEnabled(first.seed >= 0);
    menu.addSeparator();
    QList<qint64> ids;
    for (const auto& i : items) ids << i.id;
    auto* favourite = menu.addAction(tr("Favourite"), this, [this, ids, on = !first.favourite] { emit favouriteRequested(ids, on); });
    favourite->setCheckable(true);
    favourite->setChecked(first.favourite);
    QMenu* rating = menu.addMenu(tr("Rating"));
    for (int stars = 0; stars <= 5; ++stars) {
        auto* a = rating->addAction(stars == 0 ? tr("None") : QString(stars, QChar(0x2605)), this,
                                    [this, ids, stars] { emit ratingRequested(ids, stars); });
        a->setCheckable(true);
        a->setChecked(first.rating == stars);
    }
    menu.addSeparator();
    menu.addAction(tr("Copy parameters"), this, [first] { QGuiApplication::clipboard()->setText(parametersOfFile(first.path)); });
    menu.addAction(tr("Show in folder"), this, [first] {
        QDesktopServices::openUrl(QUrl::fromLocalFile(QFileInfo(first.path).absolutePath()));
    });
    menu.addSeparator();
    menu.addAction(tr("Delete (move to trash)"), this, [this, ids] { emit trashRequested(ids); });
    menu.exec(m_view->viewport()->mapToGlobal(pos));
}

QString parametersOfFile(const QString& path) {
    try {
        const auto r = settings::restoreFromFile(path.toStdString());
        settings::A1111WriteOptions o;
        o.modelName = r.modelName;
        o.modelHash = r.modelHash;
        return QString::fromStdString(settings::writeA1111Parameters(r.settings, o));
    } catch (const std::exception&) {
        return {};
    }
}

} // namespace dd::ui
