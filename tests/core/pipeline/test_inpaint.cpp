// Inpainting against diffusers: StableDiffusion(XL)InpaintPipeline on tiny random models, 4- and 9-channel
// UNets, then diffusers' apply_overlay (fixtures: tests/parity/fixtures_inpaint.py). Also the pixel steps alone:
// the overlay byte for byte against Pillow, A1111's mask blur against a numpy re-derivation, and the mask's
// bad inputs.
#include "core/io/safetensors.h"
#include "core/pipeline/engine.h"
#include "core/pipeline/inpaint.h"
#include "imaging/run_images.h"
#include "tests/common/pipeline_case.h"
#include "tests/common/tensor_checks.h"
#include "tests/common/test_program.h"

#include <torch/torch.h>

#include <QJsonArray>
#include <QJsonObject>
#include <QtTest>

namespace test_inpaint {  // the test program is a unity build: each file keeps its names

using namespace dd;
using dd::test::LastLatents;

namespace {

const QString kDir = QString(DD_FIXTURES_DIR) + "/inpaint";

std::shared_ptr<io::SafetensorsFile> fixture(const QString& name) {
    return io::SafetensorsFile::open((kDir + "/" + name).toStdString());
}

using dd::test::imageOf;

torch::Tensor tensorOf(const api::Image& img) {
    return torch::from_blob(const_cast<uint8_t*>(img.rgb.data()), {img.height, img.width, 3}, torch::kUInt8).clone();
}

int maxPixelDiff(const api::Image& a, const torch::Tensor& b) {
    return (tensorOf(a).to(torch::kInt32) - b.to(torch::kInt32)).abs().max().item<int>();
}

api::Image grey(int w, int h, uint8_t v) { return {w, h, std::vector<uint8_t>(size_t(w) * h * 3, v)}; }

} // namespace

class TestInpaint : public QObject {
    Q_OBJECT
    QJsonArray m_cases;

private slots:
    void initTestCase() {
        QVERIFY2(test::readCases(kDir, m_cases), "run tests/parity/make_fixtures.py first");
        QVERIFY(m_cases.size() >= 7);
    }

    void matchesDiffusers_data() {
        QTest::addColumn<int>("index");
        for (int i = 0; i < m_cases.size(); ++i) {
            const auto c = m_cases.at(i).toObject();
            QTest::newRow(qPrintable(QString("%1 %2 %3").arg(c["model"].toString(), c["sampler"].toString()).arg(c["strength"].toDouble()))) << i;
        }
    }
    void matchesDiffusers() {
        QFETCH(int, index);
        const QJsonObject c = m_cases.at(index).toObject();
        api::GenerationSettings s = test::caseSettings(c, (kDir + "/" + c["folder"].toString()).toStdString());
        s.strength = c["strength"].toDouble();
        s.initImage = "init.png";
        s.inpaint.mask = "mask.png";
        const auto images = fixture("images.safetensors");
        api::RunImages run;
        run.init = imageOf(images->tensor("init"));
        run.mask = imageOf(images->tensor("mask"));  // used as it is: diffusers is given no blur either

        pipeline::Engine engine;
        api::CancelToken cancel;
        LastLatents observer;
        const auto result = engine.generate(s, cancel, &observer, run);
        const auto ref = fixture(QString("case_%1.safetensors").arg(index));

        const bool noisy = s.sampler == "Euler a";
        const double latentErr = test::maxAbs(observer.latents, ref->tensor("latents"));
        qInfo("latents max abs %.3g", latentErr);
        QVERIFY2(latentErr <= (noisy ? 1e-3 : 1e-4), qPrintable(QString("latents differ by %1").arg(latentErr)));
        const int pixels = maxPixelDiff(result.images.at(0), ref->tensor("images")[0]);
        QVERIFY2(pixels <= 1, qPrintable(QString("the image differs by %1/255").arg(pixels)));
        // Where the mask is black the overlay leaves the init image exactly.
        const auto keep = images->tensor("mask").eq(0).unsqueeze(2).expand({-1, -1, 3});
        QVERIFY(tensorOf(result.images[0]).masked_select(keep).equal(images->tensor("init").masked_select(keep)));
    }

    void overlayIsPillowsByteForByte() {
        const auto f = fixture("overlay.safetensors");
        const auto out = pipeline::overlay(imageOf(f->tensor("generated")), imageOf(f->tensor("init")), imageOf(f->tensor("mask")));
        QCOMPARE(maxPixelDiff(out, f->tensor("out")), 0);
    }

    // A1111's Mask blur: OpenCV's Gaussian with A1111's kernel size, two passes; the reference is a float
    // re-derivation, so OpenCV's fixed-point rounding may differ by one.
    void maskBlurIsA1111s_data() {
        QTest::addColumn<int>("sigma");
        for (int s : {1, 4, 11}) QTest::newRow(qPrintable(QString("sigma %1").arg(s))) << s;
    }
    void maskBlurIsA1111s() {
        QFETCH(int, sigma);
        const auto f = fixture("blur.safetensors");
        const api::Image mask = imageOf(f->tensor("mask"));
        api::InpaintSetting p;
        p.maskBlur = sigma;
        const auto blurred = imaging::prepareMask(mask, mask.width, mask.height, p, "mask.png");
        const auto want = f->tensor(("blur_" + std::to_string(sigma)).c_str()).unsqueeze(2).expand({-1, -1, 3});
        QVERIFY(maxPixelDiff(blurred, want) <= 1);
    }

