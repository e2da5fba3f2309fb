// Single-file checkpoints against the diffusers folders they were made from (tests/parity/fixtures_models.py
// writes both and checks them with diffusers' own single-file loader first).
#include "core/io/model_error.h"
#include "core/io/single_file.h"
#include "tests/common/test_program.h"

#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>

namespace test_single_file {  // the test program is a unity build: each file keeps its names

using namespace dd::io;
namespace fs = std::filesystem;

namespace {

const fs::path kModels = fs::path(DD_FIXTURES_DIR) / "models";

nlohmann::json readJson(const fs::path& p) {
    std::ifstream f(p);
    return nlohmann::json::parse(f);
}

// transformers >= 5.6 saves CLIPTextModel without the "text_model." level; Hub files and our loader have it.
TensorMap folderTensors(const fs::path& folder, const std::string& component) {
    const bool text = component.starts_with("text_encoder");
    TensorMap raw = SafetensorsFile::open(folder / component /
                                          (text ? "model.safetensors" : "diffusion_pytorch_model.safetensors"))
                        ->all();
    if (!text) return raw;
    TensorMap out;
    for (auto& [name, t] : raw)
        out[name.starts_with("text_model.") || name.starts_with("text_projection") ? name : "text_model." + name] = t;
    return out;
}

std::string compareTensors(const TensorMap& got, const TensorMap& want) {
    for (const auto& [name, t] : want)
        if (!got.count(name)) return "missing from the single file: " + name;
    for (const auto& [name, t] : got) {
        auto it = want.find(name);
        if (it == want.end()) return "not in the folder: " + name;
        if (t.sizes() != it->second.sizes() || !torch::equal(t, it->second)) return "tensor differs: " + name;
    }
    return {};
}

std::string compareFields(const nlohmann::json& got, const nlohmann::json& want,
                          const std::vector<std::string>& fields) {
    for (const auto& f : fields) {
        const auto a = got.value(f, nlohmann::json());
        const auto b = want.value(f, nlohmann::json());
        if (a != b) return f + ": derived " + a.dump() + ", folder " + b.dump();
    }
    return {};
}

const std::vector<std::string> kUnetFields = {
    "in_channels",       "out_channels",         "block_out_channels",     "layers_per_block",
    "down_block_types",  "up_block_types",       "cross_attention_dim",    "attention_head_dim",
    "use_linear_projection", "addition_embed_type", "addition_time_embed_dim",
    "projection_class_embeddings_input_dim", "transformer_layers_per_block"};
const std::vector<std::string> kVaeFields = {"in_channels", "out_channels", "block_out_channels",
                                             "layers_per_block", "latent_channels"};
const std::vector<std::string> kClipFields = {"hidden_size", "num_hidden_layers", "intermediate_size",
                                              "vocab_size", "max_position_embeddings"};

bool anyNoteContains(const Checkpoint& c, const std::string& text) {
    for (const auto& n : c.notes)
        if (n.find(text) != std::string::npos) return true;
    return false;
}

std::string loadError(const std::string& path) {
    try {
        loadSingleFile(path);
    } catch (const ModelFileError& e) {
        return e.what();
    }
    return "no error";
}

} // namespace

class TestSingleFile : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
        QVERIFY2(fs::exists(kModels / "tiny-sd1.safetensors"),
                 "fixtures missing: run .venv/bin/python tests/parity/fixtures_models.py " DD_FIXTURES_DIR);
    }

    void matchesDiffusersFolder_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<int>("family");
        QTest::addColumn<QStringList>("components");
        QTest::newRow("sd1") << "tiny-sd1" << int(ModelFamily::SD1) << QStringList{"unet", "vae", "text_encoder"};
        QTest::newRow("sd1-deep") << "tiny-sd1-deep" << int(ModelFamily::SD1)
                                  << QStringList{"unet", "vae", "text_encoder"};
        QTest::newRow("sd2") << "tiny-sd2" << int(ModelFamily::SD2) << QStringList{"unet", "vae", "text_encoder"};
        QTest::newRow("sdxl") << "tiny-sdxl" << int(ModelFamily::SDXL)
                              << QStringList{"unet", "vae", "text_encoder", "text_encoder_2"};
        QTest::newRow("sdxl-refiner") << "tiny-sdxl-refiner" << int(ModelFamily::SDXLRefiner)
                                      << QStringList{"unet", "vae", "text_encoder_2"};
    }

    void matchesDiffusersFolder() {
        QFETCH(QString, name);
        QFETCH(int, family);
        QFETCH(QStringList, components);
        const fs::path folder = kModels / name.toStdString();
        const auto unetConfig = readJson(folder / "unet/config.json");
        SingleFileOptions options;
        // Tiny models do not use the family's head size, so the head count is the one thing given.
        if (ModelFamily(family) != ModelFamily::SD1)
            options.configOverrides["unet"] = {{"attention_head_dim", unetConfig["attention_head_dim"]}};
        const Checkpoint ckpt = loadSingleFile(folder.string() + ".safetensors", options);
        QCOMPARE(int(ckpt.family), family);
        QCOMPARE(int(ckpt.format), int(CheckpointFormat::SingleFile));
        QCOMPARE(ckpt.components.size(), size_t(components.size()));
        for (const auto& c : components) {
            const std::string comp = c.toStdString();
            QVERIFY2(ckpt.components.count(comp), comp.c_str());
            const std::string err = compareTensors(ckpt.components.at(comp), folderTensors(folder, comp));
            QVERIFY2(err.empty(), (comp + ": " + err).c_str());
            auto fields = comp == "unet" ? kUnetFields : comp == "vae" ? kVaeFields : kClipFields;
            if (comp == "text_encoder_2") fields.push_back("projection_dim");
            const std::string cfgErr = compareFields(ckpt.configs.at(comp), readJson(folder / comp / "config.json"), fields);
            QVERIFY2(cfgErr.empty(), (comp + " config " + cfgErr).c_str());
        }
        QVERIFY(ckpt.configs.count("scheduler"));
    }

    // diffusers' default height and width: sample_size × 2^(VAE blocks - 1); a single file gets its family's size.
    void nativeImageSizeIsDiffusersDefault() {
        const nlohmann::json vae4 = {{"block_out_channels", {128, 256, 512, 512}}};
        QCOMPARE(nativeImageSize({{"sample_size", 64}}, vae4), 512);
        QCOMPARE(nativeImageSize({{"sample_size", 96}}, vae4), 768);
        QCOMPARE(nativeImageSize({{"sample_size", 128}}, vae4), 1024);
        QCOMPARE(nativeImageSize(nlohmann::json::object(), nlohmann::json::object()), 512);  // diffusers' 64 and 8
        QCOMPARE(nativeImageSize({{"sample_size", 16}}, {{"block_out_channels", {32, 64, 64, 64}}}), 128);
        for (const auto& [name, sample] : {std::pair{"tiny-sd1", 64}, {"tiny-sd2", 96}, {"tiny-sdxl", 128}}) {
            const Checkpoint ckpt = loadSingleFile((kModels / (std::string(name) + ".safetensors")).string());
            const int scale = 1 << (int(ckpt.configs.at("vae")["block_out_channels"].size()) - 1);
            QCOMPARE(nativeImageSize(ckpt), sample * scale);
        }
    }

    void notesSayWhatWasAssumed() {
        const Checkpoint sd2 = loadSingleFile((kModels / "tiny-sd2.safetensors").string());
        QVERIFY(anyNoteContains(sd2, "attention_head_dim unknown"));  // 32-wide blocks, head size 64
        QVERIFY(anyNoteContains(sd2, "v_prediction"));
        QVERIFY(anyNoteContains(sd2, "penultimate"));
        QVERIFY(sd2.configs.at("scheduler")["prediction_type"] == "v_prediction");
        const Checkpoint sd1 = loadSingleFile((kModels / "tiny-sd1.safetensors").string());
        QVERIFY(anyNoteContains(sd1, "8 heads"));
        QVERIFY(!anyNoteContains(sd1, "ignored"));  // position_ids and LDM buffers are expected, not unknown
    }

    void overridesPatchTheDerivedConfig() {
        SingleFileOptions options;
        options.configOverrides["scheduler"] = {{"prediction_type", "epsilon"}};
        options.configOverrides["vae"] = {{"scaling_factor", 0.5}};
        const Checkpoint c = loadSingleFile((kModels / "tiny-sd2.safetensors").string(), options);
        QVERIFY(c.configs.at("scheduler")["prediction_type"] == "epsilon");
        QCOMPARE(c.configs.at("vae")["scaling_factor"].get<double>(), 0.5);
        QVERIFY(anyNoteContains(c, "scaling_factor set by the caller"));
    }

    void unrelatedFileIsRefusedWithWhatWasFound() {
        QTemporaryDir dir;
        const std::string path = dir.filePath("llm.safetensors").toStdString();
        TensorMap t;
        for (int i = 0; i < 3; ++i) t["transformer.h." + std::to_string(i) + ".attn.weight"] = torch::rand({2, 2});
        t["lm_head.weight"] = torch::rand({4, 2});
        writeSafetensors(path, t);
        const std::string msg = loadError(path);
        QVERIFY2(msg.find("no UNet tensors") != std::string::npos, msg.c_str());
        QVERIFY2(msg.find("transformer.* (3)") != std::string::npos, msg.c_str());
        QVERIFY2(msg.find("lm_head.* (1)") != std::string::npos, msg.c_str());
    }

    void diffusersComponentFileIsRefused() {
        const std::string path = (kModels / "tiny-sd1/unet/diffusion_pytorch_model.safetensors").string();
        const std::string msg = loadError(path);
        QVERIFY2(msg.find("down_blocks.*") != std::string::npos, msg.c_str());
    }

    void truncatedUnetLayoutIsAnError() {
        QTemporaryDir dir;
        const std::string path = dir.filePath("broken.safetensors").toStdString();
        TensorMap t = SafetensorsFile::open((kModels / "tiny-sd1.safetensors").string())->all();
        t.erase("model.diffusion_model.middle_block.1.proj_in.weight");
        writeSafetensors(path, t);
        const std::string msg = loadError(path);
        QVERIFY2(msg.find("middle block") != std::string::npos, msg.c_str());
    }
};

DD_REGISTER_TEST(TestSingleFile)

} // namespace test_single_file
#include "test_single_file.moc"
