#include "ui/promptpanel.h"

#include "core/sched/scheduler.h"
#include "ui/dialoghooks.h"
#include "ui/prompthighlighter.h"
#include "ui/section.h"
#include "ui/stylesbox.h"
#include "ui/textencoderbox.h"
#include "ui/tokencounter.h"

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QPlainTextEdit>
#include <QRandomGenerator>
#include <QSpinBox>
#include <QTimer>
#include <QToolButton>

namespace dd::ui {
namespace {

QSpinBox* spin(const char* name, int lo, int hi, int step, QWidget* parent) {
    auto* s = new QSpinBox(parent);
    s->setObjectName(name);
    s->setRange(lo, hi);
    s->setSingleStep(step);
    return s;
}

// A combo box whose items carry the settings value they stand for.
QComboBox* choice(const char* name, std::initializer_list<std::pair<QString, const char*>> items, QWidget* parent) {
    auto* c = new QComboBox(parent);
    c->setObjectName(name);
    for (const auto& [label, value] : items) c->addItem(label, QString::fromLatin1(value));
    return c;
}

QToolButton* toolButton(const char* name, const QString& text, const QString& tip, QWidget* parent) {
    auto* b = new QToolButton(parent);
    b->setObjectName(name);
    b->setText(text);
    b->setToolTip(tip);
    return b;
}

// The resolutions each family was trained around (A1111 / SDXL bucket lists).
QList<QSize> sizesFor(const QString& family, bool demo) {
    QList<QSize> sizes;
    if (demo) sizes << QSize(64, 64) << QSize(128, 128);
    if (family.startsWith(QLatin1String("SDXL")))
        sizes << QSize(1024, 1024) << QSize(1152, 896) << QSize(896, 1152) << QSize(1216, 832) << QSize(832, 1216)
              << QSize(1344, 768) << QSize(768, 1344) << QSize(1536, 640) << QSize(640, 1536);
    else if (family.startsWith(QLatin1String("SD 2")))
        sizes << QSize(768, 768) << QSize(512, 512) << QSize(768, 512) << QSize(512, 768) << QSize(1024, 576);
    else
        sizes << QSize(512, 512) << QSize(512, 768) << QSize(768, 512) << QSize(640, 640) << QSize(768, 768);
    return sizes;
}

} // namespace

PromptPanel::PromptPanel(QWidget* parent) : QWidget(parent) {
    m_prompt = new QPlainTextEdit(this);
    m_prompt->setObjectName("prompt");
    m_prompt->setTabChangesFocus(true);  // Tab leaves the box, as in every form
    m_prompt->setPlaceholderText(tr("What to draw. (word:1.3) stresses, [word] softens, BREAK starts a new chunk."));
    m_negative = new QPlainTextEdit(this);
    m_negative->setObjectName("negativePrompt");
    m_negative->setTabChangesFocus(true);
    m_negative->setPlaceholderText(tr("What to avoid"));
    m_prompt->setMinimumHeight(70);
    m_prompt->setMaximumHeight(110);
    m_negative->setMaximumHeight(60);
    new PromptHighlighter(m_prompt->document());
    new PromptHighlighter(m_negative->document());
    m_promptTokens = new QLabel(this);
    m_promptTokens->setObjectName("promptTokens");
    m_negativeTokens = new QLabel(this);
    m_negativeTokens->setObjectName("negativeTokens");
    m_lastPromptBox = m_prompt;
    m_embeddingsButton = new QToolButton(this);
    m_embeddingsButton->setObjectName("embeddingsButton");
    m_embeddingsButton->setPopupMode(QToolButton::InstantPopup);
    m_embeddingsButton->setAutoRaise(true);
    m_embeddingsButton->setMenu(new QMenu(m_embeddingsButton));
    m_focusWatch = connect(qApp, &QApplication::focusChanged, this, [this](QWidget*, QWidget* now) {
        if (now == m_prompt || now == m_negative) m_lastPromptBox = static_cast<QPlainTextEdit*>(now);
    });
    for (auto* l : {m_promptTokens, m_negativeTokens}) {
        l->setAlignment(Qt::AlignRight);
        l->setToolTip(tr("CLIP tokens / capacity; past 75 the prompt continues in another 75-token chunk"));
    }
    // Count after typing pauses, not per keystroke.
    m_countTimer = new QTimer(this);
    m_countTimer->setSingleShot(true);
    m_countTimer->setInterval(150);
    connect(m_countTimer, &QTimer::timeout, this, &PromptPanel::updateTokenCounts);
    connect(m_prompt, &QPlainTextEdit::textChanged, m_countTimer, qOverload<>(&QTimer::start));
    connect(m_negative, &QPlainTextEdit::textChanged, m_countTimer, qOverload<>(&QTimer::start));

    m_sampler = new QComboBox(this);
    m_sampler->setObjectName("sampler");
    for (const auto& name : api::samplerNames()) m_sampler->addItem(QString::fromStdString(name));
    // Scheduler settings over the model's configuration: a single file cannot say whether an SD 2.x model
    // predicts ε or v, and A1111 users expect "leading" spacing where diffusers' samplers default to others.
    m_predictionType = choice("predictionType", {{tr("Model's prediction"), ""}, {tr("ε (epsilon)"), "epsilon"},
                                                 {tr("v-prediction"), "v_prediction"}}, this);
    m_predictionType->setToolTip(tr("What the UNet predicts. SD 2.x base (512) single files need ε; "
                                    "the weights cannot tell (docs/single-file.md)"));
    m_timestepSpacing = choice("timestepSpacing", {{tr("Sampler's spacing"), ""}, {tr("linspace"), "linspace"},
                                                   {tr("leading"), "leading"}, {tr("trailing"), "trailing"}}, this);
    m_timestepSpacing->setToolTip(tr("Which training timesteps the steps visit; the model's or the sampler's "
                                     "own default when left as it is"));
    m_scheduleType = choice("scheduleType", {{tr("Default schedule"), ""}}, this);
    for (const auto& label : api::scheduleTypes()) m_scheduleType->addItem(QString::fromStdString(label), QString::fromStdString(label));
    m_scheduleType->setToolTip(tr("Default: the sampler as diffusers runs it (DPM2, DPM++ SDE and the others only "
                                  "k-diffusion has run over A1111's Automatic schedule).\nA schedule type runs "
                                  "k-diffusion's sampler over it, as A1111 and ComfyUI do: what reproduces their images.\n"
                                  "DDIM and PLMS over Automatic run as A1111 runs them, on its own timesteps"));
    // Shown for a restored ComfyUI image only: its k-diffusion differs from A1111's (docs/reproduce.md).
    m_asComfyUi = new QCheckBox(tr("as ComfyUI"), this);
    m_asComfyUi->setObjectName("asComfyUi");
    m_asComfyUi->setToolTip(tr("Sample as ComfyUI does: the UNet at whole timesteps, the starting noise scaled by √(1 + σ²), "
                               "one noise stream over the batch. Restored with ComfyUI and SwarmUI images"));
    m_asComfyUi->hide();
    auto* samplerRow = new QHBoxLayout;
    samplerRow->addWidget(m_sampler, 1);
    samplerRow->addWidget(m_scheduleType, 1);
    samplerRow->addWidget(m_asComfyUi);
    auto* schedulerRow = new QHBoxLayout;  // the scheduler configuration's two overrides
    schedulerRow->addWidget(m_predictionType, 1);
    schedulerRow->addWidget(m_timestepSpacing, 1);
    m_steps = spin("steps", 1, 150, 1, this);
    m_cfg = new QDoubleSpinBox(this);
    m_cfg->setObjectName("cfgScale");
    m_cfg->setRange(0, 30);
    m_cfg->setSingleStep(0.5);
    m_cfg->setToolTip(tr("How strongly the prompt steers the image; 1 or less turns guidance off"));

    m_seed = new QDoubleSpinBox(this);
    m_seed->setObjectName("seed");
    m_seed->setDecimals(0);
    m_seed->setRange(0, 4294967295.0);
    m_random = new QCheckBox(tr("Random"), this);
    m_random->setObjectName("randomSeed");
    m_random->setToolTip(tr("A new seed for every run"));
    connect(m_random, &QCheckBox::toggled, m_seed, &QWidget::setDisabled);
    auto* dice = toolButton("diceSeed", QStringLiteral("⚄"), tr("Roll a random seed and keep it"), this);
    connect(dice, &QToolButton::clicked, this, [this] {
        m_random->setChecked(false);
        m_seed->setValue(double(QRandomGenerator::global()->bounded(quint32(0xffffffffu))));
    });
    auto* reuse = toolButton("reuseSeed", QStringLiteral("♻"), tr("Reuse the last run's seed"), this);
    connect(reuse, &QToolButton::clicked, this, [this] {
        if (m_lastSeed < 0) return;
        m_random->setChecked(false);
        m_seed->setValue(double(m_lastSeed));
    });
    auto* seedRow = new QHBoxLayout;
    seedRow->addWidget(m_seed, 1);
    seedRow->addWidget(m_random);
    seedRow->addWidget(dice);
    seedRow->addWidget(reuse);

    m_sizePreset = new QComboBox(this);
    m_sizePreset->setObjectName("sizePreset");
    m_width = spin("width", 64, 4096, 8, this);
    m_height = spin("height", 64, 4096, 8, this);
    auto* swap = toolButton("swapSize", QStringLiteral("⇄"), tr("Swap width and height"), this);
    connect(swap, &QToolButton::clicked, this, [this] {
        const int w = m_width->value();
        m_width->setValue(m_height->value());
        m_height->setValue(w);
    });
    connect(m_sizePreset, qOverload<int>(&QComboBox::activated), this, &PromptPanel::applySizePreset);
    auto* sizeRow = new QHBoxLayout;
    sizeRow->addWidget(m_width);
    sizeRow->addWidget(new QLabel(QStringLiteral("×"), this));
    sizeRow->addWidget(m_height);
    sizeRow->addWidget(swap);
    sizeRow->addWidget(m_sizePreset, 1);

    m_batch = spin("batchSize", 1, 16, 1, this);
    m_batch->setToolTip(tr("Images per run (one pass through the model; needs more memory)"));
    m_batchCount = spin("batchCount", 1, 100, 1, this);
    m_batchCount->setToolTip(tr("Runs one after another, the seed advancing each time"));
    auto* batchRow = new QHBoxLayout;
    batchRow->addWidget(new QLabel(tr("size"), this));
    batchRow->addWidget(m_batch);
    batchRow->addWidget(new QLabel(tr("count"), this));
    batchRow->addWidget(m_batchCount);
    batchRow->addStretch();

    // The SDXL refiner (docs/refiner.md): A1111's "Refiner" checkpoint and "Switch at" fraction.
    m_refiner = new QLineEdit(this);
    m_refiner->setObjectName("refiner");
    m_refiner->setPlaceholderText(tr("none"));
    m_refiner->setClearButtonEnabled(true);
    m_refiner->setToolTip(tr("SDXL refiner (diffusers folder or .safetensors): continues the base's denoising from the switch"));
    auto* browse = toolButton("chooseRefiner", QStringLiteral("…"), tr("Choose a refiner file"), this);
    connect(browse, &QToolButton::clicked, this, [this] {
        const QString path =
            chooseOpenPath(this, tr("SDXL refiner"), tr("Checkpoints (*.safetensors)"), false, QStringLiteral("models"));
        if (path.isEmpty()) return;
        m_refiner->setText(path);
        emit shapeChanged();
    });
    connect(m_refiner, &QLineEdit::editingFinished, this, &PromptPanel::shapeChanged);  // the prediction counts it
    m_refinerSwitch = new QDoubleSpinBox(this);
    m_refinerSwitch->setObjectName("refinerSwitch");
    m_refinerSwitch->setRange(0.01, 0.99);
    m_refinerSwitch->setSingleStep(0.05);
    m_refinerSwitch->setDecimals(2);
    m_refinerSwitch->setPrefix(tr("switch at "));
    m_refinerSwitch->setToolTip(tr("Fraction of the schedule the base runs before the refiner takes over"));
    auto* refinerBox = new QWidget(this);
    refinerBox->setObjectName("refinerBox");
    auto* refinerRow = new QHBoxLayout(refinerBox);
    refinerRow->setContentsMargins(0, 0, 0, 0);
    refinerRow->addWidget(m_refiner, 1);
    refinerRow->addWidget(browse);
    refinerRow->addWidget(m_refinerSwitch);

    auto* form = new QFormLayout(this);
    form->setContentsMargins(0, 0, 0, 0);
    form->addRow(tr("Prompt"), m_prompt);
    form->addRow(QString(), m_promptTokens);
    form->addRow(tr("Negative"), m_negative);
    auto* negativeRow = new QHBoxLayout;
    negativeRow->addWidget(m_embeddingsButton);
    negativeRow->addWidget(m_negativeTokens, 1);
    form->addRow(QString(), negativeRow);
    m_styles = new StylesBox(m_prompt, m_negative, this);
    m_stylesSection = new Section(tr("Styles"), m_styles, this);
    connect(m_styles, &StylesBox::appliedChanged, this, [this] {
        QStringList names;
        for (const auto& n : m_styles->applied()) names << QString::fromStdString(n);
        m_stylesSection->setSummary(names.isEmpty() ? tr("none") : names.join(QStringLiteral(", ")));
    });
    connect(m_styles, &StylesBox::notice, this, &PromptPanel::notice);
    form->addRow(m_stylesSection);
    m_textEncoder = new TextEncoderBox(this);
    m_textEncoderSection = new Section(tr("Prompt reading"), m_textEncoder, this);
    m_textEncoderSection->setObjectName("textEncoderSection");
    connect(m_textEncoder, &TextEncoderBox::changed, this, &PromptPanel::updateTextEncoderSummary);
    connect(m_textEncoder, &TextEncoderBox::changed, this, &PromptPanel::edited);
    form->addRow(m_textEncoderSection);
    form->addRow(tr("Sampler"), samplerRow);
    form->addRow(tr("Scheduler"), schedulerRow);
    form->addRow(tr("Steps"), m_steps);
    form->addRow(tr("CFG scale"), m_cfg);
    form->addRow(tr("Seed"), seedRow);
    m_variationSection = new Section(tr("Variation seed and noise"), buildVariationBox(), this);
    form->addRow(m_variationSection);
    form->addRow(tr("Size"), sizeRow);
    form->addRow(tr("Batch"), batchRow);
    // Few runs use a refiner: one folded line until it is wanted (or set).
    m_refinerSection = new Section(tr("Refiner (SDXL)"), refinerBox, this);
    connect(m_refiner, &QLineEdit::textChanged, this, &PromptPanel::updateRefinerSummary);
    connect(m_refinerSwitch, qOverload<double>(&QDoubleSpinBox::valueChanged), this, &PromptPanel::updateRefinerSummary);
    form->addRow(m_refinerSection);
    for (auto* spinBox : {m_width, m_height, m_batch})
        connect(spinBox, qOverload<int>(&QSpinBox::valueChanged), this, &PromptPanel::shapeChanged);
    connect(m_cfg, qOverload<double>(&QDoubleSpinBox::valueChanged), this, &PromptPanel::shapeChanged);
    for (auto* text : {m_prompt, m_negative}) connect(text, &QPlainTextEdit::textChanged, this, &PromptPanel::edited);
    for (auto* number : {m_seed, m_cfg}) connect(number, qOverload<double>(&QDoubleSpinBox::valueChanged), this, &PromptPanel::edited);
    connect(m_steps, qOverload<int>(&QSpinBox::valueChanged), this, &PromptPanel::edited);
    connect(m_sampler, qOverload<int>(&QComboBox::currentIndexChanged), this, &PromptPanel::edited);
    connect(m_sampler, qOverload<int>(&QComboBox::currentIndexChanged), this, &PromptPanel::showSamplerChoices);
    connect(m_scheduleType, qOverload<int>(&QComboBox::currentIndexChanged), this, &PromptPanel::showSamplerChoices);
    connect(m_scheduleType, qOverload<int>(&QComboBox::currentIndexChanged), this, &PromptPanel::edited);
    connect(m_asComfyUi, &QCheckBox::toggled, this, &PromptPanel::edited);
    setModelFamily(QStringLiteral("SD 1.x"), false);
    setSettings({});
    updateEmbeddingsMenu();
}

PromptPanel::~PromptPanel() { disconnect(m_focusWatch); }

void PromptPanel::setModelFamily(const QString& family, bool demo) {
    m_sizePreset->clear();
    m_sizePreset->addItem(tr("Presets…"));
    for (const QSize& s : sizesFor(family, demo))
        m_sizePreset->addItem(QStringLiteral("%1 × %2").arg(s.width()).arg(s.height()), s);
}

void PromptPanel::applySizePreset(int index) {
    const QSize s = m_sizePreset->itemData(index).toSize();
    if (s.isEmpty()) return;
    m_width->setValue(s.width());
    m_height->setValue(s.height());
    m_sizePreset->setCurrentIndex(0);
}

void PromptPanel::updateTokenCounts() {
    m_promptTokens->setText(tokenCountLabel(countTokens(m_prompt->toPlainText(), &m_embeddings)));
    m_negativeTokens->setText(tokenCountLabel(countTokens(m_negative->toPlainText(), &m_embeddings)));
}

void PromptPanel::setEmbeddingFolders(const std::vector<std::string>& folders) {
    m_embeddings = text::EmbeddingLibrary::scan(folders);
    updateEmbeddingsMenu();
    updateTokenCounts();
}

// A1111's extra networks, for embeddings: a name goes into the prompt box last used, after a comma.
void PromptPanel::updateEmbeddingsMenu() {
    QMenu* menu = m_embeddingsButton->menu();
    menu->clear();
    const int n = int(m_embeddings.files.size());
    m_embeddingsButton->setText(tr("Embeddings (%1)").arg(n));
    m_embeddingsButton->setToolTip(n ? tr("Textual inversions: a name goes into the prompt box you used last")
                                     : tr("No textual-inversion embeddings: set their folder in Preferences"));
    for (const auto& f : m_embeddings.files) {
        QAction* a = menu->addAction(QString::fromStdString(f.name));
        const QString kind = QString::fromStdString(f.kind());
        a->setToolTip(f.vectors == 1 ? tr("%1 · 1 vector").arg(kind) : tr("%1 · %2 vectors").arg(kind).arg(f.vectors));
        connect(a, &QAction::triggered, this, [this, name = QString::fromStdString(f.name)] {
            QPlainTextEdit* box = m_lastPromptBox;
            const QString text = box->toPlainText().trimmed();
            box->setPlainText(text.isEmpty() ? name : text + QStringLiteral(", ") + name);
            box->setFocus();
        });
    }
    if (!m_embeddings.problems.empty()) {
        menu->addSeparator();
        for (const auto& p : m_embeddings.problems) menu->addAction(QString::fromStdString(p.message))->setEnabled(false);
    }
    menu->setToolTipsVisible(true);
}

// A schedule type applies to A1111's samplers; timestep spacing to diffusers' (A1111's follow their schedule).
void PromptPanel::showSamplerChoices() {
    api::GenerationSettings s;
    s.sampler = m_sampler->currentText().toStdString();
    s.scheduleType = m_scheduleType->currentData().toString().toStdString();
    m_scheduleType->setEnabled(api::takesScheduleType(s.sampler));
    m_timestepSpacing->setEnabled(!api::runsKDiffusion(s) && !api::runsA1111Timesteps(s));
}

api::GenerationSettings PromptPanel::settings() const {
    api::GenerationSettings s = m_hidden;
    s.sampleAs = m_asComfyUi->isChecked() ? "ComfyUI" : "A1111";
    s.prompt = m_prompt->toPlainText().toStdString();
    s.negativePrompt = m_negative->toPlainText().toStdString();
    s.seed = int64_t(m_seed->value());
    s.steps = m_steps->value();
    s.cfgScale = m_cfg->value();
    s.sampler = m_sampler->currentText().toStdString();
    s.scheduleType = m_scheduleType->isEnabled() ? m_scheduleType->currentData().toString().toStdString() : std::string();
    s.predictionType = m_predictionType->currentData().toString().toStdString();
    s.timestepSpacing = m_timestepSpacing->currentData().toString().toStdString();
    s.width = m_width->value();
    s.height = m_height->value();
    s.batchSize = m_batch->value();
    const std::string refiner = m_refiner->text().trimmed().toStdString();
    if (refiner != s.refiner.model) s.refiner.hash.clear();  // the engine fills in the chosen one's
    s.refiner.model = refiner;
    s.refiner.switchAt = m_refinerSwitch->value();
    s.styles = m_styles->applied();
    m_textEncoder->applyTo(s);
    s.variation.seed = int64_t(m_variationSeed->value());
    s.variation.strength = m_variationStrength->value();
    s.variation.resizeFromWidth = m_resizeFromWidth->value();
    s.variation.resizeFromHeight = m_resizeFromHeight->value();
    s.rng = m_rng->currentData().toString().toStdString();
    s.ensd = m_ensd->value();
    return s;
}

void PromptPanel::setSettings(const api::GenerationSettings& s) {
    m_hidden = s;
    m_asComfyUi->setChecked(s.sampleAs == "ComfyUI");
    m_asComfyUi->setVisible(s.sampleAs == "ComfyUI");
    m_prompt->setPlainText(QString::fromStdString(s.prompt));
    m_negative->setPlainText(QString::fromStdString(s.negativePrompt));
    m_seed->setValue(double(s.seed));
    m_steps->setValue(s.steps);
    m_cfg->setValue(s.cfgScale);
    const int sampler = m_sampler->findText(QString::fromStdString(s.sampler));
    if (sampler >= 0) m_sampler->setCurrentIndex(sampler);
    m_scheduleType->setCurrentIndex(std::max(0, m_scheduleType->findData(QString::fromStdString(s.scheduleType))));
    showSamplerChoices();
    m_predictionType->setCurrentIndex(std::max(0, m_predictionType->findData(QString::fromStdString(s.predictionType))));
    m_timestepSpacing->setCurrentIndex(std::max(0, m_timestepSpacing->findData(QString::fromStdString(s.timestepSpacing))));
    m_width->setValue(s.width);
    m_height->setValue(s.height);
    m_batch->setValue(s.batchSize);
    m_refiner->setText(QString::fromStdString(s.refiner.model));
    m_refinerSwitch->setValue(s.refiner.switchAt);
    if (s.refiner.enabled()) m_refinerSection->setExpanded(true);  // restored settings show what they use
    m_styles->setApplied(s.styles);
    m_textEncoder->setFrom(s);
    if (!m_textEncoder->summary().isEmpty()) m_textEncoderSection->setExpanded(true);
    updateTextEncoderSummary();
    m_variationSeed->setValue(double(s.variation.seed));
    m_variationStrength->setValue(s.variation.strength);
    m_resizeFromWidth->setValue(s.variation.resizeFromWidth);
    m_resizeFromHeight->setValue(s.variation.resizeFromHeight);
    m_rng->setCurrentIndex(std::max(0, m_rng->findData(QString::fromStdString(s.rng))));
    m_ensd->setValue(int(std::clamp<int64_t>(s.ensd, 0, 2147483647)));
    if (s.variation.enabled() || s.rng != "CPU" || s.ensd != 0) m_variationSection->setExpanded(true);
    updateVariationSummary();
    updateTokenCounts();
}

// Seed, strength and "seed resize from" (0 × 0: off), as A1111's "Extra" seed options.
QWidget* PromptPanel::buildVariationBox() {
    auto* box = new QWidget(this);
    box->setObjectName("variationBox");
    m_variationSeed = new QDoubleSpinBox(box);
    m_variationSeed->setObjectName("variationSeed");
    m_variationSeed->setDecimals(0);
    m_variationSeed->setRange(0, 4294967295.0);
    m_variationSeed->setToolTip(tr("The seed whose noise this picture's is blended towards"));
    auto* dice = toolButton("diceVariationSeed", QStringLiteral("⚄"), tr("Roll a random variation seed"), box);
    connect(dice, &QToolButton::clicked, this,
            [this] { m_variationSeed->setValue(double(QRandomGenerator::global()->bounded(quint32(0xffffffffu)))); });
    m_variationStrength = new QDoubleSpinBox(box);
    m_variationStrength->setObjectName("variationStrength");
    m_variationStrength->setRange(0, 1);
    m_variationStrength->setSingleStep(0.05);
    m_variationStrength->setDecimals(2);
    m_variationStrength->setPrefix(tr("strength "));
    m_variationStrength->setToolTip(tr("0 keeps the picture, 1 is the variation seed's own; a batch then keeps the seed "
                                       "and counts the variation seed on"));
    m_resizeFromWidth = spin("resizeFromWidth", 0, 8192, 8, box);
    m_resizeFromHeight = spin("resizeFromHeight", 0, 8192, 8, box);
    for (QSpinBox* s : {m_resizeFromWidth, m_resizeFromHeight}) {
        s->setSpecialValueText(tr("off"));
        s->setToolTip(tr("Seed resize from: the noise drawn as for this size, so a picture keeps its composition at "
                         "another size (0: off)"));
    }
    auto* grid = new QGridLayout(box);
    grid->setContentsMargins(0, 0, 0, 0);
    auto* seedRow = new QHBoxLayout;
    seedRow->addWidget(m_variationSeed, 1);
    seedRow->addWidget(dice);
    seedRow->addWidget(m_variationStrength);
    grid->addLayout(seedRow, 0, 0, 1, 4);
    grid->addWidget(new QLabel(tr("resize from"), box), 1, 0);
    grid->addWidget(m_resizeFromWidth, 1, 1);
    grid->addWidget(new QLabel(QStringLiteral("×"), box), 1, 2);
    grid->addWidget(m_resizeFromHeight, 1, 3);
    m_rng = new QComboBox(box);
    m_rng->setObjectName("rng");
    m_rng->addItem(tr("CPU"), QStringLiteral("CPU"));
    m_rng->addItem(tr("NV (as NVIDIA cards)"), QStringLiteral("NV"));
    // Not as wide as its longest item: the settings column follows the panel's minimum width, which this box need
    // not set.
    m_rng->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_rng->setMinimumContentsLength(6);
    m_rng->setToolTip(tr("Where the noise comes from: the CPU's generator (A1111's CPU, diffusers), or the numbers an NVIDIA "
                         "card draws (A1111's NV and, within 1e-6, its default GPU): the same seed then gives their picture"));
    m_ensd = spin("ensd", 0, 2147483647, 1, box);
    m_ensd->setPrefix(tr("ENSD "));
    m_ensd->setSpecialValueText(tr("ENSD off"));
    m_ensd->setToolTip(tr("A1111's Eta noise seed delta: ancestral samplers' later noise comes from seed + this (31337 "
                          "in many shared images)"));
    grid->addWidget(new QLabel(tr("noise"), box), 2, 0);
    grid->addWidget(m_rng, 2, 1);
    grid->addWidget(m_ensd, 2, 3);
    connect(m_rng, qOverload<int>(&QComboBox::currentIndexChanged), this, &PromptPanel::updateVariationSummary);
    connect(m_ensd, qOverload<int>(&QSpinBox::valueChanged), this, &PromptPanel::updateVariationSummary);
    connect(m_variationSeed, qOverload<double>(&QDoubleSpinBox::valueChanged), this, &PromptPanel::updateVariationSummary);
    connect(m_variationStrength, qOverload<double>(&QDoubleSpinBox::valueChanged), this, &PromptPanel::updateVariationSummary);
    for (QSpinBox* s : {m_resizeFromWidth, m_resizeFromHeight})
        connect(s, qOverload<int>(&QSpinBox::valueChanged), this, &PromptPanel::updateVariationSummary);
    for (QDoubleSpinBox* s : {m_variationSeed, m_variationStrength})
        connect(s, qOverload<double>(&QDoubleSpinBox::valueChanged), this, &PromptPanel::edited);
    return box;
}

void PromptPanel::updateVariationSummary() {
    QStringList parts;
    if (m_variationStrength->value() > 0)
        parts << tr("%1 towards %2").arg(m_variationStrength->value(), 0, 'f', 2).arg(qint64(m_variationSeed->value()));
    if (m_resizeFromWidth->value() > 0 && m_resizeFromHeight->value() > 0)
        parts << tr("from %1 × %2").arg(m_resizeFromWidth->value()).arg(m_resizeFromHeight->value());
    if (m_rng->currentData().toString() != QLatin1String("CPU")) parts << tr("NV noise");
    if (m_ensd->value() != 0) parts << tr("ENSD %1").arg(m_ensd->value());
    m_variationSection->setSummary(parts.isEmpty() ? tr("off") : parts.join(QStringLiteral(" · ")));
}

void PromptPanel::updateTextEncoderSummary() {
    const QString summary = m_textEncoder->summary();
    m_textEncoderSection->setSummary(summary.isEmpty() ? tr("defaults") : summary);
}

void PromptPanel::updateRefinerSummary() {
    const QString path = m_refiner->text().trimmed();
    m_refinerSection->setSummary(path.isEmpty() ? tr("none")
                                                : tr("%1 from %2").arg(QFileInfo(path).fileName()).arg(m_refinerSwitch->value(), 0, 'f', 2));
}

int64_t PromptPanel::takeSeed() {
    if (m_random->isChecked()) m_seed->setValue(double(QRandomGenerator::global()->bounded(quint32(0xffffffffu))));
    m_lastSeed = int64_t(m_seed->value());
    return m_lastSeed;
}

void PromptPanel::setStylesFile(const QString& path) { m_styles->setFile(path); }

void PromptPanel::setRefinerPath(const QString& path) {
    m_refiner->setText(path);
    emit shapeChanged();
}

bool PromptPanel::randomSeed() const { return m_random->isChecked(); }
void PromptPanel::setRandomSeed(bool on) { m_random->setChecked(on); }
int PromptPanel::batchCount() const { return m_batchCount->value(); }
void PromptPanel::setBatchCount(int runs) { m_batchCount->setValue(runs); }

} // namespace dd::ui