    void maskIsPreparedOrRefusedWithItsName() {
        api::InpaintSetting p;
        p.maskBlur = 0;
        std::vector<std::string> notes;
        // Another size: resized to the image's, with a note naming the file.
        const auto resized = imaging::prepareMask(grey(16, 8, 255), 32, 16, p, "big-mask.png", &notes);
        QCOMPARE(resized.width, 32);
        QCOMPARE(notes.size(), size_t(1));
        QVERIFY(QString::fromStdString(notes[0]).contains("big-mask.png"));
        // Inverted: black repaints.
        p.invertMask = true;
        QCOMPARE(int(imaging::prepareMask(grey(8, 8, 0), 8, 8, p, "m.png").rgb[0]), 255);
        // Empty (nothing >= 128 after inverting a white mask): one clear message.
        try {
            imaging::prepareMask(grey(8, 8, 255), 8, 8, p, "white.png");
            QFAIL("an empty mask was accepted");
        } catch (const std::invalid_argument& e) {
            QVERIFY(QString(e.what()).contains("white.png"));
            QVERIFY(QString(e.what()).contains("empty"));
        }
        // Colour masks are read as Pillow's L.
        p.invertMask = false;
        api::Image green{1, 1, {0, 255, 0}};
        QCOMPARE(int(imaging::prepareMask(green, 1, 1, p, "m.png").rgb[0]), (38470 * 255 + 0x8000) >> 16);
    }

    // Outpainting's pixels: the picture where it was, the new area filled from its border (mirrored or stretched),
    // the mask white over the new area and the overlap.
    void outpaintExtendsAndMasks() {
        api::Image img{4, 2, {0, 0, 0, 10, 10, 10, 20, 20, 20, 30, 30, 30, 1, 1, 1, 11, 11, 11, 21, 21, 21, 31, 31, 31}};
        api::OutpaintSetting o;
        o.right = 2;
        o.fill = "edge";
        auto wide = imaging::extendForOutpaint(img, o, 0);
        QCOMPARE(wide.width, 6);
        QCOMPARE(int(wide.rgb[3 * 4]), 30);  // stretched
        QCOMPARE(int(wide.rgb[3 * 5]), 30);
        o.fill = "mirror";
        wide = imaging::extendForOutpaint(img, o, 0);
        QCOMPARE(int(wide.rgb[3 * 4]), 20);  // reflected about the last column
        QCOMPARE(int(wide.rgb[3 * 5]), 10);
        QCOMPARE(int(wide.rgb[3 * 1]), 10);  // the picture itself untouched
        o.fill = "noise";
        QCOMPARE(imaging::extendForOutpaint(img, o, 7).rgb, imaging::extendForOutpaint(img, o, 7).rgb);  // from the seed
        o.overlap = 1;
        const auto mask = imaging::outpaintMask(6, 2, o);
        QCOMPARE(int(mask.rgb[3 * 2]), 0);    // kept
        QCOMPARE(int(mask.rgb[3 * 3]), 255);  // the overlap
        QCOMPARE(int(mask.rgb[3 * 5]), 255);  // the new area
    }

    void repaintsOnlyWhereMaskedOnTheDemoModel() {
        api::GenerationSettings s;
        s.model = pipeline::kDemoModel;
        s.prompt = "a lighthouse";
        s.steps = 3;
        s.width = s.height = 32;
        s.seed = 5;
        s.initImage = "init.png";
        s.inpaint.mask = "mask.png";
        s.strength = 1.0;
        api::RunImages run;
        run.init = grey(32, 32, 90);
        api::Image mask = grey(32, 32, 0);
        for (int y = 8; y < 24; ++y)
            for (int x = 8; x < 24; ++x) std::fill_n(mask.rgb.begin() + 3 * (y * 32 + x), 3, uint8_t(255));
        run.mask = mask;
        pipeline::Engine engine;
        api::CancelToken cancel;
        const auto r = engine.generate(s, cancel, nullptr, run);
        const auto out = tensorOf(r.images.at(0));
        QVERIFY(out.slice(0, 0, 8).eq(90).all().item<bool>());             // kept rows: the init image exactly
        QVERIFY(!out.slice(0, 8, 24).slice(1, 8, 24).eq(90).all().item<bool>());  // the square was repainted
        // The same run again: the same picture (the generator order is fixed).
        QCOMPARE(engine.generate(s, cancel, nullptr, run).images.at(0).rgb, r.images[0].rgb);
        // A1111's fill starts a bright square from the grey around it instead of its own pixels; the rest is kept.
        api::RunImages bright = run;
        for (int y = 8; y < 24; ++y)
            for (int x = 8; x < 24; ++x) std::fill_n(bright.init->rgb.begin() + 3 * (y * 32 + x), 3, uint8_t(230));
        s.strength = 0.5;
        const auto original = engine.generate(s, cancel, nullptr, bright).images.at(0);
        s.inpaint.maskedContent = "fill";
        const auto filled = engine.generate(s, cancel, nullptr, bright).images.at(0);
        QVERIFY(filled.rgb != original.rgb);
        QVERIFY(tensorOf(filled).slice(0, 0, 8).eq(90).all().item<bool>());
        s.inpaint.maskedContent = "original";
        s.strength = 1.0;
        // A missing mask is one clear message.
        run.mask.reset();
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, engine.generate(s, cancel, nullptr, run));
    }
};

DD_REGISTER_TEST(TestInpaint)

} // namespace test_inpaint

#include "test_inpaint.moc"
