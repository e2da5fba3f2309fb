// Every MemoryPlan toggle against the plain fp32 run of the same model and seed: what must not
// change pixels does not (VAE slicing, channels_last within float noise), what may change them stays within
// the tolerance stated next to each check. The demo model is diffusers' tiny SD test UNet/VAE with a
// full-vocabulary CLIP; the SDXL case uses the tiny SDXL pipeline fixture.
#include "core/io/safetensors.h"
#include "core/pipeline/engine.h"
#include "tests/common/pipeline_case.h"
#include "tests/common/test_program.h"

#include <torch/torch.h>

#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>

namespace test_plan_toggles {  // the test program is a unity build: each file keeps its names

using namespace dd;
using dd::test::LastLatents;
using api::Attention;
using api::Precision;

struct Run {
    api::GenerationResult result;
    torch::Tensor latents;  // after the last step
};

api::GenerationSettings base() {
    api::GenerationSettings s;
    s.model = pipeline::kDemoModel;
    s.prompt = "a red barn in a snowy field";
    s.negativePrompt = "blurry";
    s.seed = 42;
    s.steps = 2;
    s.sampler = "DPM++ 2M";
    s.width = s.height = 64;
    s.plan.device = "cpu";
    s.plan.winogradConv = false;  // the toggles compared here, not Winograd's rounding
    s.plan.threads = 2;           // nor a thread count that follows the load
    return s;
}

Run generate(pipeline::Engine& engine, const api::GenerationSettings& s) {
    api::CancelToken cancel;
    LastLatents obs;
    Run r{engine.generate(s, cancel, &obs), {}};
    r.latents = obs.latents;
    return r;
}

torch::Tensor pixels(const api::Image& img) {
    return torch::from_blob(const_cast<uint8_t*>(img.rgb.data()), {int64_t(img.rgb.size())}, torch::kUInt8).to(torch::kFloat32);
}
double maxPixelDiff(const Run& a, const Run& b) {
    double m = 0;
    for (size_t i = 0; i < a.result.images.size(); ++i)
        m = std::max(m, (pixels(a.result.images[i]) - pixels(b.result.images[i])).abs().max().item<double>());
    return m;
}
double meanPixelDiff(const Run& a, const Run& b) {
    return (pixels(a.result.images.at(0)) - pixels(b.result.images.at(0))).abs().mean().item<double>();
}
double latentDiff(const Run& a, const Run& b) { return (a.latents - b.latents).abs().max().item<double>(); }
// Relative to the latents' own scale: reduced precision errors grow with it.
double latentRelDiff(const Run& a, const Run& b) { return latentDiff(a, b) / b.latents.abs().max().item<double>(); }

class TestPlanToggles : public QObject {
    Q_OBJECT
    pipeline::Engine m_engine;
    Run m_plain;

private slots:
    void initTestCase() { m_plain = generate(m_engine, base()); }

    void vaeSlicingIsExact() {
        auto s = base();
        s.batchSize = 2;
        const auto whole = generate(m_engine, s);
        s.plan.vaeSlicing = true;
        const auto sliced = generate(m_engine, s);
        QCOMPARE(sliced.result.images.size(), size_t(2));
        QVERIFY(whole.result.images[0].rgb != whole.result.images[1].rgb);  // two different images were decoded
        QCOMPARE(latentDiff(sliced, whole), 0.0);
        // The same computation per image, but CPU convolution kernels are picked per batch size: the last
        // float bit can differ, so at most one 8-bit level.
        const double px = maxPixelDiff(sliced, whole);
        qInfo("sliced vs batched decode: pixels max %.0f", px);
        QVERIFY(px <= 1);
        // Determinism mode decodes per image either way: byte-identical.
        s.deterministic = true;
        const auto detSliced = generate(m_engine, s);
        s.plan.vaeSlicing = false;
        const auto detWhole = generate(m_engine, s);
        QCOMPARE(maxPixelDiff(detSliced, detWhole), 0.0);
    }

