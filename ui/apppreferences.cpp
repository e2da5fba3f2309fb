#include "ui/apppreferences.h"

#include <QSettings>

#include <algorithm>

namespace dd::ui {

AppPreferences AppPreferences::load() {
    QSettings q;
    AppPreferences p;
    p.taesdPreviews = q.value("previews/taesd", true).toBool();
    p.taesdFolder = q.value("previews/taesdFolder").toString();
    p.modelFolders = q.value("models/folders").toStringList();
    p.threads = std::max(0, q.value("engine/threads", 0).toInt());
    return p;
}

void AppPreferences::save() const {
    QSettings q;
    q.setValue("previews/taesd", taesdPreviews);
    q.setValue("previews/taesdFolder", taesdFolder);
    q.setValue("models/folders", modelFolders);
    q.setValue("engine/threads", threads);
}

} // namespace dd::ui
