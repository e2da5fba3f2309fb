// A full-size SD 1.5 UNet (random weights, tests/parity/fixtures_unet.py with DD_SLOW_FIXTURES=1) against
// diffusers' output for the same input, with the SDPA and sliced attention backends. Label "slow": its own
// program, so that CI's plain build (which runs only the slow and RSS-bound tests) compiles just this file.
#include "core/io/safetensors.h"
#include "core/nn/load_weights.h"
#include "core/nn/unet.h"

#include <QtTest>

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

using namespace dd;
using dd::nn::AttentionBackend;

class TestUnetSlow : public QObject {
    Q_OBJECT
private slots:
    void fullSizeSd15() {
        const std::string dir = std::string(DD_FIXTURES_DIR) + "/unet/";
        if (!std::filesystem::exists(dir + "sd15-full.safetensors"))
            QFAIL("missing fixture: run DD_SLOW_FIXTURES=1 tests/parity/fixtures_unet.py <fixtures dir> (./test.sh does)");
        c10::InferenceMode guard;
        std::ifstream cfgFile(dir + "sd15-full-config.json");
        const auto cfg = nn::UNetConfig::fromJson(nlohmann::json::parse(cfgFile));
        QCOMPARE(cfg.heads, (std::vector<int64_t>{8, 8, 8, 8}));
        nn::UNet2DConditionModel unet(cfg);
        auto weightsFile = io::SafetensorsFile::open(dir + "sd15-full-weights.safetensors");
        QVERIFY(nn::loadWeights(*unet, weightsFile->all(), "unet").empty());
        weightsFile.reset();
        const auto f = io::SafetensorsFile::open(dir + "sd15-full.safetensors")->all();
        const auto want = f.at("out");
        for (auto backend : {AttentionBackend::Sdpa, AttentionBackend::Sliced}) {
            unet->setAttention({backend, 0});
            const auto out = unet->forward(f.at("sample"), f.at("timesteps"), f.at("encoder_hidden_states"));
            QCOMPARE(out.sizes(), want.sizes());
            const double err = (out.to(torch::kFloat64) - want.to(torch::kFloat64)).abs().max().item<double>();
            const double scale = want.abs().max().item<double>();
            qInfo("SD1.5 full size (%s): max abs error %.3g, max |out| %.3g, relative %.3g",
                  backend == AttentionBackend::Sdpa ? "sdpa" : "sliced", err, scale, err / scale);
            QVERIFY(err / scale < 1e-4);
        }
    }
};

QTEST_GUILESS_MAIN(TestUnetSlow)
#include "test_unet_slow.moc"
