// AutoencoderKL parity against diffusers (fixtures from tests/parity/fixtures_unet.py): encode (mean, logvar,
// seeded sample), decode, sliced decode, tiled encode/decode, attention backends, weight errors.
#include "core/io/checkpoint.h"
#include "core/io/model_error.h"
#include "core/io/safetensors.h"
#include "core/nn/load_weights.h"
#include "core/nn/vae.h"
#include "tests/common/test_program.h"

#include <QtTest>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <filesystem>

namespace test_vae {  // the test program is a unity build: each file keeps its names

using namespace dd;
using dd::nn::AttentionBackend;

namespace {

const std::string kFixtures = DD_FIXTURES_DIR;

nn::AutoencoderKL loadTiny(const std::string& family) {
    const auto ck = io::loadCheckpoint(kFixtures + "/models/tiny-" + family);
    nn::AutoencoderKL vae(nn::VaeConfig::fromJson(ck.configs.at("vae")));
    const auto unused = nn::loadWeights(*vae, ck.components.at("vae"), "vae");
    if (!unused.empty()) throw std::runtime_error("unused vae weight " + unused.front());
    vae->eval();
    return vae;
}

io::TensorMap fixture(const std::string& family) {
    return io::SafetensorsFile::open(kFixtures + "/vae/" + family + ".safetensors")->all();
}

double maxAbs(const torch::Tensor& a, const torch::Tensor& b) {
    if (a.sizes() != b.sizes()) return std::numeric_limits<double>::infinity();
    return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
}

} // namespace

class TestVae : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
        if (!std::filesystem::exists(kFixtures + "/vae/sd1.safetensors"))
            QSKIP("fixtures missing: run tests/parity/fixtures_models.py and fixtures_unet.py <fixtures dir>");
    }

    void matchesDiffusers_data() {
        QTest::addColumn<QString>("family");
        for (const char* f : {"sd1", "sd2", "sdxl"}) QTest::newRow(f) << f;
    }
    void matchesDiffusers() {
        QFETCH(QString, family);
        c10::InferenceMode guard;
        auto vae = loadTiny(family.toStdString());
        const auto f = fixture(family.toStdString());
        const auto dist = vae->encode(f.at("image"));
        const double mean = maxAbs(dist.mean, f.at("mean")), logvar = maxAbs(dist.logvar, f.at("logvar"));
        const double sample = maxAbs(dist.sample(at::detail::createCPUGenerator(42)), f.at("sample_seed42"));
        const double decoded = maxAbs(vae->decode(f.at("latents")), f.at("decoded"));
        const double sliced = maxAbs(vae->decode(f.at("latents"), /*sliced=*/true), f.at("decoded"));
        qInfo("%s max abs error: mean %.3g, logvar %.3g, sample %.3g, decode %.3g, sliced decode %.3g",
              qPrintable(family), mean, logvar, sample, decoded, sliced);
        QVERIFY(mean < 1e-4 && logvar < 1e-4 && sample < 1e-4 && decoded < 1e-4 && sliced < 1e-4);
        QVERIFY(maxAbs(dist.mode(), dist.mean) == 0);
        const auto sdpa = vae->decode(f.at("latents"));
        vae->setAttention({AttentionBackend::Classic, 0});
        QVERIFY(maxAbs(vae->decode(f.at("latents")), sdpa) < 1e-5);
        vae->setAttention({AttentionBackend::Sliced, 1});
        QVERIFY(maxAbs(vae->decode(f.at("latents")), sdpa) < 1e-5);
        QVERIFY(maxAbs(vae->encode(f.at("image"), {.sliced = true}).mean, f.at("mean")) < 1e-4);
    }

    void tiledMatchesDiffusers() {
        c10::InferenceMode guard;
        auto vae = loadTiny("sd1");
        const auto f = fixture("sd1");
        const double enc = maxAbs(vae->encode(f.at("tile_image"), {.tiled = true}).mean, f.at("tiled_mean"));
        const double dec = maxAbs(vae->decode(f.at("tile_latents"), {.tiled = true}), f.at("tiled_decoded"));
        qInfo("tiled max abs error: encode mean %.3g, decode %.3g", enc, dec);
        QVERIFY(enc < 1e-4 && dec < 1e-4);
        // Tiling is only used above the tile size, and differs from the untiled result (per-tile GroupNorm).
        QVERIFY(maxAbs(vae->decode(f.at("latents"), {.tiled = true}), f.at("decoded")) < 1e-4);
        QVERIFY(maxAbs(vae->decode(f.at("tile_latents")), f.at("tiled_decoded")) > 1e-3);
    }

    void decodeLatentsScalesAndMaps() {
        c10::InferenceMode guard;
        auto vae = loadTiny("sd1");
        const auto f = fixture("sd1");
        const double s = vae->config().scalingFactor;
        QCOMPARE(s, 0.18215);
        QCOMPARE(vae->config().scaleFactor(), int64_t(2));
        const auto rgb = vae->decodeLatents(f.at("latents") * s);
        const auto want = (f.at("decoded") / 2 + 0.5).clamp(0, 1);
        QVERIFY(maxAbs(rgb, want) < 1e-4);
        QVERIFY(rgb.min().item<double>() >= 0 && rgb.max().item<double>() <= 1);
    }

    void missingAndWrongShapeWeightsAreNamed() {
        const auto ck = io::loadCheckpoint(kFixtures + "/models/tiny-sd1");
        nn::AutoencoderKL vae(nn::VaeConfig::fromJson(ck.configs.at("vae")));
        auto weights = ck.components.at("vae");
        weights.erase("decoder.mid_block.attentions.0.to_out.0.weight");
        try {
            nn::loadWeights(*vae, weights, "vae");
            QFAIL("no error");
        } catch (const io::ModelFileError& e) {
            const QString msg = e.what();
            QVERIFY2(msg.contains("decoder.mid_block.attentions.0.to_out.0.weight") && msg.contains("[64, 64]"),
                     qPrintable(msg));
        }
        weights = ck.components.at("vae");
        weights["quant_conv.weight"] = torch::zeros({8, 8, 3, 3});
        try {
            nn::loadWeights(*vae, weights, "vae");
            QFAIL("no error");
        } catch (const io::ModelFileError& e) {
            const QString msg = e.what();
            QVERIFY2(msg.contains("quant_conv.weight") && msg.contains("[8, 8, 1, 1]"), qPrintable(msg));
        }
    }

    void quantConvFlagsAreHonoured() {
        const auto ck = io::loadCheckpoint(kFixtures + "/models/tiny-sd1");
        auto cfg = ck.configs.at("vae");
        cfg["use_quant_conv"] = false;
        cfg["use_post_quant_conv"] = false;
        nn::AutoencoderKL vae(nn::VaeConfig::fromJson(cfg));
        const auto unused = nn::loadWeights(*vae, ck.components.at("vae"), "vae");
        QCOMPARE(unused.size(), size_t(4));  // {quant_conv, post_quant_conv}.{weight, bias}
        cfg["up_block_types"] = nlohmann::json::array({"UpDecoderBlock2D", "AttnUpDecoderBlock2D"});
        try {
            nn::VaeConfig::fromJson(cfg);
            QFAIL("no error");
        } catch (const io::ModelFileError& e) {
            QVERIFY(QString(e.what()).contains("AttnUpDecoderBlock2D"));
        }
    }
};

DD_REGISTER_TEST(TestVae)

} // namespace test_vae
#include "test_vae.moc"
