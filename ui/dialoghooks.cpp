#include "ui/dialoghooks.h"

#include <QDialog>
#include <QFileDialog>
#include <QFileInfo>
#include <QSettings>

#include <optional>

namespace dd::ui {
namespace {

std::function<int(QDialog*)>& handler() {
    static std::function<int(QDialog*)> h;
    return h;
}
std::optional<QString>& nextPath() {
    static std::optional<QString> p;
    return p;
}

} // namespace

int execDialog(QDialog* dialog) { return handler() ? handler()(dialog) : dialog->exec(); }
void setDialogHandler(std::function<int(QDialog*)> h) { handler() = std::move(h); }

QString chooseOpenPath(QWidget* parent, const QString& caption, const QString& filter, bool folder, const QString& purpose) {
    if (auto& p = nextPath(); p) {
        const QString answer = *p;
        p.reset();
        return answer;
    }
    if (handler()) return {};  // under test with no queued answer: cancelled, never a real chooser
    QSettings q;
    const QString key = QStringLiteral("dialogs/") + purpose;
    const QString start = q.value(key).toString();
    const QString chosen = folder ? QFileDialog::getExistingDirectory(parent, caption, start)
                                  : QFileDialog::getOpenFileName(parent, caption, start, filter);
    if (!chosen.isEmpty()) q.setValue(key, folder ? chosen : QFileInfo(chosen).absolutePath());
    return chosen;
}

void setNextChosenPath(const QString& path) { nextPath() = path; }

} // namespace dd::ui
