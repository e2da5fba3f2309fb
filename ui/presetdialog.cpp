#include "ui/presetdialog.h"

#include "ui/modelinfo.h"

#include "core/memory/plan_effects.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>

namespace dd::ui {
namespace {


QComboBox* combo(const QStringList& items, int current, const QString& name, QWidget* parent) {
    auto* c = new QComboBox(parent);
    c->setObjectName(name);
    c->addItems(items);
    c->setCurrentIndex(current);
    return c;
}

// A checkbox centred in its cell; the cell widget is the container, the checkbox is found by name.
QWidget* centredCheck(bool checked, const QString& name, QWidget* parent, QCheckBox** out) {
    auto* box = new QWidget(parent);
    auto* c = new QCheckBox(box);
    c->setObjectName(name);
    c->setChecked(checked);
    auto* l = new QHBoxLayout(box);
    l->setContentsMargins(0, 0, 0, 0);
    l->setAlignment(Qt::AlignCenter);
    l->addWidget(c);
    *out = c;
    return box;
}

const QStringList kFp8 = {QString(), QStringLiteral("e4m3fn"), QStringLiteral("e5m2")};

} // namespace

PresetDialog::PresetDialog(std::vector<PresetEntry> presets, const QString& recommended, const QString& current,
                           Predictor predictor, QWidget* parent)
    : QDialog(parent), m_presets(std::move(presets)), m_recommended(recommended), m_predictor(std::move(predictor)) {
    setObjectName("presetDialog");
    setWindowTitle(tr("Memory presets"));
    m_table = new QTableWidget(int(m_presets.size()), Columns, this);
    m_table->setObjectName("presetTable");
    m_table->setHorizontalHeaderLabels({tr("Preset"), tr("Budget"), tr("Precision"), tr("Attention"), tr("VAE slicing"),
                                        tr("VAE tiling"), tr("Offload"), tr("fp8 weights"), tr("channels_last"),
                                        tr("Winograd conv"),
                                        tr("Predicted peak"), tr("Strategy")});
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setStretchLastSection(true);
    for (int row = 0; row < int(m_presets.size()); ++row) fillRow(row);
    m_table->resizeColumnsToContents();

    auto* legend = new QLabel(recommended.isEmpty()
                                  ? tr("No preset fits this machine's memory; pick the closest one.")
                                  : tr("Highlighted: <b>%1</b>, the largest preset that fits this machine.").arg(recommended),
                              this);
    legend->setObjectName("recommendation");
    if (m_presets.empty()) legend->setText(tr("No presets found in %1 or %2.").arg(shippedPresetDir(), customPresetDir()));

    m_customName = new QLineEdit(this);
    m_customName->setObjectName("customName");
    m_customName->setPlaceholderText(tr("name for the selected row's toggles"));
    auto* save = new QPushButton(tr("Save as custom preset"), this);
    save->setObjectName("saveCustom");
    connect(save, &QPushButton::clicked, this, &PresetDialog::saveCustom);
    m_message = new QLabel(this);
    m_message->setObjectName("presetMessage");
    auto* saveRow = new QHBoxLayout;
    saveRow->addWidget(m_customName, 1);
    saveRow->addWidget(save);

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

    auto* advanced = new QWidget(this);
    auto* advancedLayout = new QVBoxLayout(advanced);
    advancedLayout->addWidget(legend);
    advancedLayout->addWidget(m_table, 1);
    advancedLayout->addLayout(saveRow);
    advancedLayout->addWidget(m_message);
    auto* tabs = new QTabWidget(this);
    tabs->setObjectName("presetViews");
    tabs->addTab(buildSimpleView(), tr("Simple"));
    tabs->addTab(advanced, tr("Advanced: every toggle"));
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(tabs, 1);
    layout->addWidget(buttons);
    resize(1100, 420);

    connect(m_table, &QTableWidget::currentCellChanged, this, &PresetDialog::updateSimpleView);
    int start = rowOf(current);
    if (start < 0) start = rowOf(recommended);
    selectRow(std::max(start, 0));
    updateSimpleView();
}

QWidget* PresetDialog::buildSimpleView() {
    auto* view = new QWidget(this);
    m_gpuMemory = new QComboBox(view);
    m_gpuMemory->setObjectName("gpuMemory");
    for (int row = 0; row < int(m_presets.size()); ++row) {
        const auto& p = m_presets[size_t(row)];
        QString label = p.preset.name == "cpu" ? tr("no GPU: run on the CPU")
                                               : tr("%1 of GPU memory").arg(formatBytes(p.preset.budgetBytes));
        if (p.custom) label = tr("%1 (custom preset)").arg(QString::fromStdString(p.preset.name));
        if (QString::fromStdString(p.preset.name) == m_recommended) label += tr("  (this machine)");
        m_gpuMemory->addItem(label, row);
    }
    connect(m_gpuMemory, qOverload<int>(&QComboBox::currentIndexChanged), this, [this](int i) {
        if (i >= 0) selectRow(m_gpuMemory->itemData(i).toInt());
    });
    m_simpleSummary = new QLabel(view);
    m_simpleSummary->setObjectName("simpleSummary");
    m_simpleSummary->setWordWrap(true);
    m_simpleSummary->setTextFormat(Qt::RichText);
    m_simpleSummary->setAlignment(Qt::AlignTop | Qt::AlignLeft);
    auto* row = new QHBoxLayout;
    row->addWidget(new QLabel(tr("My machine has"), view));
    row->addWidget(m_gpuMemory, 1);
    auto* layout = new QVBoxLayout(view);
    layout->addLayout(row);
    layout->addWidget(m_simpleSummary, 1);
    return view;
}

// The selected preset in words: what runs, whether it fits, and what it does to the picture.
void PresetDialog::updateSimpleView() {
    const int row = m_table->currentRow();
    if (!m_simpleSummary || row < 0 || row >= int(m_presets.size())) return;
    const auto& preset = m_presets[size_t(row)].preset;
    {
        const QSignalBlocker block(m_gpuMemory);
        m_gpuMemory->setCurrentIndex(m_gpuMemory->findData(row));
    }
    QString text = tr("<p><b>Runs:</b> %1</p>").arg(QString::fromStdString(preset.strategy).toHtmlEscaped());
    if (!preset.expectedTime.empty())
        text += tr("<p><b>Expected time:</b> %1</p>").arg(QString::fromStdString(preset.expectedTime).toHtmlEscaped());
    const qint64 peak = m_predictor ? m_predictor(preset.plan) : -1;
    if (peak >= 0) {
        const bool fits = preset.budgetBytes <= 0 || peak <= preset.budgetBytes;
        text += tr("<p><b>Predicted peak</b> for this model and size: %1 — <span style='color:%2'>%3</span></p>")
                    .arg(formatBytes(peak), fits ? QStringLiteral("#147814") : QStringLiteral("#be1e1e"),
                         fits ? tr("fits %1").arg(formatBytes(preset.budgetBytes))
                              : tr("over the %1 budget").arg(formatBytes(preset.budgetBytes)));
    }
    QStringList changes, keeps;
    for (const auto& e : memory::planEffects(preset.plan))
        (e.changesPicture ? changes : keeps)
            << QStringLiteral("%1 <span style='color:#666'>(%2)</span>")
                   .arg(QString::fromStdString(e.toggle).toHtmlEscaped(), QString::fromStdString(e.measured).toHtmlEscaped());
    text += tr("<p><b>Changes the picture slightly</b> compared with full precision: %1</p>")
                .arg(changes.isEmpty() ? tr("nothing") : changes.join(QStringLiteral(", ")));
    if (!keeps.isEmpty())
        text += tr("<p><b>Cannot change the picture:</b> %1</p>").arg(keeps.join(QStringLiteral(", ")));
    text += tr("<p style='color:#666'>Measured on the built-in demo model (docs/determinism.md). The advanced view "
               "edits every toggle.</p>");
    m_simpleSummary->setText(text);
}

int PresetDialog::rowOf(const QString& name) const {
    for (int i = 0; i < int(m_presets.size()); ++i)
        if (QString::fromStdString(m_presets[size_t(i)].preset.name) == name) return i;
    return -1;
}

void PresetDialog::selectRow(int row) {
    if (row >= 0 && row < m_table->rowCount()) m_table->selectRow(row);
}

memory::Preset PresetDialog::selectedPreset() const {
    const int row = m_table->currentRow();
    if (row < 0 || row >= int(m_presets.size())) return {};
    return m_presets[size_t(row)].preset;
}

void PresetDialog::fillRow(int row) {
    auto& entry = m_presets[size_t(row)];
    auto& plan = entry.preset.plan;
    const QString suffix = QStringLiteral("_%1").arg(row);
    const bool recommended = QString::fromStdString(entry.preset.name) == m_recommended;

    QString name = QString::fromStdString(entry.preset.name);
    if (entry.custom) name += tr(" (custom)");
    if (recommended) name = QStringLiteral("★ ") + name;
    auto* nameItem = new QTableWidgetItem(name);
    nameItem->setToolTip(QString::fromStdString(entry.preset.expectedTime));
    m_table->setItem(row, Name, nameItem);
    m_table->setItem(row, Budget, new QTableWidgetItem(formatBytes(entry.preset.budgetBytes)));
    m_table->setItem(row, Strategy, new QTableWidgetItem(QString::fromStdString(entry.preset.strategy)));
    m_table->setItem(row, Predicted, new QTableWidgetItem);

    auto* precision = combo({"fp32", "fp16", "bf16"}, int(plan.unet), "precision" + suffix, m_table);
    precision->setToolTip(tr("UNet and text encoder precision (VAE: %1)").arg(api::precisionName(plan.vae)));
    connect(precision, qOverload<int>(&QComboBox::currentIndexChanged), this, [this, row](int i) {
        auto& p = m_presets[size_t(row)].preset.plan;
        p.unet = p.textEncoder = api::Precision(i);
        refreshPrediction(row);
    });
    m_table->setCellWidget(row, Precision, precision);
    auto* attention = combo({"sdpa", "sdpa-math", "sliced", "chunked"}, int(plan.attention), "attention" + suffix, m_table);
    connect(attention, qOverload<int>(&QComboBox::currentIndexChanged), this, [this, row](int i) {
        m_presets[size_t(row)].preset.plan.attention = api::Attention(i);
        refreshPrediction(row);
    });
    m_table->setCellWidget(row, Attention, attention);
    // After the offload modes: group offload with its stored copies on disk (memory-mapped) rather than in RAM,
    // then no offload but the networks spread over several GPUs (device "balanced": the two exclude each other).
    const int diskEntry = int(api::Offload::Group) + 1, balancedEntry = diskEntry + 1;
    const int offloadEntry = plan.device == "balanced" ? balancedEntry : plan.offloadToDisk ? diskEntry : int(plan.offload);
    auto* offload = combo({"none", "model", "sequential", "group", tr("group, on disk"), tr("none, balanced over GPUs")},
                          offloadEntry, "offload" + suffix, m_table);
    offload->setItemData(balancedEntry, tr("Each network on its own GPU, largest first, within each GPU's memory"),
                         Qt::ToolTipRole);
    connect(offload, qOverload<int>(&QComboBox::currentIndexChanged), this, [this, row, diskEntry, balancedEntry](int i) {
        auto& p = m_presets[size_t(row)].preset.plan;
        p.offloadToDisk = i == diskEntry;
        p.offload = p.offloadToDisk ? api::Offload::Group : i == balancedEntry ? api::Offload::None : api::Offload(i);
        if (i == balancedEntry) p.device = "balanced";
        else if (p.device == "balanced") p.device = "auto";
        refreshPrediction(row);
    });
    m_table->setCellWidget(row, Offload, offload);
    auto* fp8 = combo({tr("off"), "e4m3fn", "e5m2"}, std::max(0, int(kFp8.indexOf(QString::fromStdString(plan.fp8Storage)))),
                      "fp8" + suffix, m_table);
    connect(fp8, qOverload<int>(&QComboBox::currentIndexChanged), this, [this, row](int i) {
        m_presets[size_t(row)].preset.plan.fp8Storage = kFp8.value(i).toStdString();
        refreshPrediction(row);
    });
    m_table->setCellWidget(row, Fp8, fp8);

    auto addCheck = [&](int column, bool value, const char* name, bool api::MemoryPlan::*field) {
        QCheckBox* check = nullptr;
        m_table->setCellWidget(row, column, centredCheck(value, QLatin1String(name) + suffix, m_table, &check));
        connect(check, &QCheckBox::toggled, this, [this, row, field](bool on) {
            m_presets[size_t(row)].preset.plan.*field = on;
            refreshPrediction(row);
        });
    };
    addCheck(VaeSlicing, plan.vaeSlicing, "vaeSlicing", &api::MemoryPlan::vaeSlicing);
    addCheck(VaeTiling, plan.vaeTiling, "vaeTiling", &api::MemoryPlan::vaeTiling);
    addCheck(ChannelsLast, plan.channelsLast, "channelsLast", &api::MemoryPlan::channelsLast);
    addCheck(Winograd, plan.winogradConv, "winogradConv", &api::MemoryPlan::winogradConv);

    if (recommended) {
        const QColor highlight(255, 236, 160);
        for (int c : {int(Name), int(Budget), int(Predicted), int(Strategy)}) m_table->item(row, c)->setBackground(highlight);
        QFont bold = nameItem->font();
        bold.setBold(true);
        nameItem->setFont(bold);
    }
    refreshPrediction(row);
}

void PresetDialog::refreshPrediction(int row) {
    auto* item = m_table->item(row, Predicted);
    if (!item) return;
    const auto& preset = m_presets[size_t(row)].preset;
    const qint64 peak = m_predictor ? m_predictor(preset.plan) : -1;
    if (peak < 0) {
        item->setText(QStringLiteral("—"));
        item->setToolTip(tr("No prediction for this model yet"));
        if (row == m_table->currentRow()) updateSimpleView();
        return;
    }
    item->setText(formatBytes(peak));
    const bool fits = preset.budgetBytes <= 0 || peak <= preset.budgetBytes;
    item->setForeground(fits ? QColor(20, 120, 20) : QColor(190, 30, 30));
    item->setToolTip(fits ? tr("Fits the %1 budget").arg(formatBytes(preset.budgetBytes))
                          : tr("Exceeds the %1 budget").arg(formatBytes(preset.budgetBytes)));
    if (row == m_table->currentRow()) updateSimpleView();  // an edited toggle changes the summary too
}

void PresetDialog::saveCustom() {
    const QString name = m_customName->text().trimmed();
    if (name.isEmpty()) {
        m_message->setText(tr("Name the custom preset first."));
        return;
    }
    memory::Preset preset = selectedPreset();
    preset.name = name.toStdString();
    preset.strategy = preset.strategy.empty() ? "custom" : preset.strategy + " (custom)";
    try {
        const QString path = saveCustomPreset(preset);
        m_presets.push_back({preset, true});
        const int row = m_table->rowCount();
        m_table->insertRow(row);
        fillRow(row);
        selectRow(row);
        m_message->setText(tr("Saved %1").arg(path));
        emit customSaved(path);
    } catch (const std::exception& e) {
        m_message->setText(QString::fromStdString(e.what()));
    }
}

} // namespace dd::ui
