// End to end against diffusers: the same tiny weights, prompt, seed and sampler give the same latents and
// the same 8-bit image as diffusers' StableDiffusion(XL)/Img2Img pipelines with CPU generators
// (fixtures: tests/parity/fixtures_pipeline.py).
#include "core/io/safetensors.h"
#include "core/pipeline/engine.h"
#include "tests/common/pipeline_case.h"
#include "tests/common/test_program.h"

#include <torch/torch.h>

#include <QJsonArray>
#include <QJsonObject>
#include <QtTest>

namespace test_pipeline {  // the test program is a unity build: each file keeps its names

using namespace dd;
using dd::test::LastLatents;

namespace {

const QString kDir = QString(DD_FIXTURES_DIR) + "/pipeline";


} // namespace

class TestPipeline : public QObject {
    Q_OBJECT
    QJsonArray m_cases;

private slots:
    void initTestCase() {
        QVERIFY2(test::readCases(kDir, m_cases), "run tests/parity/make_fixtures.py first");
        QVERIFY(m_cases.size() >= 9);
    }

    // Each case twice: with direct convolutions (diffusers' arithmetic, latents to 1e-4) and with the default
    // plan's Winograd convolutions (rounding ~1e-5 relative per convolution: latents to 2e-3, the same pictures).
    void matchesDiffusers_data() {
        QTest::addColumn<int>("index");
        QTest::addColumn<bool>("winograd");
        for (int i = 0; i < 9; ++i) {
            QTest::newRow(qPrintable(QString("case %1").arg(i))) << i << false;
            QTest::newRow(qPrintable(QString("case %1 winograd").arg(i))) << i << true;
        }
    }
    void matchesDiffusers() {
        QFETCH(int, index);
        QFETCH(bool, winograd);
        const QJsonObject c = m_cases.at(index).toObject();
        api::GenerationSettings s = test::caseSettings(c, (kDir + "/" + c["model"].toString()).toStdString());
        s.plan.winogradConv = winograd;
        std::optional<api::Image> init;
        if (c["img2img"].toBool()) {
            s.initImage = "init.safetensors";
            s.strength = c["strength"].toDouble();
            const auto rgb = io::SafetensorsFile::open((kDir + "/init.safetensors").toStdString())->tensor("rgb").contiguous();
            init = api::Image{int(rgb.size(1)), int(rgb.size(0)), {rgb.data_ptr<uint8_t>(), rgb.data_ptr<uint8_t>() + rgb.numel()}};
        }
        const auto ref = io::SafetensorsFile::open((kDir + QString("/case_%1.safetensors").arg(index)).toStdString());

        pipeline::Engine engine;
        api::CancelToken cancel;
        LastLatents observer;
        const auto result = engine.generate(s, cancel, &observer, {.init = init});

        const bool noisy = s.sampler == "Euler a" || s.sampler == "DPM++ 2M SDE";
        const double latentTol = winograd ? (noisy ? 3e-3 : 2e-3) : noisy ? 1e-3 : 1e-4;
        const double latentErr = (observer.latents - ref->tensor("latents")).abs().max().item<double>();
        qInfo("%s: latents max abs %.3g", qPrintable(c["sampler"].toString()), latentErr);
        QVERIFY2(latentErr <= latentTol, qPrintable(QString("latents differ by %1").arg(latentErr)));

        const auto images = ref->tensor("images");  // [B,H,W,3] uint8
        QCOMPARE(int64_t(result.images.size()), images.size(0));
        for (size_t i = 0; i < result.images.size(); ++i) {
            const auto& img = result.images[i];
            const auto ours = torch::from_blob(const_cast<uint8_t*>(img.rgb.data()), {img.height, img.width, 3}, torch::kUInt8);
            const int maxDiff = (ours.to(torch::kInt32) - images[int64_t(i)].to(torch::kInt32)).abs().max().item<int>();
            QVERIFY2(maxDiff <= 1, qPrintable(QString("image %1 differs by %2/255").arg(i).arg(maxDiff)));
        }
    }

    void cancelStopsBetweenSteps() {
        struct CancelAtTwo : api::Observer {
            api::CancelToken* token;
            void onStep(int step, int, const api::Image&) override {
                if (step == 2) token->cancel();
            }
        } observer;
        api::CancelToken cancel;
        observer.token = &cancel;
        api::GenerationSettings s;
        s.model = pipeline::kDemoModel;
        s.prompt = "a cat";
        s.steps = 10;
        s.width = s.height = 32;
        pipeline::Engine engine;
        QVERIFY_THROWS_EXCEPTION(api::Cancelled, engine.generate(s, cancel, &observer));
    }

    void demoModelRunsEveryStep() {
        api::GenerationSettings s;
        s.model = pipeline::kDemoModel;
        s.prompt = "a lighthouse";
        s.steps = 3;
        s.width = 48;
        s.height = 32;
        pipeline::Engine engine;
        api::CancelToken cancel;
        LastLatents observer;
        const auto r = engine.generate(s, cancel, &observer);
        QCOMPARE(observer.steps, 3);
        QCOMPARE(r.images.size(), size_t(1));
        QCOMPARE(r.images[0].width, 48);
        QCOMPARE(r.images[0].height, 32);
        QCOMPARE(r.timings.stepSeconds.size(), size_t(3));
    }
};

DD_REGISTER_TEST(TestPipeline)

} // namespace test_pipeline
#include "test_pipeline.moc"
