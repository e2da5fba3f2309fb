#include "ui/gallery.h"

namespace dd::ui {

QString settingsSummary(const api::GenerationSettings& s) {
    QString text = QString::fromStdString(s.prompt);
    if (!s.negativePrompt.empty()) text += QObject::tr("\nNegative prompt: %1").arg(QString::fromStdString(s.negativePrompt));
    text += QObject::tr("\nSteps: %1, Sampler: %2, CFG scale: %3, Seed: %4, Size: %5x%6")
                .arg(s.steps)
                .arg(QString::fromStdString(s.sampler))
                .arg(s.cfgScale)
                .arg(s.seed)
                .arg(s.width)
                .arg(s.height);
    if (!s.preset.empty()) text += QObject::tr(", Preset: %1").arg(QString::fromStdString(s.preset));
    return text;
}

Gallery::Gallery(QWidget* parent) : QListWidget(parent) {
    setObjectName("gallery");
    setViewMode(QListView::IconMode);
    setIconSize({96, 96});
    setResizeMode(QListView::Adjust);
    setMovement(QListView::Static);
    setFlow(QListView::LeftToRight);
    setWrapping(false);
    setSelectionMode(QAbstractItemView::ExtendedSelection);
    setMinimumHeight(130);
    setMaximumHeight(170);
    connect(this, &QListWidget::itemDoubleClicked, this, [this](QListWidgetItem* item) {
        emit restoreRequested(m_entries[size_t(item->data(Qt::UserRole).toInt())].settings);
    });
    connect(this, &QListWidget::itemSelectionChanged, this, [this] { emit selectionCountChanged(int(selectedItems().size())); });
}

void Gallery::addResult(const api::GenerationResult& result, const std::vector<QImage>& images) {
    const auto shared = std::make_shared<const api::GenerationResult>(result);
    for (size_t i = 0; i < images.size(); ++i) {
        GalleryEntry e;
        e.image = images[i];
        e.settings = result.settings;
        e.settings.seed = result.settings.seed + int64_t(i);
        e.settings.batchSize = 1;
        e.modelName = QString::fromStdString(result.modelName);
        e.modelHash = QString::fromStdString(result.modelHash);
        e.timings = result.timings;
        e.imagesInRun = int(images.size());
        e.result = shared;
        e.imageIndex = int(i);
        const int index = int(m_entries.size());
        m_entries.push_back(e);
        auto* item = new QListWidgetItem(QIcon(QPixmap::fromImage(e.image.scaled(iconSize(), Qt::KeepAspectRatio, Qt::SmoothTransformation))),
                                         QString::number(e.settings.seed));
        item->setData(Qt::UserRole, index);
        item->setToolTip(settingsSummary(e.settings) + QObject::tr("\nModel: %1").arg(e.modelName));
        insertItem(0, item);
    }
}

std::vector<int> Gallery::selectedEntries() const {
    std::vector<int> out;
    for (auto* item : selectedItems()) out.push_back(item->data(Qt::UserRole).toInt());
    std::sort(out.begin(), out.end());
    return out;
}

} // namespace dd::ui
