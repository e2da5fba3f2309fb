// The ControlNet panel: what it shows becomes api::ControlNetSetting and back (docs/controlnet.md), and a run
// on the worker with the panel's ControlNet (the tiny SD 1.x ControlNet fits the built-in demo model) reaches the
// result's settings with its hash.
#include "ui/controlnetpanel.h"
#include "ui/dialoghooks.h"
#include "ui/engineworker.h"

#include "core/pipeline/engine.h"
#include "imaging/png.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using dd::api::ControlNetSetting;
using dd::ui::ControlNetPanel;

class TestControlNetPanel : public QObject {
    Q_OBJECT

private slots:
    void uncheckedMeansNone() {
        ControlNetPanel panel;
        QVERIFY(!panel.isChecked());
        QVERIFY(panel.controlnets().empty());
    }

    void roundTrip() {
        ControlNetPanel panel;
        ControlNetSetting a;
        a.model = "/models/cn/canny";
        a.hash = "0123abcd";
        a.image = "/tmp/edges.png";
        a.preprocessor = "canny";
        a.thresholdA = 50;
        a.thresholdB = 150;
        a.weight = 0.65;
        a.guidanceStart = 0.1;
        a.guidanceEnd = 0.8;
        a.resizeMode = "Just Resize";
        ControlNetSetting b;
        b.model = "/models/cn/tile";
        b.preprocessor = "blur";
        b.thresholdA = 2;
        QSignalSpy changed(&panel, &ControlNetPanel::changed);
        panel.setControlNets({a, b});
        QVERIFY(panel.isChecked());
        QVERIFY(changed.count() > 0);
        const auto back = panel.controlnets();
        QCOMPARE(back.size(), size_t(2));
        QVERIFY(back[0] == a);  // hash and resize mode kept though not shown
        QVERIFY(back[1] == b);  // the second one kept as restored
        // Choosing a preprocessor shows its default thresholds; blur has no second one.
        panel.findChild<QComboBox*>("controlNetPreprocessor")->setCurrentText("blur");
        QCOMPARE(panel.controlnets()[0].thresholdA, 3.0);
        QCOMPARE(panel.controlnets()[0].thresholdB, -1.0);
        panel.setControlNets({});
        QVERIFY(panel.controlnets().empty());
    }

    void browseFillsThePath() {
        ControlNetPanel panel;
        panel.setChecked(true);
        dd::ui::setNextChosenPath("/models/cn/depth");
        panel.findChildren<QPushButton*>().first()->click();
        QCOMPARE(panel.findChild<QLineEdit*>("controlNetModel")->text(), QString("/models/cn/depth"));
    }

    // The worker reads and preprocesses the control image and the engine applies the ControlNet.
    void workerRunsIt() {
        QTemporaryDir dir;
        const QString image = dir.filePath("control.png");
        dd::api::Image img{64, 64, std::vector<uint8_t>(64 * 64 * 3, 0)};
        for (int i = 0; i < 64 * 64 * 3; i += 7) img.rgb[size_t(i)] = 255;
        dd::imaging::writePng(image.toStdString(), img);
        ControlNetPanel panel;
        ControlNetSetting c;
        c.model = std::string(DD_FIXTURES_DIR) + "/controlnet/cn-sd1-a";
        c.image = image.toStdString();
        c.preprocessor = "canny";
        panel.setControlNets({c});
        dd::api::GenerationSettings s;
        s.model = dd::pipeline::kDemoModel;
        s.prompt = "a house";
        s.steps = 2;
        s.width = s.height = 64;
        s.controlnets = panel.controlnets();
        dd::ui::EngineWorker worker;
        QSignalSpy done(&worker, &dd::ui::EngineWorker::finished);
        QSignalSpy failed(&worker, &dd::ui::EngineWorker::failed);
        worker.generate(s);
        QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.first().first().toString()));
        QCOMPARE(done.count(), 1);
        const auto result = done.first().first().value<dd::api::GenerationResult>();
        QCOMPARE(result.settings.controlnets.size(), size_t(1));
        QCOMPARE(int(result.settings.controlnets[0].hash.size()), 8);
    }
};

QTEST_MAIN(TestControlNetPanel)
#include "test_controlnetpanel.moc"
