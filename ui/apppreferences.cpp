#include "ui/apppreferences.h"

#include <QDate>
#include <QDir>
#include <QSettings>
#include <QStandardPaths>

#include <algorithm>

namespace dd::ui {

QString AppPreferences::defaultOutputFolder() {
    QString pictures = QStandardPaths::writableLocation(QStandardPaths::PicturesLocation);
    if (pictures.isEmpty()) pictures = QDir::homePath() + QStringLiteral("/Pictures");
    return pictures + QStringLiteral("/DiffusionDesk");
}

QString AppPreferences::todaysFolder() const {
    return QDir(outputFolder).filePath(QDate::currentDate().toString(Qt::ISODate));
}

AppPreferences AppPreferences::load() {
    QSettings q;
    AppPreferences p;
    p.autosave = q.value("saving/autosave", true).toBool();
    p.outputFolder = q.value("saving/outputFolder", defaultOutputFolder()).toString();
    p.nameTemplate = q.value("saving/nameTemplate", QString::fromLatin1(kDayFolderNameTemplate)).toString();
    p.format = q.value("saving/format", p.format).toString();
    p.quality = std::clamp(q.value("saving/quality", p.quality).toInt(), 1, 100);
    p.watchedFolders = q.value("library/watchedFolders").toStringList();
    p.taesdPreviews = q.value("previews/taesd", true).toBool();
    p.taesdFolder = q.value("previews/taesdFolder").toString();
    p.modelFolders = q.value("models/folders").toStringList();
    p.upscalerFolders = q.value("models/upscalerFolders").toStringList();
    p.loraFolders = q.value("models/loraFolders").toStringList();
    p.wildcardFolders = q.value("models/wildcardFolders").toStringList();
    p.embeddingFolders = q.value("models/embeddingFolders").toStringList();
    p.threads = std::max(0, q.value("engine/threads", 0).toInt());
    return p;
}

void AppPreferences::save() const {
    QSettings q;
    q.setValue("saving/autosave", autosave);
    q.setValue("saving/outputFolder", outputFolder);
    q.setValue("saving/nameTemplate", nameTemplate);
    q.setValue("saving/format", format);
    q.setValue("saving/quality", quality);
    q.setValue("library/watchedFolders", watchedFolders);
    q.setValue("previews/taesd", taesdPreviews);
    q.setValue("previews/taesdFolder", taesdFolder);
    q.setValue("models/folders", modelFolders);
    q.setValue("models/upscalerFolders", upscalerFolders);
    q.setValue("models/loraFolders", loraFolders);
    q.setValue("models/wildcardFolders", wildcardFolders);
    q.setValue("models/embeddingFolders", embeddingFolders);
    q.setValue("engine/threads", threads);
}

} // namespace dd::ui
