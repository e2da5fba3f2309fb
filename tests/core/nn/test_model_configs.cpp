// The config.json readers refuse sizes no real checkpoint has, naming the file, before any module is built
// (inputs the fuzz_model_config target found or could find; a refused config must never reach the allocator).
#include "core/io/model_error.h"
#include "core/nn/clip_text_config.h"
#include "core/nn/unet_config.h"
#include "core/nn/vae_config.h"

#include <QtTest>

#include <nlohmann/json.hpp>

using nlohmann::json;

namespace {

template <typename F>
QString refusal(F&& read) {
    try {
        read();
    } catch (const dd::io::ModelFileError& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

} // namespace

class TestModelConfigs : public QObject {
    Q_OBJECT
private slots:
    void vaeRefusesImplausibleSizes() {
        const json ok = {{"block_out_channels", {32, 64}}, {"norm_num_groups", 32}};
        QCOMPARE(dd::nn::VaeConfig::fromJson(ok).scaleFactor(), int64_t(2));
        for (const json& bad : {json{{"block_out_channels", json::array()}},
                                json{{"block_out_channels", {32, 64}}, {"norm_num_groups", 0}},
                                json{{"block_out_channels", {32, 48}}, {"norm_num_groups", 32}},
                                json{{"block_out_channels", {32, -64}}, {"norm_num_groups", 32}},
                                json{{"block_out_channels", {32}}, {"norm_num_groups", 32}, {"layers_per_block", 100000}},
                                json{{"block_out_channels", {32}}, {"norm_num_groups", 32}, {"latent_channels", 0}},
                                json{{"block_out_channels", {32, 6.4e19}}, {"norm_num_groups", 32}},
                                json{{"block_out_channels", {32}}, {"norm_num_groups", 32}, {"sample_size", {-1e300}}}}) {
            const auto message = refusal([&] { dd::nn::VaeConfig::fromJson(bad); });
            QVERIFY2(message.contains("vae/config.json"), qPrintable(QString::fromStdString(bad.dump()) + " → " + message));
        }
    }

    void unetRefusesImplausibleSizes() {
        const json base = {{"block_out_channels", {32, 64}},
                           {"down_block_types", {"CrossAttnDownBlock2D", "DownBlock2D"}},
                           {"up_block_types", {"UpBlock2D", "CrossAttnUpBlock2D"}},
                           {"attention_head_dim", 8}, {"cross_attention_dim", 32}, {"norm_num_groups", 32}};
        QCOMPARE(dd::nn::UNetConfig::fromJson(base).blockOutChannels.size(), size_t(2));
        for (const auto& [key, value] : std::vector<std::pair<std::string, json>>{
                 {"norm_num_groups", 0}, {"norm_num_groups", 48}, {"cross_attention_dim", -1},
                 {"layers_per_block", 1000}, {"in_channels", 0}, {"block_out_channels", json::array()},
                 {"transformer_layers_per_block", {1, -2}},
                 // Floats past int64 were cast blindly before (UBSan in fuzz_model_config); a fraction is no size.
                 {"layers_per_block", 8e22}, {"attention_head_dim", {8, 1e300}}, {"cross_attention_dim", 32.5}}) {
            json bad = base;
            bad[key] = value;
            if (key == "block_out_channels") bad["down_block_types"] = bad["up_block_types"] = json::array();
            const auto message = refusal([&] { dd::nn::UNetConfig::fromJson(bad); });
            QVERIFY2(message.contains("unet/config.json"), qPrintable(QString::fromStdString(key + " " + value.dump()) + " → " + message));
        }
    }

    void clipRefusesImplausibleSizesAndTypes() {
        for (const json& bad : {json{{"hidden_size", 0}}, json{{"num_hidden_layers", 100000}},
                                json{{"vocab_size", int64_t(1) << 40}}, json{{"hidden_size", "wide"}}, json::array()}) {
            const auto message = refusal([&] { dd::nn::ClipTextConfig::fromJson(bad); });
            QVERIFY2(message.contains("config.json"), qPrintable(QString::fromStdString(bad.dump()) + " → " + message));
        }
    }
};

QTEST_GUILESS_MAIN(TestModelConfigs)
#include "test_model_configs.moc"
