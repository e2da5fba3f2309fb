// MainWindow: exploring around a picture (docs/explore.md). "Variations…" on the canvas bar makes neighbours of
// the shown image: its own settings, a batch of N blended towards N variation seeds at a chosen strength (A1111's
// variation seed), shown as a grid; each keeps its seed and variation seed in its sidecar, so any one is remade alone.
// "X/Y/Z plot…" (Generate menu) runs the settings over up to three axes, one queued job a cell, and writes the
// sheets when the last cell is saved (ui/xyzplot.h).
#include "ui/dialoghooks.h"
#include "ui/mainwindow.h"
#include "ui/promptpanel.h"
#include "ui/peakprediction.h"
#include "ui/runcontroller.h"
#include "ui/stringlists.h"
#include "ui/xyzplot.h"

#include <QDialog>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QComboBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QGridLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>
#include <QRandomGenerator>
#include <QSettings>
#include <QSpinBox>
#include <QStatusBar>

#include <algorithm>

namespace dd::ui {

namespace {

struct VariationsAsked {
    int count = 4;
    double strength = 0.25;
};

// How many neighbours and how far; remembered between uses. False when cancelled.
bool askVariations(QWidget* parent, const QString& file, VariationsAsked& asked) {
    QSettings q;
    QDialog dialog(parent);
    dialog.setObjectName("variationsDialog");
    dialog.setWindowTitle(QObject::tr("Variations of %1").arg(QFileInfo(file).fileName()));
    auto* count = new QSpinBox(&dialog);
    count->setObjectName("variationCount");
    count->setRange(2, 9);
    count->setValue(q.value("explore/variationCount", asked.count).toInt());
    count->setToolTip(QObject::tr("One batch: more images need more memory"));
    auto* strength = new QDoubleSpinBox(&dialog);
    strength->setObjectName("variationStrength");
    strength->setRange(0.01, 1.0);
    strength->setSingleStep(0.05);
    strength->setValue(q.value("explore/variationStrength", asked.strength).toDouble());
    strength->setToolTip(QObject::tr("How far from the picture: 0.1 a nuance, 0.5 a cousin, 1 another picture"));
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dialog);
    QObject::connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
    QObject::connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    auto* form = new QFormLayout(&dialog);
    form->addRow(new QLabel(QObject::tr("The same settings and seed, the noise blended towards new variation seeds."), &dialog));
    form->addRow(QObject::tr("Images"), count);
    form->addRow(QObject::tr("Strength"), strength);
    form->addRow(buttons);
    if (execDialog(&dialog) != QDialog::Accepted) return false;
    asked = {count->value(), strength->value()};
    q.setValue("explore/variationCount", asked.count);
    q.setValue("explore/variationStrength", asked.strength);
    return true;
}

} // namespace

void MainWindow::makeVariations(const QString& file) {
    VariationsAsked asked;
    if (file.isEmpty() || !askVariations(this, file, asked)) return;
    if (!restoreFromFile(file)) return;  // the status bar says why
    api::GenerationSettings s = currentSettings();
    s.variation.seed = int64_t(QRandomGenerator::global()->bounded(quint32(0xffffffffu)));
    s.variation.strength = asked.strength;
    s.batchSize = asked.count;
    applyRestoredSettings(s);  // the panel shows what runs: Generate again makes the same batch
    m_panel->setBatchCount(1);
    try {
        m_run->generate(s, 1);
    } catch (const std::exception& e) {
        statusBar()->showMessage(QString::fromStdString(e.what()), 10000);
        return;
    }
    statusBar()->showMessage(tr("%1 variations of seed %2 at strength %3, variation seeds %4 to %5")
                                 .arg(asked.count)
                                 .arg(s.seed)
                                 .arg(asked.strength, 0, 'f', 2)
                                 .arg(s.variation.seed)
                                 .arg(s.variation.seed + asked.count - 1),
                             8000);
}

bool MainWindow::startPlot(const std::vector<compare::PlotAxis>& axes) {
    api::GenerationSettings base = currentSettings();
    base.seed = m_panel->takeSeed();
    std::vector<compare::PlotCell> cells;
    try {
        cells = compare::plotCells(base, axes);
    } catch (const std::exception& e) {
        statusBar()->showMessage(tr("X/Y/Z plot: %1").arg(QString::fromStdString(e.what())), 10000);
        return false;
    }
    const PlotRun& plot = m_plots->start(axes, int(cells.size()));
    const QString id = plot.id();
    std::vector<QString> tags;
    for (size_t i = 0; i < cells.size(); ++i) tags.push_back(plot.jobTag(int(i)));
    try {
        for (size_t i = 0; i < cells.size(); ++i) m_run->generate(cells[i].settings, 1, {}, tags[i]);
    } catch (const std::exception& e) {  // a wildcard without its file: the first cell says so, none is queued
        m_plots->drop(id);
        statusBar()->showMessage(QString::fromStdString(e.what()), 10000);
        return false;
    }
    statusBar()->showMessage(tr("X/Y/Z plot: %1 images queued, seed %2").arg(cells.size()).arg(base.seed), 8000);
    return true;
}

