// MainWindow: what the Edit and Help menus add around the prompt panel: restoring settings is undoable, a pasted
// A1111 parameter block offers to become settings, and the shortcuts are listed.
#include "ui/controlnetpanel.h"
#include "ui/dialoghooks.h"
#include "ui/hirespanel.h"
#include "ui/imageinputpanel.h"
#include "ui/mainwindow.h"
#include "ui/promptpanel.h"

#include "core/settings/a1111_parameters.h"

#include <QDialog>
#include <QDialogButtonBox>
#include <QLabel>
#include <QPlainTextEdit>
#include <QStatusBar>
#include <QToolButton>
#include <QVBoxLayout>

namespace dd::ui {

// Every restore (library, canvas, file, pasted parameters) goes through here, so Ctrl+Z brings back what was
// typed before it.
void MainWindow::applyRestoredSettings(const api::GenerationSettings& s) {
    api::GenerationSettings before = m_panel->settings();
    before.controlnets = m_controlNet->controlnets();
    m_imageInput->apply(before);
    m_hires->apply(before);
    m_undoRestores.push_back(before);
    if (m_undoRestores.size() > 20) m_undoRestores.erase(m_undoRestores.begin());
    m_panel->setSettings(s);
    m_imageInput->setFrom(s);
    m_hires->setFrom(s);
}

void MainWindow::undoRestore() {
    if (m_undoRestores.empty()) {
        statusBar()->showMessage(tr("Nothing to undo"), 3000);
        return;
    }
    const api::GenerationSettings s = m_undoRestores.back();
    m_undoRestores.pop_back();
    m_panel->setSettings(s);
    m_controlNet->setControlNets(s.controlnets);
    m_imageInput->setFrom(s);
    m_hires->setFrom(s);
    statusBar()->showMessage(tr("Restore undone"), 3000);
}

// A prompt box that now holds a whole A1111 block (a prompt, then "Steps: …, Sampler: …, Seed: …") was
// pasted from a website or another app: offer to apply it as settings rather than run it as a prompt.
void MainWindow::checkPastedParameters() {
    const QString text = m_panel->promptEdit()->toPlainText();
    const bool multiLine = text.contains(QLatin1Char('\n'));
    m_pastedParameters.reset();
    if (multiLine) {
        try {
            auto info = settings::parseA1111Parameters(text.toStdString());
            if (info.has("steps") && (info.has("seed") || info.has("sampler"))) m_pastedParameters = info.settings;
        } catch (const std::exception&) {
        }
    }
    m_pasteNotice->setVisible(bool(m_pastedParameters));
}

void MainWindow::applyPastedParameters() {
    if (!m_pastedParameters) return;
    api::GenerationSettings s = *m_pastedParameters;
    const api::GenerationSettings current = currentSettings();
    s.model = current.model;
    s.plan = current.plan;
    s.preset = current.preset;
    s.initImage = current.initImage;  // A1111 text names no files: the picture being reworked stays
    s.inpaint.mask = current.inpaint.mask;
    // What was in the box before the paste is the undo point, not the pasted block.
    applyRestoredSettings(s);
    m_panel->setRandomSeed(false);
    m_pasteNotice->hide();
    statusBar()->showMessage(tr("Pasted parameters applied (Ctrl+Z undoes)"), 5000);
}

void MainWindow::newRandomSeed() {
    if (auto* dice = m_panel->findChild<QToolButton*>("diceSeed")) dice->click();
}

void MainWindow::showShortcuts() {
    QDialog dialog(this);
    dialog.setObjectName("shortcutsDialog");
    dialog.setWindowTitle(tr("Keyboard shortcuts"));
    auto* list = new QLabel(tr("<table cellpadding='3'>"
                               "<tr><td><b>Ctrl+Enter</b></td><td>Generate (or add to the queue)</td></tr>"
                               "<tr><td><b>Esc</b></td><td>Cancel the run</td></tr>"
                               "<tr><td><b>Ctrl+S</b></td><td>Save the image as…</td></tr>"
                               "<tr><td><b>Ctrl+C</b></td><td>Copy the image (outside text boxes)</td></tr>"
                               "<tr><td><b>Ctrl+Shift+C</b></td><td>Copy its parameters</td></tr>"
                               "<tr><td><b>Ctrl+R</b></td><td>New random seed</td></tr>"
                               "<tr><td><b>Ctrl+Z</b></td><td>Undo restored settings (outside text boxes)</td></tr>"
                               "<tr><td><b>Tab</b></td><td>Leave the prompt box</td></tr>"
                               "<tr><td><b>Arrow keys</b></td><td>Step through the library</td></tr>"
                               "<tr><td><b>Esc, Ctrl+W</b></td><td>Close Compare</td></tr></table>"),
                            &dialog);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, &dialog);
    connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    auto* layout = new QVBoxLayout(&dialog);
    layout->addWidget(list);
    layout->addWidget(buttons);
    execDialog(&dialog);
}

} // namespace dd::ui
