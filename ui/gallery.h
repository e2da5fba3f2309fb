#pragma once
// This session's images, newest first, each with the settings that made it (seed of that very image).
// Double-click restores its settings; two selected images can be compared.
#include "core/api/generation_result.h"

#include <QImage>
#include <QListWidget>

#include <memory>
#include <vector>

namespace dd::ui {

struct GalleryEntry {
    QImage image;
    api::GenerationSettings settings;  // batch image i: seed + i, batch size 1
    QString modelName;
    QString modelHash;
    api::StageTimings timings;         // the run's
    int imagesInRun = 1;
    std::shared_ptr<const api::GenerationResult> result;  // the whole run (compare view, environment)
    int imageIndex = 0;                                        // this image in result->images
};

class Gallery : public QListWidget {
    Q_OBJECT
public:
    explicit Gallery(QWidget* parent = nullptr);
    void addResult(const api::GenerationResult& result, const std::vector<QImage>& images);
    int count() const { return int(m_entries.size()); }
    const GalleryEntry& entry(int index) const { return m_entries[size_t(index)]; }
    std::vector<int> selectedEntries() const;

signals:
    void restoreRequested(const dd::api::GenerationSettings& settings);
    void selectionCountChanged(int selected);

private:
    std::vector<GalleryEntry> m_entries;
};

QString settingsSummary(const api::GenerationSettings& s);  // tooltip text

} // namespace dd::ui
