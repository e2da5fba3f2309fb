// MainWindow: exploring around a picture (docs/explore.md). "Variations…" on the canvas bar makes neighbours of
// the shown image: its own settings, a batch of N blended towards N variation seeds at a chosen strength (A1111's
// variation seed), shown as a grid; each keeps its seed and variation seed in its sidecar, so any one is remade alone.
#include "ui/dialoghooks.h"
#include "ui/mainwindow.h"
#include "ui/promptpanel.h"
#include "ui/runcontroller.h"

#include <QDialog>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QLabel>
#include <QRandomGenerator>
#include <QSettings>
#include <QSpinBox>
#include <QStatusBar>

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

} // namespace dd::ui
