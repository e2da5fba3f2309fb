// Variation seeds against a reference written from A1111's description (tests/parity/fixtures_variation.py): the
// starting noise itself, then whole runs through diffusers' pipeline from that noise. And the reproducibility they
// promise: each image of a batch of variations is the picture its own settings make alone.
#include "core/io/safetensors.h"
#include "core/pipeline/engine.h"
#include "core/pipeline/variation_noise.h"
#include "tests/common/pipeline_case.h"
#include "tests/common/test_program.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <QJsonArray>
#include <QJsonObject>
#include <QtTest>

namespace test_variation {  // the test program is a unity build: each file keeps its names

using namespace dd;
using dd::test::LastLatents;

namespace {

const QString kDir = QString(DD_FIXTURES_DIR) + "/variation";
const QString kModels = QString(DD_FIXTURES_DIR) + "/pipeline";

api::GenerationSettings variationCase(const QJsonObject& c) {
    api::GenerationSettings s = test::caseSettings(c, (kModels + "/" + c["model"].toString()).toStdString());
    s.variation.seed = c["variation_seed"].toInt();
    s.variation.strength = c["strength"].toDouble(0.0);
    if (c.contains("resize_from")) {
        s.variation.resizeFromWidth = c["resize_from"].toArray()[0].toInt();
        s.variation.resizeFromHeight = c["resize_from"].toArray()[1].toInt();
    }
    return s;
}

std::shared_ptr<io::SafetensorsFile> reference(int index) {
    return io::SafetensorsFile::open((kDir + QString("/case_%1.safetensors").arg(index)).toStdString());
}

} // namespace

class TestVariation : public QObject {
    Q_OBJECT
    QJsonArray m_cases;

private slots:
    void initTestCase() {
        QVERIFY2(test::readCases(kDir, m_cases), "run tests/parity/make_fixtures.py first");
        QVERIFY(m_cases.size() >= 7);
    }

    void cases_data() {
        QTest::addColumn<int>("index");
        for (int i = 0; i < m_cases.size(); ++i) {
            const auto c = m_cases.at(i).toObject();
            QTest::newRow(qPrintable(QString("strength %1 resize %2 batch %3")
                                         .arg(c["strength"].toDouble())
                                         .arg(c.contains("resize_from") ? "yes" : "no")
                                         .arg(c["batch"].toInt())))
                << i;
        }
    }

    // The noise as the reference draws and blends it: the same generators and the same float operations.
    void startingNoiseMatches_data() { cases_data(); }
    void startingNoiseMatches() {
        QFETCH(int, index);
        const auto s = variationCase(m_cases.at(index).toObject());
        const auto want = reference(index)->tensor("noise");
        std::vector<sched::ImageRng> gens;
        for (int64_t i = 0; i < s.batchSize; ++i) gens.emplace_back(sched::ImageRng::Kind::Cpu, uint64_t(api::imageSeeds(s, i).seed));
        sched::NoiseSource noise(gens);
        const int64_t factor = 2;  // the tiny model's VAE
        const auto got = pipeline::startingNoise(s, gens, noise, want.sizes(), factor, torch::kCPU);
        QCOMPARE(got.sizes(), want.sizes());
        const double err = test::maxAbs(got, want);
        QVERIFY2(err <= 1e-6, qPrintable(QString("noise differs by %1").arg(err)));
    }

    void runMatchesTheReference_data() { cases_data(); }
    void runMatchesTheReference() {
        QFETCH(int, index);
        const auto s = variationCase(m_cases.at(index).toObject());
        pipeline::Engine engine;
        api::CancelToken cancel;
        LastLatents observer;
        const auto result = engine.generate(s, cancel, &observer);
        const auto ref = reference(index);
        const double err = test::maxAbs(observer.latents, ref->tensor("latents"));
        qInfo("latents max abs %.3g", err);
        QVERIFY2(err <= 1e-4, qPrintable(QString("latents differ by %1").arg(err)));
        const auto images = ref->tensor("images");
        QCOMPARE(int64_t(result.images.size()), images.size(0));
        for (size_t i = 0; i < result.images.size(); ++i) {
            const auto& img = result.images[i];
            const auto ours = torch::from_blob(const_cast<uint8_t*>(img.rgb.data()), {img.height, img.width, 3}, torch::kUInt8);
            const int diff = (ours.to(torch::kInt32) - images[int64_t(i)].to(torch::kInt32)).abs().max().item<int>();
            QVERIFY2(diff <= 1, qPrintable(QString("image %1 differs by %2/255").arg(i).arg(diff)));
        }
    }

    // Image 1 of a batch of variations (seed kept, variation seed + 1) is the picture its own settings make alone,
    // byte for byte: a variation found in a batch can be remade, and its sidecar says how.
    void aBatchImageIsTheSameAlone() {
        auto s = variationCase(m_cases.at(2).toObject());
        QCOMPARE(s.batchSize, 2);
        pipeline::Engine engine;
        api::CancelToken cancel;
        const auto batch = engine.generate(s, cancel, nullptr);
        api::GenerationSettings alone = api::fromImage(s, 1);
        alone.batchSize = 1;
        QCOMPARE(alone.seed, s.seed);
        QCOMPARE(alone.variation.seed, s.variation.seed + 1);
        const auto one = engine.generate(alone, cancel, nullptr);
        QVERIFY(one.images.at(0).rgb == batch.images.at(1).rgb);
        QVERIFY(batch.images.at(0).rgb != batch.images.at(1).rgb);
    }

    // Strength 0 and no resize is the plain seed's picture: the variation seed alone changes nothing.
    void noStrengthIsThePlainSeed() {
        auto s = variationCase(m_cases.at(0).toObject());
        s.variation = {};
        pipeline::Engine engine;
        api::CancelToken cancel;
        const auto plain = engine.generate(s, cancel, nullptr);
        s.variation.seed = 999;
        const auto withSeedOnly = engine.generate(s, cancel, nullptr);
        QVERIFY(plain.images.at(0).rgb == withSeedOnly.images.at(0).rgb);
    }

    void badVariationsAreOneMessage_data() {
        QTest::addColumn<double>("strength");
        QTest::addColumn<int>("width");
        QTest::addColumn<int>("height");
        QTest::addColumn<QString>("message");
        QTest::newRow("strength") << 1.5 << 0 << 0 << "variation seed strength must be between 0 and 1";
        QTest::newRow("one side") << 0.0 << 512 << 0 << "seed resize from needs both a width and a height";
        QTest::newRow("huge") << 0.0 << 9000 << 512 << "seed resize from must be at most 8192x8192";
    }
    void badVariationsAreOneMessage() {
        QFETCH(double, strength);
        QFETCH(int, width);
        QFETCH(int, height);
        QFETCH(QString, message);
        api::GenerationSettings s;
        s.variation.strength = strength;
        s.variation.resizeFromWidth = width;
        s.variation.resizeFromHeight = height;
        try {
            api::validate(s);
            QFAIL("accepted");
        } catch (const std::invalid_argument& e) {
            QVERIFY2(QString(e.what()).startsWith(message), e.what());
        }
    }
};

DD_REGISTER_TEST(TestVariation)

} // namespace test_variation

#include "test_variation.moc"
