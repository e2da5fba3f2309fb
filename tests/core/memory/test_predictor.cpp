// The predictor's formula on SD 1.5's shape (no torch, no model): what each toggle must change and what it
// must leave alone, and the warning text. Agreement with measured peaks is test_prediction_vs_measured.
#include "core/memory/predictor.h"

#include <nlohmann/json.hpp>

#include <QtTest>

using namespace dd::memory;
namespace api = dd::api;

namespace {

// SD 1.5's component configs (the keys the predictor reads, the rest diffusers' defaults) and its parameter counts.
ModelShape sd15() {
    const nlohmann::json unet = {{"block_out_channels", {320, 640, 1280, 1280}}, {"layers_per_block", 2},
                                 {"attention_head_dim", 8}, {"cross_attention_dim", 768},
                                 {"down_block_types", {"CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "DownBlock2D"}}};
    const nlohmann::json vae = {{"block_out_channels", {128, 256, 512, 512}}, {"sample_size", 512}, {"force_upcast", true}};
    const nlohmann::json te = {{"hidden_size", 768}, {"intermediate_size", 3072}, {"num_attention_heads", 12}};
    ModelShape s;
    s.unet = shapeOf(dd::nn::UNetConfig::fromJson(unet), 859520964);
    s.vae = shapeOf(dd::nn::VaeConfig::fromJson(vae), 83653863);
    s.textEncoders = {shapeOf(dd::nn::ClipTextConfig::fromJson(te), 123060480)};
    return s;
}

PredictInput at(int size, api::MemoryPlan plan = {}) {
    PredictInput in;
    in.width = in.height = size;
    in.plan = plan;
    in.baselineBytes = 0;
    return in;
}

constexpr int64_t GB = int64_t(1) << 30;

} // namespace

class TestPredictor : public QObject {
    Q_OBJECT
private slots:
    void configsAreRead() {
        const auto s = sd15();
        QCOMPARE(s.unet.blockOutChannels.size(), size_t(4));
        QCOMPARE(s.unet.attention, (std::vector<bool>{true, true, true, false}));
        QCOMPARE(s.unet.heads, (std::vector<int64_t>(4, 8)));
        QCOMPARE(s.vae.scaleFactor(), int64_t(8));
        QCOMPARE(s.textEncoders.size(), size_t(1));
    }

    void weightsByDtype() {
        const auto s = sd15();
        const auto fp32 = predict(s, at(512));
        const int64_t params = s.unet.params + s.vae.params + s.textEncoders[0].params;
        QCOMPARE(fp32.denoise.weights, params * 4);
        api::MemoryPlan half;
        half.unet = half.textEncoder = half.vae = api::Precision::FP16;
        half.vaeUpcast = false;
        QCOMPARE(predict(s, at(512, half)).denoise.weights, params * 2);
        half.vaeUpcast = true;  // SD 1.5's VAE config says force_upcast: decode stays in fp32
        QCOMPARE(predict(s, at(512, half)).denoise.weights, (params - s.vae.params) * 2 + s.vae.params * 4);
    }

    void attentionBackends() {
        const auto s = sd15();
        api::MemoryPlan math, sliced, chunked, sdpa;
        math.attention = api::Attention::SdpaMath;
        sliced.attention = api::Attention::Sliced;
        chunked.attention = api::Attention::Chunked;
        const int64_t m = predict(s, at(512, math)).denoise.activations;
        const int64_t sl = predict(s, at(512, sliced)).denoise.activations;
        const int64_t ch = predict(s, at(512, chunked)).denoise.activations;
        const int64_t fl = predict(s, at(512, sdpa)).denoise.activations;
        // 512²: 4096 tokens, 8 heads, CFG batch 2 → one fp32 score matrix is 2·8·4096²·4 B = 1 GiB.
        QVERIFY(m > 2 * GB);
        QVERIFY(sl < m / 3 && ch < m / 3);
        QVERIFY(fl < sl);
        QVERIFY(predict(s, at(512, math)).denoise.peakAt.find("attention at 64x64") != std::string::npos);
        // Scores grow with tokens², so doubling the side multiplies math attention by ~16.
        QVERIFY(predict(s, at(1024, math)).denoise.activations > 12 * m);
    }

    void cfgAndBatch() {
        const auto s = sd15();
        auto in = at(512);
        const int64_t cfg = predict(s, in).denoise.activations;
        in.cfg = false;
        QVERIFY(std::abs(double(predict(s, in).denoise.activations) * 2 - double(cfg)) < 0.01 * double(cfg));
        in.cfg = true;
        in.batch = 2;
        QVERIFY(std::abs(double(predict(s, in).denoise.activations) - 2.0 * double(cfg)) < 0.01 * double(cfg));
    }

    void vaeSlicingAndTiling() {
        const auto s = sd15();
        auto in = at(1024);
        in.batch = 4;
        const auto plain = predict(s, in).decode.activations;
        in.plan.vaeSlicing = true;
        const auto sliced = predict(s, in).decode.activations;
        QVERIFY(sliced < plain / 3);
        in.plan.vaeTiling = true;
        const auto tiled = predict(s, in);
        QVERIFY(tiled.decode.activations < sliced / 2);
        QVERIFY(tiled.decode.peakAt.find("tile") != std::string::npos);
        // At or below the tile size tiling changes nothing (diffusers' threshold).
        QCOMPARE(predict(s, at(512, tiled.input.plan)).decode.activations,
                 predict(s, at(512, api::MemoryPlan{})).decode.activations);
    }

    void offloadOnCuda() {
        const auto s = sd15();
        auto in = at(512);
        in.cuda = true;
        in.plan.offload = api::Offload::Model;
        const auto p = predict(s, in);
        QCOMPARE(p.denoise.weights, s.unet.params * 4);
        QCOMPARE(p.decode.weights, s.vae.params * 4);
        QCOMPARE(p.load.weights, int64_t(0));
        in.cuda = false;  // on the CPU everything lives in RAM anyway
        QCOMPARE(predict(s, in).denoise.weights, (s.unet.params + s.vae.params + s.textEncoders[0].params) * 4);
    }

    // A hot conditioning cache: no text-encoder activations; with offload the encoders stay off the device.
    void hotTextCache() {
        const auto s = sd15();
        auto in = at(512);
        in.cuda = true;
        in.plan.offload = api::Offload::Model;
        const auto cold = predict(s, in);
        in.textCached = true;
        const auto hot = predict(s, in);
        QVERIFY(cold.encode.weights > 0 && cold.encode.activations > 0);
        QCOMPARE(hot.encode.weights, int64_t(0));
        QCOMPARE(hot.encode.activations, int64_t(0));
        QCOMPARE(hot.denoise.total(), cold.denoise.total());
        in.cuda = false;
        in.plan.offload = api::Offload::None;
        QCOMPARE(predict(s, in).encode.activations, int64_t(0));
    }

    void fitsMessage() {
        const auto s = sd15();
        auto in = at(1536);
        in.cuda = true;
        in.baselineBytes = 600 << 20;
        in.plan.unet = in.plan.textEncoder = in.plan.vae = api::Precision::FP16;
        const auto p = predict(s, in);
        QCOMPARE(p.peakStage(), "decode");
        const auto ok = fits(p, 64 * GB);
        QVERIFY(ok.fits);
        QVERIFY(ok.message.empty());

        Preset six;
        six.name = "6gb";
        six.budgetBytes = 6 * GB;
        six.plan = in.plan;
        six.plan.vaeTiling = true;  // (sliced attention would not help: at 192² latents its scores exceed SDPA's)
        const std::vector<Preset> presets{six};
        const auto bad = fits(p, 6 * GB, &presets);
        QVERIFY(!bad.fits);
        QVERIFY2(bad.message.rfind("needs " + formatGb(p.peak()) + ", preset budget 6 GB: ", 0) == 0, bad.message.c_str());
        QVERIFY2(bad.message.find("enable VAE tiling") != std::string::npos, bad.message.c_str());
        QVERIFY2(bad.message.find("switch to 6gb") != std::string::npos, bad.message.c_str());
    }

    void formatting() {
        QCOMPARE(formatGb(6 * GB), std::string("6 GB"));
        QCOMPARE(formatGb(int64_t(7.8 * double(GB))), std::string("7.8 GB"));
        nlohmann::json j = predict(sd15(), at(512));
        QVERIFY(j["denoise"]["total"].get<int64_t>() > 0);
        QCOMPARE(j["peak_stage"].get<std::string>(), std::string(predict(sd15(), at(512)).peakStage()));
    }
};

QTEST_APPLESS_MAIN(TestPredictor)
#include "test_predictor.moc"
