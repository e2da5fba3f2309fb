// MainWindow: comparing results (two library images, A/B quick actions) and restoring settings from files.
#include "ui/compareview.h"
#include "ui/dialoghooks.h"
#include "ui/librarypanel.h"
#include "ui/mainwindow.h"
#include "ui/runcontroller.h"
#include "ui/modelpicker.h"
#include "ui/promptpanel.h"

#include "core/sched/scheduler.h"
#include "core/settings/restore.h"

#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDragEnterEvent>
#include <QFileInfo>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMimeData>
#include <QShortcut>
#include <QStatusBar>
#include <QVBoxLayout>

namespace dd::ui {

void MainWindow::showComparison(const api::GenerationResult& a, int indexA, const api::GenerationResult& b, int indexB) {
    // A separate, non-modal window: the main window stays usable and no test can hang on it.
    if (!m_compareWindow) {
        m_compareWindow = new QWidget(this, Qt::Window);
        m_compareWindow->setObjectName("compareWindow");
        m_compareWindow->setWindowTitle(tr("Compare"));
        m_compareView = new CompareView(m_compareWindow);
        auto* layout = new QVBoxLayout(m_compareWindow);
        layout->setContentsMargins(0, 0, 0, 0);
        layout->addWidget(m_compareView);
        m_compareWindow->resize(1100, 700);
        for (const QKeySequence& key : {QKeySequence(Qt::Key_Escape), QKeySequence(Qt::CTRL | Qt::Key_W)})
            connect(new QShortcut(key, m_compareWindow), &QShortcut::activated, m_compareWindow, &QWidget::close);
    }
    m_compareView->setResults(a, indexA, b, indexB);
    m_compareWindow->show();
    m_compareWindow->raise();
}

void MainWindow::compareSelected() {
    const auto selected = m_library->selectedItems();
    if (selected.size() != 2) {
        statusBar()->showMessage(tr("Select two images in the library (Ctrl+click) to compare them."), 5000);
        return;
    }
    compareFiles(selected[0].path, selected[1].path);
}

void MainWindow::runAbSeeds() {
    startAbPair([](const api::GenerationSettings& s) { return compare::abSeeds(s, s.seed + 1); });
}

void MainWindow::runAbSetting(const QString& fieldPath, const QString& valueB) {
    startAbPair([&](const api::GenerationSettings& s) {
        return compare::abSettingFromText(s, fieldPath.toStdString(), valueB.toStdString());
    });
}

// Both quick actions: this seed and settings as A, the pair's B, run one after the other on the worker.
void MainWindow::startAbPair(const std::function<compare::AbPair(const api::GenerationSettings&)>& makePair) {
    if (isRunning()) return;
    api::GenerationSettings s = currentSettings();
    s.seed = m_panel->takeSeed();
    try {
        const auto pair = makePair(s);
        statusBar()->showMessage(tr("A/B: %1").arg(QString::fromStdString(pair.label)));
        m_run->startAb(pair);
    } catch (const std::exception& e) {
        statusBar()->showMessage(QString::fromStdString(e.what()));
    }
}

void MainWindow::chooseAbSetting() {
    QDialog dialog(this);
    dialog.setObjectName("abSettingDialog");
    dialog.setWindowTitle(tr("A/B setting"));
    auto* field = new QComboBox(&dialog);
    field->setObjectName("abField");
    for (const auto& f : compare::abFields()) field->addItem(QString::fromStdString(f.label), QString::fromStdString(f.path));
    auto* value = new QComboBox(&dialog);
    value->setObjectName("abValue");
    value->setEditable(true);
    auto fillChoices = [value, field] {
        value->clear();
        const std::string path = field->currentData().toString().toStdString();
        for (const auto& f : compare::abFields())
            if (f.path == path) {
                for (const auto& c : f.choices) value->addItem(QString::fromStdString(c));
            }
    };
    connect(field, qOverload<int>(&QComboBox::currentIndexChanged), &dialog, fillChoices);
    fillChoices();
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dialog);
    connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    auto* form = new QFormLayout(&dialog);
    form->addRow(tr("Vary"), field);
    form->addRow(tr("B's value"), value);
    form->addRow(buttons);
    if (execDialog(&dialog) == QDialog::Accepted) runAbSetting(field->currentData().toString(), value->currentText());
}

