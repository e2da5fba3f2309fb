#include "ui/dialoghooks.h"

#include <QDialog>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QPushButton>
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

QHBoxLayout* pathRow(QWidget* owner, QLineEdit* edit, const QString& caption, const QString& filter, bool folder,
                     const QString& purpose) {
    auto* box = new QHBoxLayout;
    auto* browse = new QPushButton(QStringLiteral("…"));
    browse->setMaximumWidth(32);
    QObject::connect(browse, &QPushButton::clicked, owner, [=] {
        const QString path = chooseOpenPath(owner, caption, filter, folder, purpose);
        if (!path.isEmpty()) edit->setText(path);
    });
    box->addWidget(edit, 1);
    box->addWidget(browse);
    return box;
}

} // namespace dd::ui
