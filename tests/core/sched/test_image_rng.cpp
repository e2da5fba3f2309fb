// A1111's noise sources against tests/parity/fixtures_rng.py, written from their description: NV's Philox numbers bit
// for bit, and whole runs through diffusers' pipeline whose starting noise and Euler a's step noise come from the
// same per-image streams (NV and CPU, with and without A1111's Eta noise seed delta).
#include "core/io/safetensors.h"
#include "core/pipeline/engine.h"
#include "core/sched/image_rng.h"
#include "tests/common/pipeline_case.h"
#include "tests/common/test_program.h"

#include <torch/torch.h>

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

namespace test_image_rng {  // the test program is a unity build: each file keeps its names

using namespace dd;

const QString kDir = QString(DD_FIXTURES_DIR) + "/rng";
const QString kModels = QString(DD_FIXTURES_DIR) + "/pipeline";

class TestImageRng : public QObject {
    Q_OBJECT
    QJsonArray m_cases;

private slots:
    void initTestCase() { QVERIFY2(test::readCases(kDir, m_cases), "run tests/parity/make_fixtures.py first"); }

    void philoxIsBitExact() {
        QFile f(kDir + "/philox.json");
        QVERIFY(f.open(QIODevice::ReadOnly));
        const auto cases = QJsonDocument::fromJson(f.readAll()).array();
        QVERIFY(cases.size() >= 7);
        for (const auto& c : cases) {
            const auto o = c.toObject();
            const uint64_t seed = o["seed"].toString().toULongLong();
            const auto want = o["values"].toArray();
            std::vector<float> got(size_t(want.size()));
            sched::philoxNormal(seed, uint32_t(o["offset"].toInt()), got.data(), int64_t(got.size()));
            for (int i = 0; i < want.size(); ++i)
                QVERIFY2(got[size_t(i)] == float(want[i].toDouble()),
                         qPrintable(QString("seed %1 offset %2 value %3: %4, want %5").arg(o["seed"].toString()).arg(o["offset"].toInt())
                                        .arg(i).arg(double(got[size_t(i)]), 0, 'g', 9).arg(want[i].toDouble(), 0, 'g', 9)));
        }
        // A stream moves its offset on by one per draw, whatever the size.
        sched::ImageRng nv(sched::ImageRng::Kind::Philox, 0);
        const auto first = nv.randn({3, 4});
        const auto second = nv.randn({2, 2});
        std::vector<float> want(4);
        sched::philoxNormal(0, 1, want.data(), 4);
        QCOMPARE(second.flatten()[3].item<float>(), want[3]);
        QCOMPARE(first[0][0].item<float>(), float(cases[0].toObject()["values"].toArray()[0].toDouble()));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, sched::rngKind("GPU"));
    }

    void runsMatchTheReference_data() {
        QTest::addColumn<int>("index");
        for (int i = 0; i < m_cases.size(); ++i) {
            const auto c = m_cases.at(i).toObject();
            QTest::newRow(qPrintable(QString("%1 %2 ENSD %3").arg(c["rng"].toString(), c["sampler"].toString()).arg(c["ensd"].toInt()))) << i;
        }
    }
    void runsMatchTheReference() {
        QFETCH(int, index);
        const auto c = m_cases.at(index).toObject();
        api::GenerationSettings s = test::caseSettings(c, (kModels + "/tiny-sd1-e2e").toStdString());
        s.rng = c["rng"].toString().toStdString();
        s.ensd = c["ensd"].toInt();
        pipeline::Engine engine;
        api::CancelToken cancel;
        const auto result = engine.generate(s, cancel, nullptr);
        const auto images = io::SafetensorsFile::open((kDir + QString("/case_%1.safetensors").arg(index)).toStdString())->tensor("images");
        QCOMPARE(int64_t(result.images.size()), images.size(0));
        for (size_t i = 0; i < result.images.size(); ++i) {
            const auto& img = result.images[i];
            const auto ours = torch::from_blob(const_cast<uint8_t*>(img.rgb.data()), {img.height, img.width, 3}, torch::kUInt8);
            const int diff = (ours.to(torch::kInt32) - images[int64_t(i)].to(torch::kInt32)).abs().max().item<int>();
            qInfo("image %d: max |diff| %d/255", int(i), diff);
            QVERIFY2(diff <= 1, qPrintable(QString("image %1 differs by %2/255").arg(i).arg(diff)));
        }
        // The delta changes the picture only where the sampler draws noise after the start.
        if (s.ensd != 0) {
            auto without = s;
            without.ensd = 0;
            QVERIFY(engine.generate(without, cancel, nullptr).images[0].rgb != result.images[0].rgb);
        }
    }
};

DD_REGISTER_TEST(TestImageRng)

} // namespace test_image_rng
#include "test_image_rng.moc"