    void attentionBackendsAgree_data() {
        QTest::addColumn<int>("attention");
        QTest::addColumn<int>("slice");
        QTest::addColumn<int>("chunk");
        QTest::addColumn<QString>("label");
        QTest::newRow("sdpa-math") << int(Attention::SdpaMath) << 0 << 0 << "sdpa-math";
        QTest::newRow("sliced auto") << int(Attention::Sliced) << 0 << 0 << "sliced (auto)";
        QTest::newRow("sliced 1") << int(Attention::Sliced) << 1 << 0 << "sliced (1)";
        // 64² image → 32² latents → 1024 queries in the first attention: 100-query chunks really chunk it.
        QTest::newRow("chunked 100") << int(Attention::Chunked) << 0 << 100 << "chunked (100 queries)";
    }
    void attentionBackendsAgree() {
        QFETCH(int, attention);
        QFETCH(int, slice);
        QFETCH(int, chunk);
        QFETCH(QString, label);
        auto s = base();
        s.plan.attention = Attention(attention);
        s.plan.attentionSliceSize = slice;
        if (chunk) s.plan.queryChunkSize = chunk;
        const auto r = generate(m_engine, s);
        QCOMPARE(QString::fromStdString(r.result.environment.attention), label);
        const double lat = latentRelDiff(r, m_plain), px = maxPixelDiff(r, m_plain);
        qInfo("%s vs sdpa: latents max abs diff / max abs %.3g, pixels max %.0f", qPrintable(label), lat, px);
        // Same maths in another summation order: float32 rounding only (relative to the latents' scale).
        QVERIFY2(lat < 2e-5, qPrintable(QString::number(lat)));
        QVERIFY(px <= 1);
    }

    void vaeTilingSeamsStaySmall() {
        // The demo VAE's sample_size is 64 px: a 128² image (64² latents) is decoded as 3×3 overlapping tiles.
        auto s = base();
        s.width = s.height = 128;
        s.steps = 2;
        const auto whole = generate(m_engine, s);
        s.plan.vaeTiling = true;
        const auto tiled = generate(m_engine, s);
        QCOMPARE(latentDiff(tiled, whole), 0.0);  // tiling only touches the decode
        const double mean = meanPixelDiff(tiled, whole), max = maxPixelDiff(tiled, whole);
        qInfo("tiled vs untiled decode: mean %.3g, max %.0f (8-bit levels)", mean, max);
        QVERIFY2(max > 0, "tiling did not happen");  // per-tile GroupNorm statistics always differ a little
        // Stated tolerance: a mean under 2.5 levels and no pixel off by more than 24 of 255 levels.
        QVERIFY2(mean < 2.5 && max <= 24, qPrintable(QString("mean %1 max %2").arg(mean).arg(max)));
        // Below the threshold tiling is off: exactly the plain decode.
        auto small = base();
        small.plan.vaeTiling = true;
        QCOMPARE(maxPixelDiff(generate(m_engine, small), m_plain), 0.0);
    }

    void reducedPrecisionOnCpu_data() {
        QTest::addColumn<int>("precision");
        QTest::addColumn<double>("latentTol");
        QTest::addColumn<double>("pixelTol");
        // Stated tolerances, relative latent error after 2 steps and max 8-bit difference: fp16 keeps 11
        // mantissa bits, bf16 8.
        QTest::newRow("fp16") << int(Precision::FP16) << 0.01 << 6.0;
        QTest::newRow("bf16") << int(Precision::BF16) << 0.05 << 24.0;
    }
    void reducedPrecisionOnCpu() {
        QFETCH(int, precision);
        QFETCH(double, latentTol);
        QFETCH(double, pixelTol);
        auto s = base();
        const auto& plain = m_plain;
        s.plan.unet = s.plan.textEncoder = s.plan.vae = Precision(precision);
        const auto r = generate(m_engine, s);
        const char* name = api::precisionName(Precision(precision));
        QCOMPARE(r.result.environment.precision,
                 std::string("unet=") + name + " text_encoder=" + name + " vae=" + name);
        QVERIFY(r.result.warnings.empty());
        QCOMPARE(r.latents.scalar_type(), torch::kFloat32);  // latents and the scheduler stay fp32
        const double rel = latentRelDiff(r, plain), px = maxPixelDiff(r, plain);
        qInfo("%s vs fp32: latents rel %.3g, pixels max %.0f", name, rel, px);
        QVERIFY2(rel > 0, "the precision was not applied");
        QVERIFY2(rel < latentTol && px <= pixelTol, qPrintable(QString("rel %1 px %2").arg(rel).arg(px)));
    }

