#pragma once
// This session's images, newest first, each with the settings that made it (seed of that very image).
// Double-click restores its settings; two selected images can be compared.
#include "core/pipeline/generation.h"

#include <QImage>
#include <QListWidget>

#include <memory>
#include <vector>

namespace dd::ui {

struct GalleryEntry {
    QImage image;
    settings::GenerationSettings settings;  // batch image i: seed + i, batch size 1
    QString modelName;
    QString modelHash;
    pipeline::StageTimings timings;         // the run's
    int imagesInRun = 1;
    std::shared_ptr<const pipeline::GenerationResult> result;  // the whole run (compare view, environment)
    int imageIndex = 0;                                        // this image in result->images
};

class Gallery : public QListWidget {
    Q_OBJECT
public:
    explicit Gallery(QWidget* parent = nullptr);
    void addResult(const pipeline::GenerationResult& result, const std::vector<QImage>& images);
    int count() const { return int(m_entries.size()); }
    const GalleryEntry& entry(int index) const { return m_entries[size_t(index)]; }
    std::vector<int> selectedEntries() const;

signals:
    void restoreRequested(const dd::settings::GenerationSettings& settings);
    void selectionCountChanged(int selected);

private:
    std::vector<GalleryEntry> m_entries;
};

QString settingsSummary(const settings::GenerationSettings& s);  // tooltip text

} // namespace dd::ui
