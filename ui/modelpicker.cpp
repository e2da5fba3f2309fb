#include "ui/modelpicker.h"

#include "core/pipeline/engine.h"
#include "core/resources.h"
#include "ui/dialoghooks.h"

#include <QComboBox>
#include <QFileInfo>
#include <QGridLayout>
#include <QLabel>
#include <QProgressBar>
#include <QSettings>
#include <QToolButton>

namespace dd::ui {
namespace {

constexpr int kMaxRecent = 8;
const QString kDemo = QString::fromLatin1(pipeline::kDemoModel);

// The shipped shapes model, when this install has it.
QString embeddedModel() { return QString::fromStdString(installedEmbeddedModel().string()); }

QString labelFor(const QString& path) {
    if (path == kDemo) return QObject::tr("Built-in demo (tiny, random weights)");
    if (!path.isEmpty() && path == embeddedModel()) return QObject::tr("Built-in shapes model (offline, 128 × 128)");
    const QFileInfo fi(path);
    return (fi.fileName().isEmpty() ? path : fi.fileName()) + QStringLiteral("  —  ") + fi.absolutePath();
}

} // namespace

ModelPicker::ModelPicker(QWidget* parent) : QWidget(parent) {
    setObjectName("modelPicker");
    m_combo = new QComboBox(this);
    m_combo->setObjectName("modelCombo");
    m_combo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_combo->setMinimumContentsLength(24);
    m_openFolder = new QToolButton(this);
    m_openFolder->setObjectName("openModelFolder");
    m_openFolder->setText(tr("Folder…"));
    m_openFolder->setToolTip(tr("Open a diffusers model folder (model_index.json)"));
    m_openFile = new QToolButton(this);
    m_openFile->setObjectName("openModelFile");
    m_openFile->setText(tr("File…"));
    m_openFile->setToolTip(tr("Open a single-file checkpoint (.safetensors)"));
    m_details = new QLabel(this);
    m_details->setObjectName("modelDetails");
    m_details->setWordWrap(true);
    m_details->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_busy = new QProgressBar(this);
    m_busy->setObjectName("modelLoadProgress");
    m_busy->setRange(0, 0);
    m_busy->setMaximumHeight(14);
    m_busy->setTextVisible(false);
    m_cancel = new QToolButton(this);
    m_cancel->setObjectName("cancelModelLoad");
    m_cancel->setText(tr("Cancel"));

    auto* grid = new QGridLayout(this);
    grid->setContentsMargins(0, 0, 0, 0);
    grid->addWidget(m_combo, 0, 0);
    grid->addWidget(m_openFolder, 0, 1);
    grid->addWidget(m_openFile, 0, 2);
    grid->addWidget(m_busy, 1, 0, 1, 2);
    grid->addWidget(m_cancel, 1, 2);
    grid->addWidget(m_details, 2, 0, 1, 3);
    grid->setColumnStretch(0, 1);
    m_busy->hide();
    m_cancel->hide();

    connect(m_openFolder, &QToolButton::clicked, this, &ModelPicker::openFolder);
    connect(m_openFile, &QToolButton::clicked, this, &ModelPicker::openFile);
    connect(m_cancel, &QToolButton::clicked, this, &ModelPicker::cancelRequested);
    connect(m_combo, qOverload<int>(&QComboBox::activated), this, [this](int i) { choose(m_combo->itemData(i).toString()); });
    rebuildCombo();
}

QStringList ModelPicker::recentModels() const { return QSettings().value("recentModels").toStringList(); }

void ModelPicker::rememberRecent(const QString& path) {
    if (path == kDemo || path == embeddedModel()) return;
    QStringList recent = recentModels();
    recent.removeAll(path);
    recent.prepend(path);
    while (recent.size() > kMaxRecent) recent.removeLast();
    QSettings().setValue("recentModels", recent);
}

void ModelPicker::rebuildCombo() {
    const QSignalBlocker block(m_combo);
    m_combo->clear();
    if (const QString embedded = embeddedModel(); !embedded.isEmpty()) m_combo->addItem(labelFor(embedded), embedded);
    m_combo->addItem(labelFor(kDemo), kDemo);
    for (const QString& path : recentModels()) m_combo->addItem(labelFor(path), path);
    const int index = m_combo->findData(m_current.isEmpty() ? kDemo : m_current);
    m_combo->setCurrentIndex(std::max(index, 0));
}

void ModelPicker::choose(const QString& path) {
    const QString chosen = path.isEmpty() ? kDemo : path;
    m_current = chosen;
    m_loading = true;  // from now until the worker answers: a queued Generate waits for it
    rememberRecent(chosen);
    rebuildCombo();
    emit loadRequested(chosen);
}

void ModelPicker::openFolder() {
    const QString dir = chooseOpenPath(this, tr("Open a diffusers model folder"), {}, true, QStringLiteral("models"));
    if (!dir.isEmpty()) choose(dir);
}

void ModelPicker::openFile() {
    const QString file =
        chooseOpenPath(this, tr("Open a checkpoint"), tr("Checkpoints (*.safetensors)"), false, QStringLiteral("models"));
    if (!file.isEmpty()) choose(file);
}

void ModelPicker::setLoading(const QString& path, const QString& phase, int done, int total) {
    m_loading = true;
    m_busy->setRange(0, std::max(total, 0));  // 0..0: busy indicator while the number of parts is unknown
    if (total > 0) m_busy->setValue(done);
    m_busy->show();
    m_cancel->show();
    const QString name = QFileInfo(path).fileName().isEmpty() ? path : QFileInfo(path).fileName();
    m_details->setText(total > 0 ? tr("Loading %1: %2 (%3 of %4)…").arg(name, phase).arg(done + 1).arg(total)
                                 : tr("Loading %1: %2…").arg(name, phase));
}

void ModelPicker::setLoaded(const ModelInfo& info) {
    m_loading = false;
    m_busy->hide();
    m_cancel->hide();
    m_info = info;
    m_loaded = m_current = info.path;
    rebuildCombo();
    QStringList lines;
    lines << tr("<b>%1</b> · %2 · %3").arg(info.displayName.toHtmlEscaped(), info.family, info.format);
    lines << tr("weights: %1").arg(info.dtypes.toHtmlEscaped());
    QString size = info.sizeBytes > 0 ? formatBytes(info.sizeBytes) : tr("in memory");
    if (info.parameters > 0) size += tr(" · %1 M parameters").arg(double(info.parameters) / 1e6, 0, 'f', 0);
    if (!info.hash.isEmpty()) size += tr(" · hash %1").arg(info.hash);
    lines << size;
    if (info.loaded) lines << tr("loaded in %1 s").arg(info.loadSeconds, 0, 'f', 2);
    for (const QString& n : info.notes) lines << QStringLiteral("<i>%1</i>").arg(n.toHtmlEscaped());
    m_details->setText(lines.join(QStringLiteral("<br>")));
    emit modelChanged(info);
}

void ModelPicker::setFailed(const QString& path, const QString& message) {
    m_loading = false;
    m_busy->hide();
    m_cancel->hide();
    QString text = QStringLiteral("<span style='color:#b00'>%1</span>").arg(message.toHtmlEscaped());
    // A model that does not open stays out of the recent list.
    QStringList recent = recentModels();
    if (recent.removeAll(path) > 0) QSettings().setValue("recentModels", recent);
    // The previous model is still loaded: keep it selected, so Generate runs it. With none loaded yet, the failed
    // choice stays, and Generate says again what is wrong with it.
    if (!m_loaded.isEmpty() && m_loaded != path) {
        m_current = m_loaded;
        text += QStringLiteral("<br>") + tr("Still using %1.").arg(m_info.displayName.toHtmlEscaped());
    } else {
        m_current = path;
    }
    rebuildCombo();
    m_details->setText(text);
}

} // namespace dd::ui
