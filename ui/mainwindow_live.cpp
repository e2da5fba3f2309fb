// MainWindow: live mode. While Live is on, each edit of what a picture follows (prompt, negative, seed, steps,
// CFG, sampler) draws it again once typing pauses; a newer edit cancels the run under way at its next step
// (RunController::live), so the canvas always ends on the newest text. Live pictures skip the queue and the
// library; Keep saves the one shown like any finished run.
#include "core/settings/wildcards.h"
#include "ui/mainwindow.h"
#include "ui/promptpanel.h"
#include "ui/runcontroller.h"
#include "ui/stringlists.h"

#include <QPushButton>
#include <QStatusBar>
#include <QTimer>

namespace dd::ui {

// Long enough to join the keystrokes of a word, short enough to feel immediate.
constexpr int kLiveDebounceMs = 120;

void MainWindow::connectLive() {
    m_liveTimer = new QTimer(this);
    m_liveTimer->setSingleShot(true);
    m_liveTimer->setInterval(kLiveDebounceMs);
    connect(m_liveTimer, &QTimer::timeout, this, &MainWindow::runLive);
    connect(m_panel, &PromptPanel::edited, this, [this] {
        if (m_live->isChecked()) m_liveTimer->start();
    });
    connect(m_live, &QPushButton::toggled, this, [this](bool on) {
        if (on) {
            statusBar()->showMessage(tr("Live: every edit draws again; Keep saves the picture shown"), 5000);
            runLive();
            return;
        }
        m_liveTimer->stop();
        m_run->stopLive();
    });
}

// The settings as shown, one image, the seed in the box even when Random is on (a new seed per keystroke would
// change the picture for a reason the artist did not type); wildcards picked with that seed, as Generate would.
void MainWindow::runLive() {
    api::GenerationSettings s = currentSettings();
    s.batchSize = 1;
    try {
        settings::resolveWildcards(s, toStdStrings(m_prefs.wildcardFolders));
    } catch (const std::exception& e) {
        statusBar()->showMessage(QString::fromStdString(e.what()), 10000);  // a wildcard being typed: no file yet
        return;
    }
    m_run->live(s);
}

} // namespace dd::ui
