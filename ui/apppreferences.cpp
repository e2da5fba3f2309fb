#include "ui/apppreferences.h"

#include <QSettings>

namespace dd::ui {

AppPreferences AppPreferences::load() {
    QSettings q;
    AppPreferences p;
    p.taesdPreviews = q.value("previews/taesd", true).toBool();
    p.taesdFolder = q.value("previews/taesdFolder").toString();
    p.modelFolders = q.value("models/folders").toStringList();
    return p;
}

void AppPreferences::save() const {
    QSettings q;
    q.setValue("previews/taesd", taesdPreviews);
    q.setValue("previews/taesdFolder", taesdFolder);
    q.setValue("models/folders", modelFolders);
}

} // namespace dd::ui
