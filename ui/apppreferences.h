#pragma once
// Preferences besides the price profile (QSettings): live previews through TAESD, the folders where models
// are looked for when restored settings name a model by hash, and the CPU threads a run may use.
#include <QString>
#include <QStringList>

namespace dd::ui {

struct AppPreferences {
    bool taesdPreviews = true;  // TAESD when configured or found next to the model
    QString taesdFolder;        // "" = look next to the model
    QStringList modelFolders;   // searched (with the recent models' folders) to locate a restored model
    int threads = 0;            // CPU threads of a run whose plan names none; 0: the cores other programs leave free

    static AppPreferences load();
    void save() const;
};

} // namespace dd::ui