bool MainWindow::restoreFromFile(const QString& path) {
    try {
        const settings::Restored r = settings::restoreFromFile(path.toStdString());
        api::GenerationSettings s = r.settings;
        const api::GenerationSettings current = currentSettings();
        s.model = current.model;  // metadata never names a local path: the open model stays
        s.plan = current.plan;
        s.preset = current.preset;
        // Metadata names the init image and the mask by file name: they are looked for next to the file (kept as
        // names when absent, so Generate says which file is missing).
        const std::string folder = QFileInfo(path).absolutePath().toStdString();
        for (std::string* name : {&s.initImage, &s.inpaint.mask})
            if (!name->empty())
                if (const auto inside = settings::resolveInsideFolder(folder, *name)) *name = *inside;
        applyRestoredSettings(s);
        m_panel->setRandomSeed(false);
        QString message = tr("Settings from %1 (%2)").arg(QFileInfo(path).fileName(), QString::fromStdString(r.source));
        if (!r.modelName.empty() || !r.modelHash.empty())
            message += tr(" · made with %1 %2").arg(QString::fromStdString(r.modelName), QString::fromStdString(r.modelHash));
        locateRestoredModel(QString::fromStdString(r.modelName), QString::fromStdString(r.modelHash),
                            QString::fromStdString(r.settings.model));
        if (s.refiner.enabled())  // metadata names it, the worker finds the file (hashing is slow)
            emit locateRefinerRequested(QString::fromStdString(s.refiner.model), QString::fromStdString(s.refiner.hash),
                                        knownModelFolders());
        if (!r.unknown.empty()) message += tr(" · %n setting(s) not used here", "", int(r.unknown.size()));
        for (const auto& w : r.warnings) message += QStringLiteral(" · ") + QString::fromStdString(w);
        statusBar()->showMessage(message);
        const bool image = r.source == "png" || r.source == "jpeg" || r.source == "webp";
        m_reproducePath = image ? path : QString();
        // A long file name (Civitai's, A1111's with the prompt in it) is shortened: the button's text sets the
        // settings column's minimum width, which the column follows (FollowContentWidth).
        const QString name = m_reproduce->fontMetrics().elidedText(QFileInfo(path).fileName(), Qt::ElideMiddle, 180);
        m_reproduce->setText(tr("Reproduce %1 and compare").arg(name));
        m_reproduce->setVisible(image);
        return true;
    } catch (const std::exception& e) {
        statusBar()->showMessage(QString::fromStdString(e.what()));
        return false;
    }
}

QStringList MainWindow::knownModelFolders() const {
    QStringList folders = m_prefs.modelFolders;
    for (const QString& path : m_picker->recentModels()) {
        const QFileInfo fi(path);
        // Single files only: a diffusers folder has no A1111 hash, and hashing its parts would be slow and useless.
        if (fi.isFile() && !folders.contains(fi.absolutePath())) folders << fi.absolutePath();
    }
    return folders;
}

// The open model when its hash is the one recorded; else the worker searches the known folders (hashing is slow)
// and answers modelLocated (then it is loaded) or modelNotFound (the notice says which model is needed).
void MainWindow::locateRestoredModel(const QString& name, const QString& hash, const QString& recordedModel) {
    m_restoreNotice->hide();
    if (recordedModel.startsWith(QLatin1String("demo:"))) {
        if (recordedModel != m_picker->currentModel()) m_picker->choose(recordedModel);
        return;
    }
    if (name.isEmpty() && hash.isEmpty()) return;
    if (!hash.isEmpty() && hash.compare(m_picker->info().hash, Qt::CaseInsensitive) == 0) {
        m_restoreNotice->setText(tr("Made with the open model (hash %1).").arg(hash));
        m_restoreNotice->show();
        return;
    }
    // No hash to compare (a folder model, the built-in one): the same name is the open model, nothing to find.
    const QFileInfo open(m_picker->currentModel());
    if (hash.isEmpty() && !name.isEmpty() &&
        (name == open.fileName() || name == open.completeBaseName() || name == m_picker->info().displayName))
        return;
    m_restoreNotice->setText(tr("Looking for model %1 %2…").arg(name.toHtmlEscaped(), hash));
    m_restoreNotice->show();
    emit locateRequested(name, hash, knownModelFolders());
}

void MainWindow::openSettingsFile() {
    const QString path = chooseOpenPath(this, tr("Open settings from an image"),
                                        tr("Images and settings (*.png *.jpg *.jpeg *.webp *.json *.txt)"), false, QStringLiteral("images"));
    if (!path.isEmpty()) restoreFromFile(path);
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    if (event->mimeData()->hasUrls()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
    const auto urls = event->mimeData()->urls();
    if (urls.isEmpty() || !urls.first().isLocalFile()) return;
    if (restoreFromFile(urls.first().toLocalFile())) event->acceptProposedAction();
}

} // namespace dd::ui
