#include "ui/dialoghooks.h"

#include <QDialog>
#include <QFileDialog>

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

QString chooseOpenPath(QWidget* parent, const QString& caption, const QString& filter, bool folder) {
    if (auto& p = nextPath(); p) {
        const QString answer = *p;
        p.reset();
        return answer;
    }
    if (handler()) return {};  // under test with no queued answer: cancelled, never a real chooser
    return folder ? QFileDialog::getExistingDirectory(parent, caption) : QFileDialog::getOpenFileName(parent, caption, {}, filter);
}

void setNextChosenPath(const QString& path) { nextPath() = path; }

} // namespace dd::ui