    void channelsLastIsTheSameMaths() {
        auto s = base();
        s.plan.channelsLast = true;
        const auto r = generate(m_engine, s);
        const double lat = latentRelDiff(r, m_plain);
        qInfo("channels_last vs plain: latents max abs diff / max abs %.3g, pixels max %.0f", lat, maxPixelDiff(r, m_plain));
        // Other convolution kernels, same maths: float32 rounding (relative to the latents' scale).
        QVERIFY2(lat < 5e-5, qPrintable(QString::number(lat)));
        QVERIFY(maxPixelDiff(r, m_plain) <= 1);
    }

    void sdxlVaeForceUpcastIsHonoured() {
        const std::string model = std::string(DD_FIXTURES_DIR) + "/pipeline/tiny-sdxl-e2e";
        if (!std::filesystem::exists(model)) QSKIP("run tests/parity/make_fixtures.py first");
        pipeline::Engine engine;
        auto s = base();
        s.model = model;
        s.steps = 1;
        s.plan.vae = Precision::FP16;  // the UNet and text encoders stay fp32: only the VAE's dtype is at stake
        const auto upcast = generate(engine, s);
        QCOMPARE(upcast.result.environment.precision, std::string("unet=fp32 text_encoder=fp32 vae=fp32 (force_upcast)"));
        s.plan.vaeUpcast = false;
        const auto half = generate(engine, s);
        QCOMPARE(half.result.environment.precision, std::string("unet=fp32 text_encoder=fp32 vae=fp16"));
        QCOMPARE(latentDiff(half, upcast), 0.0);  // only the decode differs
        QVERIFY(maxPixelDiff(half, upcast) > 0);
    }

    void nonFiniteStageIsRetriedInFp32() {
        // A copy of the tiny SD model whose VAE decoder input convolution is scaled by 1e5: its weights still
        // fit fp16, its activations overflow it (max 65504) but not fp32, and GroupNorm rescales them.
        QTemporaryDir dir;
        const std::filesystem::path src = std::string(DD_FIXTURES_DIR) + "/pipeline/tiny-sd1-e2e";
        if (!std::filesystem::exists(src)) QSKIP("run tests/parity/make_fixtures.py first");
        const std::filesystem::path dst = dir.filePath("loud-vae").toStdString();
        std::filesystem::copy(src, dst, std::filesystem::copy_options::recursive);
        const auto vaeFile = (dst / "vae" / "diffusion_pytorch_model.safetensors").string();
        io::TensorMap weights;
        for (const auto& [k, v] : io::SafetensorsFile::open(vaeFile)->all()) weights[k] = v.clone();
        weights.at("decoder.conv_in.weight").mul_(1e5);
        io::writeSafetensors(vaeFile, weights);

        pipeline::Engine engine;
        auto s = base();
        s.model = dst.string();
        s.promptSyntax = "reference";
        const auto fp32 = generate(engine, s);
        s.plan.vae = Precision::FP16;
        const auto retried = generate(engine, s);
        QCOMPARE(retried.result.warnings.size(), size_t(1));
        QVERIFY2(retried.result.warnings[0].find("VAE produced NaN/Inf in fp16") != std::string::npos,
                 retried.result.warnings[0].c_str());
        // The retry decodes with the fp16 weights upcast to fp32: the fp32 run's picture up to weight rounding.
        const double px = maxPixelDiff(retried, fp32);
        qInfo("fp16 VAE retried in fp32 vs fp32 VAE: pixels max %.0f", px);
        QVERIFY(px <= 8);
        QCOMPARE(latentDiff(retried, fp32), 0.0);
    }
};

DD_REGISTER_TEST(TestPlanToggles)

} // namespace test_plan_toggles
#include "test_plan_toggles.moc"
