// fp8 layerwise storage against diffusers' enable_layerwise_casting (fixtures from
// tests/parity/fixtures_offload.py): the tiny SD1 and SDXL UNets, weights stored in float8_e4m3fn /
// float8_e5m2 with diffusers' skip patterns, computed in fp32. Same rounding of the same weights, so the
// outputs agree to float32 noise, while they differ from the fp32 run by ~10 %.
#include "core/io/checkpoint.h"
#include "core/io/safetensors.h"
#include "core/memory/offload.h"
#include "core/nn/load_weights.h"
#include "core/nn/unet.h"
#include "tests/common/test_program.h"

#include <torch/torch.h>

#include <QtTest>

#include <filesystem>

namespace test_fp8_parity {  // the test program is a unity build: each file keeps its names

using namespace dd;

namespace {

const std::string kFixtures = DD_FIXTURES_DIR;

double maxAbs(const torch::Tensor& a, const torch::Tensor& b) {
    if (a.sizes() != b.sizes()) return std::numeric_limits<double>::infinity();
    return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
}

} // namespace

class TestFp8Parity : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
        if (!std::filesystem::exists(kFixtures + "/offload/sd1.safetensors"))
            QSKIP("fixtures missing: run tests/parity/fixtures_models.py and fixtures_offload.py <fixtures dir>");
    }

    void matchesDiffusersLayerwiseCasting_data() {
        QTest::addColumn<QString>("family");
        QTest::addColumn<QString>("format");
        for (const char* family : {"sd1", "sdxl"})
            for (const char* format : {"e4m3fn", "e5m2"}) QTest::newRow((std::string(family) + " " + format).c_str()) << family << format;
    }
    void matchesDiffusersLayerwiseCasting() {
        QFETCH(QString, family);
        QFETCH(QString, format);
        c10::InferenceMode inference;
        const auto ck = io::loadCheckpoint(kFixtures + "/models/tiny-" + family.toStdString());
        nn::UNet2DConditionModel unet(nn::UNetConfig::fromJson(ck.configs.at("unet")));
        nn::loadWeights(*unet, ck.components.at("unet"), "unet");
        unet->eval();
        const auto f = io::SafetensorsFile::open(kFixtures + "/offload/" + family.toStdString() + ".safetensors")->all();
        std::optional<nn::AddedCond> added;
        if (f.count("text_embeds")) added = nn::AddedCond{f.at("text_embeds"), f.at("time_ids")};

        const auto plain = unet->forward(f.at("sample"), 981.0, f.at("encoder_hidden_states"), added);
        QVERIFY(maxAbs(plain, f.at("out_fp32")) < 1e-4);  // the model itself matches first

        memory::ResidencyLedger ledger;
        memory::OffloadConfig c;
        c.fp8 = memory::fp8DtypeOf(format.toStdString());
        memory::NetworkOffload offload(*unet, c, ledger);
        const memory::NetworkUse use(&offload);
        const auto out = unet->forward(f.at("sample"), 981.0, f.at("encoder_hidden_states"), added);
        const auto& want = f.at("out_" + format.toStdString());
        const double err = maxAbs(out, want), fromFp32 = maxAbs(want, f.at("out_fp32"));
        qInfo("%s %s: max abs error vs diffusers %.3g (fp8 vs fp32 in diffusers: %.3g)", qPrintable(family),
              qPrintable(format), err, fromFp32);
        QVERIFY(err < 1e-4);
        QVERIFY(fromFp32 > 100 * 1e-4);  // the check can tell fp8 storage from none
    }
};

DD_REGISTER_TEST(TestFp8Parity)

} // namespace test_fp8_parity
#include "test_fp8_parity.moc"
