#pragma once
// Preferences besides the price profile (QSettings): where finished images are saved (and which other folders
// the library watches), live previews through
// TAESD, the folders where models are looked for when restored settings name a model by hash, the LoRA and
// upscaler networks' folders, and the CPU threads a run may use.
#include <QString>
#include <QStringList>

namespace dd::ui {

// The CLI's default names without the date: the window saves into one folder per day already.
inline constexpr const char* kDayFolderNameTemplate = "{counter:05}-{seed}-{prompt:6}";

struct AppPreferences {
    bool autosave = true;       // every finished image, with its metadata and sidecar
    QString outputFolder;       // one sub-folder per day; default ~/Pictures/DiffusionDesk
    QString nameTemplate;       // as the CLI's --name (settings/file_name_template.h)
    QString format = QStringLiteral("png");  // png, jpg, webp
    int quality = 95;           // JPEG / WebP
    QStringList watchedFolders; // other programs' images: in the library, and watched while the app runs
    bool taesdPreviews = true;  // TAESD when configured or found next to the model
    QString taesdFolder;        // "" = look next to the model
    QStringList modelFolders;   // searched (with the recent models' folders) to locate a restored model
    QStringList upscalerFolders;  // upscaler networks (ESRGAN, SwinIR…) by name, before DD_UPSCALER_PATH
    QStringList loraFolders;      // where a prompt's <lora:name:w> is looked for, before DD_LORA_PATH
    QStringList wildcardFolders;  // where a prompt's __name__ finds name.txt (settings/wildcards.h)
    QStringList embeddingFolders; // textual inversions by name, before DD_EMBEDDINGS_PATH and the LoRA folders' neighbours
    int threads = 0;            // CPU threads of a run whose plan names none; 0: the cores other programs leave free

    // Today's folder under outputFolder: "<outputFolder>/2025-01-31" (the local date: an artist's day).
    QString todaysFolder() const;
    static QString defaultOutputFolder();

    static AppPreferences load();
    void save() const;
};

} // namespace dd::ui
