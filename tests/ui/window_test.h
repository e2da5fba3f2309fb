#pragma once
// What every window test does first: its settings, custom presets and queue go to a temporary folder, never the
// user's, and any dialog not answered explicitly is rejected at once.
#include "ui/dialoghooks.h"

#include <QCoreApplication>
#include <QDialog>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>

namespace dd::test {

inline void isolateWindowTests(const QTemporaryDir& config, const char* testName) {
    QStandardPaths::setTestModeEnabled(true);
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, config.path());
    QCoreApplication::setOrganizationName("DiffusionDeskTest");
    QCoreApplication::setApplicationName(testName);
    dd::ui::setDialogHandler([](QDialog*) { return int(QDialog::Rejected); });
}

} // namespace dd::test
