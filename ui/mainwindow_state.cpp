// MainWindow: memory preset, prediction, preferences, and what persists between sessions.
#include "core/pipeline/model_search.h"
#include "ui/dialoghooks.h"
#include "ui/engineworker.h"
#include "ui/hirespanel.h"
#include "ui/mainwindow.h"
#include "ui/modelpicker.h"
#include "ui/peakprediction.h"
#include "ui/preferencesdialog.h"
#include "ui/presetdialog.h"
#include "ui/promptpanel.h"
#include "ui/runcontroller.h"
#include "ui/stringlists.h"
#include "ui/vramgauge.h"

#include <nlohmann/json.hpp>

#include <QCloseEvent>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>
#include <QStatusBar>
#include <QTableWidget>

namespace dd::ui {

qint64 MainWindow::predictedPeakFor(const api::MemoryPlan& plan) const {
    api::GenerationSettings s = currentSettings();
    s.plan = plan;
    return ui::predictPeak(s, m_lastRunSettings ? &*m_lastRunSettings : nullptr, 0, toStdStrings(m_prefs.loraFolders)).peakBytes;
}

void MainWindow::openPresetDialog() {
    QStringList errors;
    auto presets = loadAllPresets(&errors);
    const QString recommended = recommendedPresetName(presets, machineMemory());
    PresetDialog dialog(std::move(presets), recommended,
                        m_preset ? QString::fromStdString(m_preset->name) : QString(),
                        [this](const api::MemoryPlan& plan) { return predictedPeakFor(plan); }, this);
    if (!errors.isEmpty()) statusBar()->showMessage(errors.join(QStringLiteral("; ")), 10000);
    if (execDialog(&dialog) == QDialog::Accepted && dialog.table()->currentRow() >= 0) applyPreset(dialog.selectedPreset());
}

void MainWindow::applyPreset(const memory::Preset& preset) {
    m_preset = preset;
    QSettings().setValue("preset", QString::fromStdString(preset.name));
    QSettings().setValue("presetJson", QString::fromStdString(nlohmann::json(preset).dump()));
    updatePresetLabel();
    updatePrediction();
}

void MainWindow::updatePresetLabel() {
    if (!m_preset) {
        m_presetLabel->setText(tr("Memory preset: none (fp32, SDPA)"));
        m_gauge->setBudget(0, {});
        return;
    }
    const auto& p = *m_preset;
    m_presetLabel->setText(tr("Memory preset: <b>%1</b> (budget %2)")
                               .arg(QString::fromStdString(p.name).toHtmlEscaped(), formatBytes(p.budgetBytes)));
    m_presetLabel->setToolTip(QString::fromStdString(p.strategy));
    m_gauge->setBudget(p.budgetBytes, QString::fromStdString(p.name));
    updatePrediction();
}

void MainWindow::updatePrediction() {
    const auto prediction = ui::predictPeak(currentSettings(), m_lastRunSettings ? &*m_lastRunSettings : nullptr,
                                            m_preset ? m_preset->budgetBytes : 0, toStdStrings(m_prefs.loraFolders));
    m_gauge->setPredictedPeak(std::max<qint64>(prediction.peakBytes, 0));
    auto* label = findChild<QLabel*>("predictedPeak");
    if (!label) return;
    if (prediction.peakBytes < 0) {
        label->setText(tr("predicted peak: unknown for this model"));
        return;
    }
    label->setText(tr("predicted peak: <b>%1</b> (%2)%3")
                       .arg(formatBytes(prediction.peakBytes), prediction.stage,
                            prediction.fits ? QString()
                                            : " — <span style='color:#b00'>" + prediction.advice.toHtmlEscaped() + "</span>"));
    label->setToolTip(prediction.detail);
}

void MainWindow::openPreferences() {
    PreferencesDialog dialog(m_price, m_prefs, this);
    if (execDialog(&dialog) != QDialog::Accepted) return;
    m_price = dialog.price();
    m_price.save();
    m_costLabel->setText(tr("price: %1").arg(m_price.describe()));
    m_costLabel->setVisible(m_price.enabled);
    m_prefs = dialog.preferences();
    m_prefs.save();
    m_run->setAutosave(m_prefs.autosave);
    applyPreferences();
}

// What the worker needs from the preferences (it applies them again at every model load), and the library's
// folders (a new output or watched folder is scanned now, not at the next start).
void MainWindow::applyPreferences() {
    emit previewDecoderRequested(m_prefs.taesdPreviews, m_prefs.taesdFolder);
    m_hires->setUpscalerFolders(m_prefs.upscalerFolders);
    m_run->setWildcardFolders(toStdStrings(m_prefs.wildcardFolders));
    worker()->post([worker = worker(), upscalers = m_prefs.upscalerFolders, loras = m_prefs.loraFolders,
                    embeddings = m_prefs.embeddingFolders] {
        worker->setUpscalerFolders(upscalers);
        worker->setLoraFolders(loras);
        worker->setEmbeddingFolders(embeddings);
    });
    m_panel->setEmbeddingFolders(pipeline::embeddingFolders(toStdStrings(m_prefs.embeddingFolders), toStdStrings(m_prefs.loraFolders)));
    QMetaObject::invokeMethod(m_libraryThread->service(), "setFolders", Qt::QueuedConnection,
                              Q_ARG(QStringList, QStringList{m_prefs.outputFolder}), Q_ARG(QStringList, m_prefs.watchedFolders));
}

// Window layout, the last settings and the preset come back as they were left.
void MainWindow::restoreState() {
    QSettings q;
    restoreGeometry(q.value("window/geometry").toByteArray());
    QMainWindow::restoreState(q.value("window/state").toByteArray());
    try {
        const QString last = q.value("lastSettings").toString();
        if (!last.isEmpty()) m_panel->setSettings(nlohmann::json::parse(last.toStdString()).get<api::GenerationSettings>());
    } catch (const std::exception&) {
        // A settings file from another version: start from defaults.
    }
    const QString presetName = q.value("preset").toString();
    const auto presets = loadAllPresets();
    for (const auto& e : presets)
        if (QString::fromStdString(e.preset.name) == presetName) m_preset = e.preset;
    if (!m_preset && !presetName.isEmpty()) {
        try {  // a preset whose file went away: keep what was chosen
            m_preset = nlohmann::json::parse(q.value("presetJson").toString().toStdString()).get<memory::Preset>();
        } catch (const std::exception&) {
        }
    }
    if (!m_preset) {
        const QString recommended = recommendedPresetName(presets, machineMemory());
        for (const auto& e : presets)
            if (QString::fromStdString(e.preset.name) == recommended) m_preset = e.preset;
    }
}

void MainWindow::saveState() const {
    QSettings q;
    q.setValue("window/geometry", saveGeometry());
    q.setValue("window/state", QMainWindow::saveState());
    q.setValue("lastSettings", QString::fromStdString(nlohmann::json(m_panel->settings()).dump()));
}

// Closing during a run cancels it; EngineThread's destructor then joins the worker after the step in flight.
void MainWindow::closeEvent(QCloseEvent* event) {
    const int waiting = m_run->waitingCount();
    const bool running = m_run->running();
    if (running || waiting > 0) {
        QMessageBox ask(QMessageBox::Question, tr("Quit DiffusionDesk?"),
                        running ? tr("A run is in progress; it will be cancelled.") : tr("Jobs are waiting in the queue."),
                        QMessageBox::NoButton, this);
        ask.setObjectName("quitQuestion");
        if (waiting > 0)
            ask.setInformativeText(tr("%n waiting job(s) stay in the queue for the next start.", nullptr, waiting));
        ask.setStandardButtons(QMessageBox::Close | QMessageBox::Cancel);
        ask.button(QMessageBox::Close)->setText(tr("Quit"));
        ask.setDefaultButton(QMessageBox::Cancel);
        // exec() answers the button; a test's dialog handler answers Accepted or Rejected.
        const int answer = execDialog(&ask);
        if (answer != QMessageBox::Close && answer != QDialog::Accepted) {
            event->ignore();
            return;
        }
    }
    saveState();
    if (running) cancel();
    m_engine->worker()->cancel();
    event->accept();
}

} // namespace dd::ui
