#include "ui/preferencesdialog.h"

#include "ui/dialoghooks.h"

#include "core/settings/file_name_template.h"

#include <algorithm>
#include <initializer_list>

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QToolButton>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QGuiApplication>
#include <QRadioButton>
#include <QScreen>
#include <QScrollArea>
#include <QSpinBox>
#include <QVBoxLayout>

namespace dd::ui {
namespace {

// A folder list edited as one folder per line.
QPlainTextEdit* folderList(const char* name, const QStringList& folders, int height, QWidget* parent) {
    auto* edit = new QPlainTextEdit(folders.join('\n'), parent);
    edit->setObjectName(name);
    edit->setMaximumHeight(height);
    return edit;
}

QStringList foldersOf(const QPlainTextEdit* edit) {
    QStringList folders;
    for (const QString& line : edit->toPlainText().split('\n'))
        if (!line.trimmed().isEmpty()) folders << line.trimmed();
    return folders;
}

QDoubleSpinBox* number(const char* name, double lo, double hi, int decimals, double value, const QString& suffix, QWidget* parent) {
    auto* s = new QDoubleSpinBox(parent);
    s->setObjectName(name);
    s->setRange(lo, hi);
    s->setDecimals(decimals);
    s->setValue(value);
    s->setSuffix(suffix);
    return s;
}

} // namespace

PreferencesDialog::PreferencesDialog(const PriceProfile& price, const AppPreferences& prefs, QWidget* parent) : QDialog(parent) {
    setObjectName("preferencesDialog");
    setWindowTitle(tr("Preferences"));
    setMinimumWidth(620);  // folder paths and the lists' placeholders on one or two lines
    m_autosave = new QCheckBox(tr("Save every finished image, with its settings"), this);
    m_autosave->setObjectName("autosave");
    m_autosave->setChecked(prefs.autosave);
    m_outputFolder = new QLineEdit(prefs.outputFolder, this);
    m_outputFolder->setObjectName("outputFolder");
    auto* browseOutput = new QToolButton(this);
    browseOutput->setText(tr("…"));
    connect(browseOutput, &QToolButton::clicked, this, [this] {
        const QString dir = chooseOpenPath(this, tr("Output folder"), {}, true);
        if (!dir.isEmpty()) m_outputFolder->setText(dir);
    });
    auto* outputRow = new QHBoxLayout;
    outputRow->addWidget(m_outputFolder, 1);
    outputRow->addWidget(browseOutput);
    m_nameTemplate = new QLineEdit(prefs.nameTemplate, this);
    m_nameTemplate->setObjectName("nameTemplate");
    m_nameTemplate->setToolTip(tr("As the command line's --name: {counter:05} {seed} {prompt:6} {model} {sampler} {steps} "
                                  "{width} {height} {index} {date} {time}"));
    m_format = new QComboBox(this);
    m_format->setObjectName("imageFormat");
    m_format->addItem(tr("PNG (lossless)"), QStringLiteral("png"));
    m_format->addItem(tr("JPEG"), QStringLiteral("jpg"));
    m_format->addItem(tr("WebP"), QStringLiteral("webp"));
    m_format->setCurrentIndex(std::max(0, m_format->findData(prefs.format)));
    m_quality = new QSpinBox(this);
    m_quality->setObjectName("imageQuality");
    m_quality->setRange(1, 100);
    m_quality->setValue(prefs.quality);
    m_quality->setToolTip(tr("JPEG and WebP (WebP 100 is lossless)"));
    auto syncFormat = [this] { m_quality->setEnabled(m_format->currentData().toString() != QLatin1String("png")); };
    connect(m_format, &QComboBox::currentIndexChanged, this, syncFormat);
    syncFormat();
    auto* saving = new QGroupBox(tr("Saving"), this);
    auto* savingForm = new QFormLayout(saving);
    savingForm->addRow(m_autosave);
    savingForm->addRow(tr("Output folder"), outputRow);
    savingForm->addRow(new QLabel(tr("Each day's images go into a sub-folder named by the date."), saving));
    savingForm->addRow(tr("File names"), m_nameTemplate);
    savingForm->addRow(tr("Format"), m_format);
    savingForm->addRow(tr("Quality"), m_quality);
    m_watchedFolders = folderList("watchedFolders", prefs.watchedFolders, 46, this);
    m_watchedFolders->setPlaceholderText(tr("Other folders whose images join the library, one per line"));
    m_watchedFolders->setToolTip(tr("Images other programs save there (A1111, ComfyUI, a download folder) appear in "
                                    "the library with the settings their metadata holds, and new ones while the app runs."));
    savingForm->addRow(tr("Watched folders"), m_watchedFolders);

    m_cloud = new QRadioButton(tr("Cloud GPU, billed per hour"), this);
    m_cloud->setObjectName("priceCloud");
    m_local = new QRadioButton(tr("Local GPU, electricity"), this);
    m_local->setObjectName("priceLocal");
    (price.mode == PriceProfile::Mode::Cloud ? m_cloud : m_local)->setChecked(true);
    m_usdPerHour = number("usdPerHour", 0, 1000, 3, price.usdPerHour, tr(" USD/h"), this);
    m_watts = number("watts", 0, 5000, 0, price.watts, tr(" W"), this);
    m_usdPerKwh = number("usdPerKwh", 0, 10, 3, price.usdPerKwh, tr(" USD/kWh"), this);
    auto sync = [this] {
        m_usdPerHour->setEnabled(m_cloud->isChecked());
        m_watts->setEnabled(m_local->isChecked());
        m_usdPerKwh->setEnabled(m_local->isChecked());
    };
    connect(m_cloud, &QRadioButton::toggled, this, sync);
    sync();

    auto* group = new QGroupBox(tr("Show the cost per image (status bar and sidecars)"), this);
    group->setObjectName("costPerImage");
    group->setCheckable(true);
    group->setChecked(price.enabled);
    m_costGroup = group;
    auto* form = new QFormLayout(group);
    form->addRow(m_cloud);
    form->addRow(tr("Price"), m_usdPerHour);
    form->addRow(m_local);
    form->addRow(tr("Power draw"), m_watts);
    form->addRow(tr("Electricity"), m_usdPerKwh);
    m_taesd = new QCheckBox(tr("Live previews through TAESD when available"), this);
    m_taesd->setObjectName("taesdPreviews");
    m_taesd->setToolTip(tr("A tiny decoder: a real picture at every previewed step. Without it, a colour approximation "
                           "at 1/8 size."));
    m_taesd->setChecked(prefs.taesdPreviews);
    m_taesdFolder = new QLineEdit(prefs.taesdFolder, this);
    m_taesdFolder->setObjectName("taesdFolder");
    m_taesdFolder->setPlaceholderText(tr("next to the model (taesd/, taesdxl/)"));
    auto* browse = new QToolButton(this);
    browse->setText(tr("…"));
    connect(browse, &QToolButton::clicked, this, [this] {
        const QString dir = chooseOpenPath(this, tr("TAESD folder"), {}, true);
        if (!dir.isEmpty()) m_taesdFolder->setText(dir);
    });
    connect(m_taesd, &QCheckBox::toggled, m_taesdFolder, &QWidget::setEnabled);
    m_taesdFolder->setEnabled(prefs.taesdPreviews);
    auto* folderRow = new QHBoxLayout;
    folderRow->addWidget(m_taesdFolder, 1);
    folderRow->addWidget(browse);
    auto* previews = new QGroupBox(tr("Live preview"), this);
    auto* previewForm = new QFormLayout(previews);
    previewForm->addRow(m_taesd);
    previewForm->addRow(tr("TAESD folder"), folderRow);

    // Each list is a few lines tall, its use in the placeholder and tooltip: the dialog fits a 800 px screen.
    auto folders = [this](const char* name, const QStringList& list, const QString& use) {
        QPlainTextEdit* edit = folderList(name, list, 46, this);
        edit->setPlaceholderText(use);
        edit->setToolTip(use);
        return edit;
    };
    m_modelFolders = folders("modelFolders", prefs.modelFolders,
                             tr("Searched, with the recent models' folders, for the model a restored image was made with "
                                "(by its hash)"));
    m_upscalerFolders = folders("upscalerFolders", prefs.upscalerFolders,
                                tr("ESRGAN, Real-ESRGAN and SwinIR networks (.safetensors) for Upscale and the hires fix, "
                                   "by name (before DD_UPSCALER_PATH)"));
    m_loraFolders = folders("loraFolders", prefs.loraFolders,
                            tr("Where <lora:name:weight> in a prompt is looked for, with sub-folders (before DD_LORA_PATH)"));
    m_wildcardFolders = folders("wildcardFolders", prefs.wildcardFolders,
                                tr("Where __name__ in a prompt finds name.txt: one line of it, picked by the seed"));
    m_embeddingFolders = folders("embeddingFolders", prefs.embeddingFolders,
                                 tr("Textual-inversion embeddings (.safetensors) a prompt names, e.g. a negative embedding; "
                                    "also an \"embeddings\" folder beside the LoRA folders"));
    auto* models = new QGroupBox(tr("Folders (one per line)"), this);
    auto* modelsLayout = new QFormLayout(models);
    modelsLayout->addRow(tr("Models"), m_modelFolders);
    modelsLayout->addRow(tr("Upscalers"), m_upscalerFolders);
    modelsLayout->addRow(tr("LoRAs"), m_loraFolders);
    modelsLayout->addRow(tr("Wildcards"), m_wildcardFolders);
    modelsLayout->addRow(tr("Embeddings"), m_embeddingFolders);

    m_threads = new QSpinBox(this);
    m_threads->setObjectName("threads");
    m_threads->setRange(0, 256);
    m_threads->setValue(prefs.threads);
    m_threads->setSpecialValueText(tr("Automatic: follows the load"));
    m_threads->setToolTip(tr("CPU threads for a run whose memory plan names none. Automatic looks again between steps, "
                             "so a compile or a game started meanwhile slows the run less. Determinism mode keeps one "
                             "count for every run."));
    auto* engine = new QGroupBox(tr("Engine"), this);
    auto* engineForm = new QFormLayout(engine);
    engineForm->addRow(tr("CPU threads"), m_threads);

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    // A template that cannot name a file is refused here, not at the first autosave.
    connect(buttons, &QDialogButtonBox::accepted, this, [this] {
        try {
            settings::expandFileName(m_nameTemplate->text().trimmed().toStdString(), {});
        } catch (const std::invalid_argument& e) {
            m_nameTemplate->setFocus();
            m_nameTemplate->setToolTip(QString::fromStdString(e.what()));
            m_nameTemplate->setStyleSheet(QStringLiteral("border: 1px solid #b00"));
            return;
        }
        accept();
    });
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* content = new QWidget(this);
    auto* contentLayout = new QVBoxLayout(content);
    contentLayout->setContentsMargins(0, 0, 0, 0);
    for (QWidget* part : std::initializer_list<QWidget*>{saving, previews, models, engine, group}) contentLayout->addWidget(part);
    auto* scroll = new QScrollArea(this);
    scroll->setWidget(content);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    // As tall as its content where the screen allows; on a small one (1280 × 800) it scrolls, OK stays in sight.
    const QScreen* screen = parent ? parent->screen() : QGuiApplication::primaryScreen();
    const int room = screen ? screen->availableGeometry().height() - 140 : 640;
    scroll->setMinimumHeight(std::min(content->sizeHint().height(), room));
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(scroll);
    layout->addWidget(buttons);
}

PriceProfile PreferencesDialog::price() const {
    PriceProfile p;
    p.enabled = m_costGroup->isChecked();
    p.mode = m_cloud->isChecked() ? PriceProfile::Mode::Cloud : PriceProfile::Mode::Local;
    p.usdPerHour = m_usdPerHour->value();
    p.watts = m_watts->value();
    p.usdPerKwh = m_usdPerKwh->value();
    return p;
}

AppPreferences PreferencesDialog::preferences() const {
    AppPreferences p;
    p.autosave = m_autosave->isChecked();
    p.outputFolder = m_outputFolder->text().trimmed();
    if (p.outputFolder.isEmpty()) p.outputFolder = AppPreferences::defaultOutputFolder();
    p.nameTemplate = m_nameTemplate->text().trimmed();
    if (p.nameTemplate.isEmpty()) p.nameTemplate = QString::fromLatin1(kDayFolderNameTemplate);
    p.format = m_format->currentData().toString();
    p.quality = m_quality->value();
    p.taesdPreviews = m_taesd->isChecked();
    p.taesdFolder = m_taesdFolder->text().trimmed();
    p.modelFolders = foldersOf(m_modelFolders);
    p.upscalerFolders = foldersOf(m_upscalerFolders);
    p.loraFolders = foldersOf(m_loraFolders);
    p.wildcardFolders = foldersOf(m_wildcardFolders);
    p.embeddingFolders = foldersOf(m_embeddingFolders);
    p.watchedFolders = foldersOf(m_watchedFolders);
    p.threads = m_threads->value();
    return p;
}

} // namespace dd::ui
