// Single-file checkpoints end to end against diffusers' from_single_file: SD 1.x, SD 2.x (v-prediction as
// diffusers loads it, and ε as a user sets it) and SDXL, every sampler, from the file alone — the scheduler
// configuration each family gets is the one under test (fixtures: tests/parity/fixtures_single_file.py).
#include "core/io/safetensors.h"
#include "core/io/single_file.h"
#include "core/pipeline/engine.h"
#include "tests/common/pipeline_case.h"
#include "tests/common/test_program.h"

#include <torch/torch.h>

#include <QJsonArray>
#include <QJsonObject>
#include <QtTest>

namespace test_single_file_pipeline {  // the test program is a unity build: each file keeps its names

using namespace dd;

const QString kSingleFileDir = QString(DD_FIXTURES_DIR) + "/single_file";

class TestSingleFilePipeline : public QObject {
    Q_OBJECT
    QJsonArray m_cases;

private slots:
    void initTestCase() {
        QVERIFY2(test::readCases(kSingleFileDir, m_cases), "run tests/parity/make_fixtures.py first");
        QVERIFY(m_cases.size() >= 3 * 11);
    }

    // What diffusers' from_single_file reads from the Hub repository it names: the key SD 1.5's file leaves
    // out stays out (Euler then steps "linspace", its own default), SD 2.x gets v-prediction.
    void schedulerConfigIsTheHubs() {
        const auto sd1 = io::loadSingleFile((kSingleFileDir + "/sd1.safetensors").toStdString()).configs.at("scheduler");
        QCOMPARE(sd1.value("_class_name", ""), std::string("PNDMScheduler"));
        QVERIFY(!sd1.contains("timestep_spacing"));
        QVERIFY(!sd1.contains("prediction_type"));
        const auto sd2 = io::loadSingleFile((kSingleFileDir + "/sd2.safetensors").toStdString()).configs.at("scheduler");
        QCOMPARE(sd2.value("_class_name", ""), std::string("DDIMScheduler"));
        QCOMPARE(sd2.value("prediction_type", ""), std::string("v_prediction"));
        QVERIFY(!sd2.contains("timestep_spacing"));
        const auto xl = io::loadSingleFile((kSingleFileDir + "/sdxl.safetensors").toStdString()).configs.at("scheduler");
        QCOMPARE(xl.value("_class_name", ""), std::string("EulerDiscreteScheduler"));
        QCOMPARE(xl.value("timestep_spacing", ""), std::string("leading"));
    }

    void matchesFromSingleFile_data() {
        QTest::addColumn<int>("index");
        for (int i = 0; i < m_cases.size(); ++i) {
            const QJsonObject c = m_cases.at(i).toObject();
            const QString options = QJsonDocument(c["scheduler_options"].toObject()).toJson(QJsonDocument::Compact);
            QTest::newRow(qPrintable(QString("%1 %2 %3").arg(i).arg(c["model"].toString(), c["sampler"].toString()) +
                                     (c.contains("scheduler_options") ? " " + options : QString())))
                << i;
        }
    }
    void matchesFromSingleFile() {
        QFETCH(int, index);
        const QJsonObject c = m_cases.at(index).toObject();
        api::GenerationSettings s = test::caseSettings(c, (kSingleFileDir + "/" + c["model"].toString()).toStdString());
        const QJsonObject options = c["scheduler_options"].toObject();
        s.predictionType = options["prediction_type"].toString().toStdString();
        s.timestepSpacing = options["timestep_spacing"].toString().toStdString();
        const auto ref = io::SafetensorsFile::open((kSingleFileDir + QString("/case_%1.safetensors").arg(index)).toStdString());

        pipeline::Engine engine;
        api::CancelToken cancel;
        test::LastLatents observer;
        const auto result = engine.generate(s, cancel, &observer);

        // 1e-4 on latents up to 10 in magnitude, 1e-5 of their largest value above it: a random UNet predicts
        // next to nothing, so Euler-family latents stay near σ_max × noise (|x| up to 75), and fp32 rounding
        // grows with them (SDXL with LCM on an AMD EPYC VM: 5.8e-6 of |x| = 63, against torch's own kernels).
        const auto want = ref->tensor("latents");
        const double latentErr = test::maxAbs(observer.latents, want);
        const double bound = 1e-4 * std::max(1.0, want.abs().max().item<double>() / 10);
        qInfo("latents max abs %.3g (bound %.3g)", latentErr, bound);
        QVERIFY2(latentErr <= bound, qPrintable(QString("latents differ by %1").arg(latentErr)));
        const auto image = ref->tensor("images")[0];  // [H,W,3] uint8
        const auto& img = result.images.at(0);
        const auto ours = torch::from_blob(const_cast<uint8_t*>(img.rgb.data()), {img.height, img.width, 3}, torch::kUInt8);
        const int maxDiff = (ours.to(torch::kInt32) - image.to(torch::kInt32)).abs().max().item<int>();
        QVERIFY2(maxDiff <= 1, qPrintable(QString("image differs by %1/255").arg(maxDiff)));
    }
};

DD_REGISTER_TEST(TestSingleFilePipeline)

} // namespace test_single_file_pipeline
#include "test_single_file_pipeline.moc"
