#pragma once
// Preferences besides the price profile (QSettings): live previews through TAESD, and the folders where models
// are looked for when restored settings name a model by hash.
#include <QString>
#include <QStringList>

namespace dd::ui {

struct AppPreferences {
    bool taesdPreviews = true;  // TAESD when configured or found next to the model
    QString taesdFolder;        // "" = look next to the model
    QStringList modelFolders;   // searched (with the recent models' folders) to locate a restored model

    static AppPreferences load();
    void save() const;
};

} // namespace dd::ui
