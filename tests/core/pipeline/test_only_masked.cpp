// "Only masked" inpainting against diffusers' padding_mask_crop (fixtures: tests/parity/fixtures_inpaint.py):
// its pieces byte for byte (Pillow's resize, diffusers' crop region and its "fill" and "crop" resize modes), then
// whole runs on the tiny 4- and 9-channel models, whose pictures come back at the init image's size. Also A1111's
// resizers for the hires fix, which are made of the same resize.
#include "core/io/safetensors.h"
#include "core/pipeline/engine.h"
#include "core/pipeline/masked_area.h"
#include "core/pipeline/masked_fill.h"
#include "core/pipeline/pil_resample.h"
#include "core/pipeline/upscale.h"
#include "tests/common/pipeline_case.h"
#include "tests/common/tensor_checks.h"
#include "tests/common/test_program.h"

#include <torch/torch.h>

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

namespace test_only_masked {  // the test program is a unity build: each file keeps its names

using namespace dd;

namespace {

const QString kDir = QString(DD_FIXTURES_DIR) + "/inpaint";

std::shared_ptr<io::SafetensorsFile> fixture(const QString& name) {
    return io::SafetensorsFile::open((kDir + "/" + name).toStdString());
}

using dd::test::imageOf;

// The largest channel difference, or 256 when the sizes differ.
int maxDiff(const api::Image& a, const api::Image& b) {
    if (a.width != b.width || a.height != b.height) return 256;
    int most = 0;
    for (size_t i = 0; i < a.rgb.size(); ++i) most = std::max(most, std::abs(int(a.rgb[i]) - int(b.rgb[i])));
    return most;
}

QJsonArray readJson(const QString& name) {
    QFile f(kDir + "/" + name);
    if (!f.open(QIODevice::ReadOnly)) return {};
    return QJsonDocument::fromJson(f.readAll()).array();
}

int at(const QJsonValue& v, int i) { return v.toArray().at(i).toInt(); }

} // namespace

class TestOnlyMasked : public QObject {
    Q_OBJECT
    QJsonArray m_vectors, m_cases;

private slots:
    void initTestCase() {
        m_vectors = readJson("resample.json");
        m_cases = readJson("only_masked.json");
        QVERIFY2(m_vectors.size() >= 29 && m_cases.size() >= 2, "run tests/parity/make_fixtures.py first");
    }

    void resizeIsPillowsByteForByte() {
        const auto f = fixture("resample.safetensors");
        const api::Image src = imageOf(f->tensor("src"));
        int checked = 0;
        for (const auto& v : m_vectors) {
            const auto c = v.toObject();
            if (c["kind"] != "resize") continue;
            const auto filter = c["filter"] == "lanczos"   ? pipeline::PilFilter::Lanczos
                                : c["filter"] == "bicubic" ? pipeline::PilFilter::Bicubic
                                                           : pipeline::PilFilter::Nearest;
            const int w = at(c["size"], 0), h = at(c["size"], 1);
            const QJsonArray b = c["box"].toArray();
            const auto out = b.isEmpty() ? pipeline::pilResize(src, w, h, filter)
                                         : pipeline::pilResize(src, w, h, filter, {b[0].toDouble(), b[1].toDouble(), b[2].toDouble(), b[3].toDouble()});
            QVERIFY2(maxDiff(out, imageOf(f->tensor(c["name"].toString().toStdString()))) == 0, qPrintable(c["name"].toString()));
            ++checked;
        }
        QCOMPARE(checked, 12);
    }

    // A1111's resizers for the hires fix (None, Lanczos, Nearest) against a re-creation of its resize_image.
    void resizersAreA1111s() {
        const auto f = fixture("resample.safetensors");
        const api::Image src = imageOf(f->tensor("src"));
        int checked = 0;
        for (const auto& v : m_vectors) {
            const auto c = v.toObject();
            if (c["kind"] != "resizer") continue;
            const auto out = pipeline::resizeUpscale(src, c["upscaler"].toString().toStdString(), at(c["size"], 0), at(c["size"], 1));
            QVERIFY2(maxDiff(out, imageOf(f->tensor(c["name"].toString().toStdString()))) == 0, qPrintable(c["name"].toString()));
            ++checked;
        }
        QCOMPARE(checked, 5);
    }

