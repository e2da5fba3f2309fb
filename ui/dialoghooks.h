#pragma once
// Every dialog and file chooser the app opens goes through these, so tests can answer them instead of a
// person (KeePassXC's MessageBox::setNextAnswer idea): no modal dialog can hang a test.
#include <QString>

#include <functional>

class QDialog;
class QHBoxLayout;
class QLineEdit;
class QWidget;

namespace dd::ui {

// exec() unless a test handler is installed; the handler gets the dialog (already built and shown non-modally
// would not be needed) and returns the result code, e.g. after toggling a checkbox and calling accept().
int execDialog(QDialog* dialog);
void setDialogHandler(std::function<int(QDialog*)> handler);  // {} restores exec()

// A file (or folder) chooser that opens where the last one of the same `purpose` ("models", "images", ...) ended,
// remembered across starts. Tests queue the answer with setNextChosenPath ("" = cancelled).
QString chooseOpenPath(QWidget* parent, const QString& caption, const QString& filter, bool folder,
                       const QString& purpose = QStringLiteral("files"));
void setNextChosenPath(const QString& path);
// `edit` with a "…" button beside it that fills it through chooseOpenPath: the path rows of the settings column.
QHBoxLayout* pathRow(QWidget* owner, QLineEdit* edit, const QString& caption, const QString& filter, bool folder,
                     const QString& purpose = QStringLiteral("files"));

} // namespace dd::ui
