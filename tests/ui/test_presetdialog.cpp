// The preset dialog: the recommended row is highlighted, toggles edit the selected preset's MemoryPlan, a custom
// preset is saved where loadAllPresets finds it again.
#include "ui/modelinfo.h"
#include "ui/presetdialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QStandardPaths>
#include <QTableWidget>
#include <QtTest>

using dd::memory::Preset;
using dd::ui::PresetDialog;
using dd::ui::PresetEntry;

namespace {

Preset preset(const char* name, int64_t gb, const char* device = "auto") {
    Preset p;
    p.name = name;
    p.budgetBytes = gb << 30;
    p.plan.device = device;
    p.strategy = std::string("strategy for ") + name;
    return p;
}

std::vector<PresetEntry> rows() {
    return {{preset("4gb", 4), false}, {preset("8gb", 8), false}, {preset("24gb", 24), false}, {preset("cpu", 16, "cpu"), false}};
}

} // namespace

class TestPresetDialog : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    void recommendedRowIsHighlightedAndSelected() {
        std::vector<PresetEntry> all = rows();
        const QString rec = dd::ui::recommendedPresetName(all, {true, int64_t(12) << 30, "GPU"});
        QCOMPARE(rec, QString("8gb"));
        QCOMPARE(dd::ui::recommendedPresetName(all, {false, int64_t(32) << 30, "CPU"}), QString("cpu"));
        PresetDialog d(all, rec, {}, {}, nullptr);
        QVERIFY(d.table()->item(1, PresetDialog::Name)->text().startsWith(QStringLiteral("★")));
        QVERIFY(!d.table()->item(0, PresetDialog::Name)->text().startsWith(QStringLiteral("★")));
        QCOMPARE(d.selectedPreset().name, std::string("8gb"));
        QVERIFY(d.findChild<QLabel*>("recommendation")->text().contains("8gb"));
    }

    // The simple view: choosing the machine's memory selects that preset, and the summary says what runs, its
    // predicted peak against the budget, and which toggles change the picture and which cannot.
    void simpleViewSaysWhatRunsAndWhatItDoesToThePicture() {
        auto all = rows();
        all[0].preset.plan.unet = dd::api::Precision::FP16;
        all[0].preset.plan.vaeSlicing = true;
        all[0].preset.plan.offload = dd::api::Offload::Model;
        PresetDialog d(all, "8gb", "24gb", [](const dd::api::MemoryPlan& p) {
            return qint64(p.unet == dd::api::Precision::FP16 ? 3 : 9) << 30;
        }, nullptr);
        auto* memory = d.findChild<QComboBox*>("gpuMemory");
        auto* summary = d.findChild<QLabel*>("simpleSummary");
        QVERIFY(memory && summary);
        QCOMPARE(memory->count(), 4);
        QVERIFY(memory->itemText(1).contains("this machine"));
        QVERIFY(summary->text().contains("strategy for 24gb"));
        QVERIFY2(summary->text().contains("fits"), qPrintable(summary->text()));
        memory->setCurrentIndex(0);
        QCOMPARE(d.selectedPreset().name, std::string("4gb"));
        const QString text = summary->text();
        QVERIFY2(text.contains("strategy for 4gb") && text.contains(dd::ui::formatBytes(qint64(3) << 30)) && text.contains("fits"), qPrintable(text));
        const int changes = int(text.indexOf("Changes the picture")), keeps = int(text.indexOf("Cannot change"));
        QVERIFY(changes >= 0 && keeps > changes);
        QVERIFY(text.indexOf("UNet fp16") > changes && text.indexOf("UNet fp16") < keeps);
        QVERIFY(text.indexOf("VAE slicing") > keeps && text.indexOf("CPU offload") > keeps);
        memory->setCurrentIndex(1);  // 8 GB at fp32: 9 GiB predicted
        QVERIFY2(summary->text().contains("over the"), qPrintable(summary->text()));
        d.findChild<QComboBox*>("precision_1")->setCurrentText("fp16");  // edited in the advanced view
        QVERIFY2(summary->text().contains("UNet fp16") && summary->text().contains("fits"), qPrintable(summary->text()));
    }

    void togglesEditThePlan() {
        PresetDialog d(rows(), "8gb", "4gb", {}, nullptr);
        QCOMPARE(d.selectedPreset().name, std::string("4gb"));
        d.findChild<QCheckBox*>("vaeTiling_0")->setChecked(true);
        d.findChild<QCheckBox*>("vaeSlicing_0")->setChecked(true);
        d.findChild<QComboBox*>("precision_0")->setCurrentText("fp16");
        d.findChild<QComboBox*>("attention_0")->setCurrentText("sliced");
        d.findChild<QComboBox*>("offload_0")->setCurrentText("sequential");
        d.findChild<QComboBox*>("fp8_0")->setCurrentText("e4m3fn");
        const auto plan = d.selectedPreset().plan;
        QVERIFY(plan.vaeTiling);
        QVERIFY(plan.vaeSlicing);
        QVERIFY(plan.unet == dd::api::Precision::FP16);
        QVERIFY(plan.textEncoder == dd::api::Precision::FP16);
        QVERIFY(plan.attention == dd::api::Attention::Sliced);
        QVERIFY(plan.offload == dd::api::Offload::Sequential);
        QCOMPARE(plan.fp8Storage, std::string("e4m3fn"));
        QVERIFY(!plan.offloadToDisk);
        // "group, on disk": group offload with the stored copies memory-mapped from a file; back to "group" clears it.
        d.findChild<QComboBox*>("offload_0")->setCurrentText("group, on disk");
        QVERIFY(d.selectedPreset().plan.offload == dd::api::Offload::Group && d.selectedPreset().plan.offloadToDisk);
        d.findChild<QComboBox*>("offload_0")->setCurrentText("group");
        QVERIFY(d.selectedPreset().plan.offload == dd::api::Offload::Group && !d.selectedPreset().plan.offloadToDisk);
        // "none, balanced over GPUs": no offload, the networks spread over the GPUs; leaving it leaves "balanced".
        d.findChild<QComboBox*>("offload_0")->setCurrentText("none, balanced over GPUs");
        QVERIFY(d.selectedPreset().plan.offload == dd::api::Offload::None);
        QCOMPARE(d.selectedPreset().plan.device, std::string("balanced"));
        dd::api::validate(d.selectedPreset().plan);
        d.findChild<QComboBox*>("offload_0")->setCurrentText("model");
        QVERIFY(d.selectedPreset().plan.offload == dd::api::Offload::Model);
        QCOMPARE(d.selectedPreset().plan.device, std::string("auto"));
        // Other rows keep their own plans.
        d.selectRow(1);
        QVERIFY(!d.selectedPreset().plan.vaeTiling);
    }

    void predictionPerRowFollowsToggles() {
        // A stand-in predictor: 6 GiB, 3 GiB with VAE tiling.
        auto predictor = [](const dd::api::MemoryPlan& p) -> qint64 { return (p.vaeTiling ? 3LL : 6LL) << 30; };
        PresetDialog d(rows(), "8gb", "4gb", predictor, nullptr);
        auto* cell = d.table()->item(0, PresetDialog::Predicted);
        QCOMPARE(cell->text(), QString("6.00 GiB"));
        QVERIFY(cell->toolTip().contains("Exceeds"));
        d.findChild<QCheckBox*>("vaeTiling_0")->setChecked(true);
        QCOMPARE(cell->text(), QString("3.00 GiB"));
        QVERIFY(cell->toolTip().contains("Fits"));
    }

    void savesCustomPreset() {
        PresetDialog d(rows(), "8gb", "8gb", {}, nullptr);
        d.findChild<QCheckBox*>("vaeTiling_1")->setChecked(true);
        d.findChild<QPushButton*>("saveCustom")->click();
        QVERIFY(d.findChild<QLabel*>("presetMessage")->text().contains("Name"));  // no name: nothing saved
        d.findChild<QLineEdit*>("customName")->setText("my 8gb tiled");
        QSignalSpy saved(&d, &PresetDialog::customSaved);
        d.findChild<QPushButton*>("saveCustom")->click();
        QCOMPARE(saved.count(), 1);
        QCOMPARE(d.selectedPreset().name, std::string("my 8gb tiled"));
        bool found = false;
        for (const auto& e : dd::ui::loadAllPresets())
            if (e.custom && e.preset.name == "my 8gb tiled") found = e.preset.plan.vaeTiling && e.preset.budgetBytes == (8LL << 30);
        QVERIFY(found);
        QFile::remove(saved.at(0).at(0).toString());
    }
};

QTEST_MAIN(TestPresetDialog)
#include "test_presetdialog.moc"