    void resizeModesAreDiffusers() {
        const auto f = fixture("resample.safetensors");
        const api::Image src = imageOf(f->tensor("src"));
        int checked = 0;
        for (const auto& v : m_vectors) {
            const auto c = v.toObject();
            if (c["kind"] != "fill_crop") continue;
            const int w = at(c["size"], 0), h = at(c["size"], 1);
            QCOMPARE(maxDiff(pipeline::resizeAndFill(src, w, h), imageOf(f->tensor(c["fill"].toString().toStdString()))), 0);
            QCOMPARE(maxDiff(pipeline::resizeAndCrop(src, w, h), imageOf(f->tensor(c["crop"].toString().toStdString()))), 0);
            ++checked;
        }
        QCOMPARE(checked, 5);
    }

    // A1111's "Masked content: fill" against its own code's arithmetic (Pillow's blur and composites), re-created.
    void fillIsA1111s() {
        const auto f = fixture("resample.safetensors");
        int checked = 0;
        for (const auto& v : m_vectors) {
            const auto c = v.toObject();
            if (c["kind"] != "masked_fill") continue;
            const auto name = [&](const char* key) { return c[key].toString().toStdString(); };
            const api::Image src = imageOf(f->tensor(name("src"))), mask = imageOf(f->tensor(name("mask")));
            const int diff = maxDiff(pipeline::fillMasked(src, mask), imageOf(f->tensor(name("out"))));
            QVERIFY2(diff == 0, qPrintable(QString("%1: %2/255").arg(c["out"].toString()).arg(diff)));
            ++checked;
        }
        QCOMPARE(checked, 2);
    }

    void cropRegionIsDiffusers() {
        const auto f = fixture("resample.safetensors");
        int checked = 0;
        for (const auto& v : m_vectors) {
            const auto c = v.toObject();
            if (c["kind"] != "crop_region") continue;
            const auto box = pipeline::maskedCropRegion(imageOf(f->tensor(c["mask"].toString().toStdString())), at(c["size"], 0),
                                                        at(c["size"], 1), c["pad"].toInt());
            const pipeline::CropBox want{at(c["box"], 0), at(c["box"], 1), at(c["box"], 2), at(c["box"], 3)};
            QVERIFY2(box == want, qPrintable(QString("%1: %2,%3,%4,%5").arg(c["mask"].toString()).arg(box.x0).arg(box.y0).arg(box.x1).arg(box.y1)));
            ++checked;
        }
        QCOMPARE(checked, 5);
        api::Image empty{4, 4, std::vector<uint8_t>(48, 0)};
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, pipeline::maskedCropRegion(empty, 8, 8, 0));
    }

    void matchesDiffusers_data() {
        QTest::addColumn<int>("index");
        for (int i = 0; i < m_cases.size(); ++i)
            QTest::newRow(qPrintable(m_cases.at(i).toObject()["model"].toString())) << i;
    }
    void matchesDiffusers() {
        QFETCH(int, index);
        const QJsonObject c = m_cases.at(index).toObject();
        api::GenerationSettings s = test::caseSettings(c, (kDir + "/" + c["folder"].toString()).toStdString());
        s.strength = c["strength"].toDouble();
        s.initImage = "init.png";
        s.inpaint.mask = "mask.png";
        s.inpaint.onlyMasked = true;
        s.inpaint.maskedPadding = c["padding"].toInt();
        const auto images = fixture("only_masked_images.safetensors");
        api::RunImages run;
        run.init = imageOf(images->tensor("init"));
        run.mask = imageOf(images->tensor("mask"));
        pipeline::Engine engine;
        api::CancelToken cancel;
        const auto result = engine.generate(s, cancel, nullptr, run);
        const api::Image want = imageOf(fixture(QString("only_masked_%1.safetensors").arg(index))->tensor("image"));
        const int diff = maxDiff(result.images.at(0), want);
        qInfo("%dx%d, box %d,%d-%d,%d: max difference %d/255", result.images[0].width, result.images[0].height,
              at(c["box"], 0), at(c["box"], 1), at(c["box"], 2), at(c["box"], 3), diff);
        QVERIFY2(diff <= 1, qPrintable(QString("the picture differs by %1/255").arg(diff)));
        // Outside the box nothing moved: the init image exactly.
        const auto& out = result.images[0];
        for (int y = 0; y < out.height; ++y)
            for (int x = 0; x < out.width; ++x)
                if (x < at(c["box"], 0) || y < at(c["box"], 1) || x >= at(c["box"], 2) || y >= at(c["box"], 3))
                    for (int k = 0; k < 3; ++k) {
                        const size_t i = (size_t(y) * out.width + x) * 3 + k;
                        if (out.rgb[i] != run.init->rgb[i]) QFAIL(qPrintable(QString("pixel %1,%2 changed outside the box").arg(x).arg(y)));
                    }
    }
};

DD_REGISTER_TEST(TestOnlyMasked)

} // namespace test_only_masked

#include "test_only_masked.moc"