// A saved job that is a cell of a plot under way; a plot's last cell writes its sheets and shows the first.
void MainWindow::plotCellSaved(const QString& jobId, const QStringList& files) {
    if (m_plots->runs().empty() || files.isEmpty()) return;
    const auto job = std::find_if(jobs().begin(), jobs().end(), [&](const JobRow& j) { return j.id == jobId; });
    if (job == jobs().end()) return;
    const auto done = m_plots->cellSaved(job->specJson, files.front());
    if (!done) return;
    try {
        const QStringList sheets = done->writeSheets(QFileInfo(files.front()).absolutePath());
        m_preview->showFinal(QImage(sheets.front()), tr("X/Y/Z plot · %1").arg(QFileInfo(sheets.front()).fileName()));
        m_shownFiles.clear();
        m_shownJob.clear();
        updateImageActions();
        statusBar()->showMessage(tr("X/Y/Z plot: written beside its images: %1").arg(sheets.join(QStringLiteral(", "))));
        emit plotFinished(sheets);
    } catch (const std::exception& e) {
        statusBar()->showMessage(tr("X/Y/Z plot: the sheet cannot be written: %1").arg(QString::fromStdString(e.what())), 10000);
    }
}

// Three axes: a field (one of plotFields, or any settings path typed) and its values in A1111's syntax; what
// they make is shown as they are typed: the images, the largest predicted peak, the time at the last run's pace.
void MainWindow::openPlotDialog() {
    QDialog dialog(this);
    dialog.setObjectName("xyzDialog");
    dialog.setWindowTitle(tr("X/Y/Z plot"));
    auto* grid = new QGridLayout;
    std::vector<QComboBox*> fields;
    std::vector<QLineEdit*> values;
    const char* names[] = {"X", "Y", "Z"};
    for (int a = 0; a < 3; ++a) {
        auto* field = new QComboBox(&dialog);
        field->setObjectName(QStringLiteral("xyzField%1").arg(a));
        field->setEditable(true);  // any settings path ("memory_plan.vae_slicing") besides the listed fields
        field->addItem(tr("(none)"), QString());
        for (const auto& f : compare::plotFields()) field->addItem(QString::fromStdString(f.label), QString::fromStdString(f.path));
        auto* edit = new QLineEdit(&dialog);
        edit->setObjectName(QStringLiteral("xyzValues%1").arg(a));
        edit->setPlaceholderText(tr("e.g. 10-30 (+10), or 5, 7.5, or Euler, DDIM"));
        grid->addWidget(new QLabel(QString::fromLatin1(names[a]), &dialog), a, 0);
        grid->addWidget(field, a, 1);
        grid->addWidget(edit, a, 2);
        fields.push_back(field);
        values.push_back(edit);
    }
    auto* summary = new QLabel(&dialog);
    summary->setObjectName("xyzSummary");
    summary->setWordWrap(true);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dialog);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Queue"));
    std::vector<compare::PlotAxis> axes;
    const auto update = [&] {
        axes.clear();
        QString problem;
        try {
            const api::GenerationSettings base = currentSettings();
            for (int a = 0; a < 3; ++a) {
                const QString path = fields[size_t(a)]->currentIndex() > 0 ? fields[size_t(a)]->currentData().toString()
                                                                           : fields[size_t(a)]->currentText().trimmed();
                if (path.isEmpty() || path == tr("(none)") || values[size_t(a)]->text().trimmed().isEmpty()) break;
                axes.push_back(compare::parseAxis(base, path.toStdString(), values[size_t(a)]->text().toStdString()));
            }
            if (axes.empty()) throw std::invalid_argument(tr("choose a field and type its values").toStdString());
            const auto cells = compare::plotCells(base, axes);
            qint64 peak = 0;
            double seconds = 0;
            for (const auto& c : cells) {
                peak = std::max(peak, predictPeak(c.settings, nullptr, 0, toStdStrings(m_prefs.loraFolders)).peakBytes);
                seconds += m_secondsPerStepPixel * c.settings.steps * c.settings.width * c.settings.height;
            }
            summary->setText(tr("%1 images, one job each · predicted peak %2 · %3")
                                 .arg(cells.size())
                                 .arg(peak > 0 ? QStringLiteral("%1 MiB").arg(peak >> 20) : tr("unknown"))
                                 .arg(seconds > 0 ? tr("about %1 s at the last run's pace").arg(qRound(seconds)) : tr("time unknown until a run")));
        } catch (const std::exception& e) {
            problem = QString::fromStdString(e.what());
            axes.clear();
        }
        if (!problem.isEmpty()) summary->setText(QStringLiteral("<span style='color:#b00020'>%1</span>").arg(problem.toHtmlEscaped()));
        buttons->button(QDialogButtonBox::Ok)->setEnabled(problem.isEmpty());
    };
    for (auto* f : fields) connect(f, &QComboBox::currentTextChanged, &dialog, update);
    for (auto* v : values) connect(v, &QLineEdit::textChanged, &dialog, update);
    connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    auto* layout = new QVBoxLayout(&dialog);
    layout->addWidget(new QLabel(tr("Every combination is one image with the current settings and one seed; a sheet per Z "
                                    "value is written beside the images when the last is done."), &dialog));
    layout->addLayout(grid);
    layout->addWidget(summary);
    layout->addWidget(buttons);
    update();
    if (execDialog(&dialog) == QDialog::Accepted && !axes.empty()) startPlot(axes);
}

} // namespace dd::ui
