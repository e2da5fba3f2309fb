#include "ui/presetdialog.h"

#include "ui/modelinfo.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
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

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(legend);
    layout->addWidget(m_table, 1);
    layout->addLayout(saveRow);
    layout->addWidget(m_message);
    layout->addWidget(buttons);
    resize(1100, 380);

    int start = rowOf(current);
    if (start < 0) start = rowOf(recommended);
    selectRow(std::max(start, 0));
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
        return;
    }
    item->setText(formatBytes(peak));
    const bool fits = preset.budgetBytes <= 0 || peak <= preset.budgetBytes;
    item->setForeground(fits ? QColor(20, 120, 20) : QColor(190, 30, 30));
    item->setToolTip(fits ? tr("Fits the %1 budget").arg(formatBytes(preset.budgetBytes))
                          : tr("Exceeds the %1 budget").arg(formatBytes(preset.budgetBytes)));
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
