// The compare view's numbers against numpy/scipy (tests/parity/fixtures_compare.py) for known pairs:
// identical, Gaussian noise, a 3-pixel shift, a constant offset, one changed pixel.
#include "imaging/compare.h"
#include "imaging/png.h"

#include <nlohmann/json.hpp>

#include <QtTest>

#include <cmath>
#include <fstream>

using namespace dd;

namespace {
const std::string kDir = std::string(DD_FIXTURES_DIR) + "/compare/";

api::Image load(const std::string& name) { return imaging::readImage(kDir + name + ".png"); }
} // namespace

class TestCompareMetrics : public QObject {
    Q_OBJECT
    nlohmann::json m_ref;

private slots:
    void initTestCase() {
        std::ifstream f(kDir + "metrics.json");
        if (!f) QFAIL(qPrintable(QString::fromStdString("missing fixture " + kDir + "metrics.json (run tests/parity/make_fixtures.py)")));
        m_ref = nlohmann::json::parse(f);
    }

    void metrics_data() {
        QTest::addColumn<QString>("pair");
        for (const char* p : {"identical", "noise", "shifted", "offset", "one_pixel"}) QTest::newRow(p) << p;
    }
    void metrics() {
        QFETCH(QString, pair);
        const auto& ref = m_ref["pairs"][pair.toStdString()];
        const auto a = load("base"), b = load(pair.toStdString());
        const auto m = imaging::compareImages(a, b);
        QVERIFY(m.pixels.sameSize);
        QCOMPARE(m.pixels.maxAbs, ref["max_abs"].get<int>());
        QCOMPARE(m.pixels.differingPixels, ref["differing_pixels"].get<int64_t>());
        QVERIFY(std::abs(m.pixels.meanAbs - ref["mean_abs"].get<double>()) < 1e-12);
        QVERIFY(std::abs(m.pixels.mse - ref["mse"].get<double>()) < 1e-9);
        if (ref["psnr"].is_null()) QVERIFY(std::isinf(m.pixels.psnr) && m.pixels.psnr > 0);
        else QVERIFY2(std::abs(m.pixels.psnr - ref["psnr"].get<double>()) < 1e-9, qPrintable(QString::number(m.pixels.psnr)));
        // OpenCV's separable blur vs scipy's 2-D correlation: equal up to float rounding.
        QVERIFY2(std::abs(m.ssim - ref["ssim"].get<double>()) < 1e-6,
                 qPrintable(QString("ssim %1, reference %2").arg(m.ssim, 0, 'g', 12).arg(ref["ssim"].get<double>(), 0, 'g', 12)));
    }

    void ssimIsSymmetricAndBounded() {
        const auto a = load("base"), b = load("shifted");
        QVERIFY(std::abs(imaging::ssim(a, b) - imaging::ssim(b, a)) < 1e-12);
        QVERIFY(imaging::ssim(a, b) < 1.0);
    }

    void sizesThatCannotBeCompared() {
        const auto a = load("base");
        api::Image small{8, 8, std::vector<uint8_t>(8 * 8 * 3, 7)};
        QVERIFY(std::isnan(imaging::ssim(a, small)));
        QVERIFY(std::isnan(imaging::ssim(small, small)));  // smaller than the 11×11 window
        QVERIFY(!imaging::compareImages(a, small).pixels.sameSize);
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, imaging::differenceHeatmap(a, small));
    }

    void heatmap() {
        const auto a = load("base");
        // Identical: all black.
        const auto same = imaging::differenceHeatmap(a, a);
        QCOMPARE(same.width, a.width);
        QVERIFY(std::all_of(same.rgb.begin(), same.rgb.end(), [](uint8_t v) { return v == 0; }));
        // One changed pixel: that pixel is the brightest (top of the scale), every other one black.
        const auto one = imaging::differenceHeatmap(a, load("one_pixel"));
        const size_t at = (size_t(7) * size_t(a.width) + 11) * 3;
        QVERIFY(one.rgb[at] + one.rgb[at + 1] + one.rgb[at + 2] > 400);
        int lit = 0;
        for (size_t p = 0; p < one.rgb.size(); p += 3) lit += (one.rgb[p] | one.rgb[p + 1] | one.rgb[p + 2]) != 0;
        QCOMPARE(lit, 1);
        // Absolute scale, gain 1: the constant offset of 10 is dim; normalized it is the top of the scale.
        const auto offset = load("offset");
        const auto dim = imaging::differenceHeatmap(a, offset, imaging::HeatmapScale::Absolute, 1.0);
        const auto full = imaging::differenceHeatmap(a, offset, imaging::HeatmapScale::Normalized);
        QVERIFY(dim.rgb[0] + dim.rgb[1] + dim.rgb[2] < full.rgb[0] + full.rgb[1] + full.rgb[2]);
    }
};

QTEST_GUILESS_MAIN(TestCompareMetrics)
#include "test_compare_metrics.moc"
