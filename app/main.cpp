// diffusiondesk: the desktop app. Opens on the model given as the first argument, or the built-in demo.
#include "ui/mainwindow.h"

#include <QApplication>

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QApplication::setApplicationName("DiffusionDesk");
    QApplication::setOrganizationName("DiffusionDesk");
    const QStringList args = QApplication::arguments();
    dd::ui::MainWindow window(args.size() > 1 ? args.at(1) : QString());
    window.resize(1100, 720);
    window.show();
    return QApplication::exec();
}
