// AutoencoderTiny (TAESD) parity against diffusers (fixtures from tests/parity/fixtures_taesd.py): decode/encode
// for the diffusers folder, the original madebyollin single files and the real-size architecture; layout
// detection; errors that name the key; the 8-bit preview helper.
#include "core/io/model_error.h"
#include "core/io/safetensors.h"
#include "core/nn/taesd.h"
#include "core/pipeline/taesd_preview.h"
#include "tests/common/tensor_checks.h"
#include "tests/common/test_program.h"

#include <QtTest>

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <fstream>

namespace test_taesd {  // the test program is a unity build: each file keeps its names

using namespace dd;
namespace fs = std::filesystem;

namespace {

const std::string kDir = std::string(DD_FIXTURES_DIR) + "/taesd";

io::TensorMap fixture(const std::string& name) { return io::SafetensorsFile::open(kDir + "/" + name + ".safetensors")->all(); }

using test::maxAbsDifference;
using test::modelFileErrorOf;

// A scratch copy of one fixture file with some tensors changed.
std::string rewritten(const std::string& name, const std::function<void(io::TensorMap&)>& edit) {
    auto w = io::SafetensorsFile::open(kDir + "/" + name)->all();
    for (auto& [k, t] : w) t = t.clone();
    edit(w);
    const auto dir = fs::path(DD_BINARY_DIR) / "test_taesd_scratch";
    fs::create_directories(dir);
    const auto path = (dir / fs::path(name).filename()).string();
    io::writeSafetensors(path, w);
    return path;
}

} // namespace

class TestTaesd : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
        if (!fs::exists(kDir + "/tiny.safetensors"))
            QSKIP("fixtures missing: run tests/parity/fixtures_taesd.py <fixtures dir>");
    }

    void tinyMatchesDiffusers_data() {
        QTest::addColumn<QString>("decoderPath");
        QTest::addColumn<QString>("encoderPath");
        QTest::newRow("diffusers folder") << "tiny" << "";
        QTest::newRow("diffusers file") << "tiny/diffusion_pytorch_model.safetensors" << "";
        QTest::newRow("original files") << "tiny_decoder.safetensors" << "tiny_encoder.safetensors";
        QTest::newRow("original, encoder first") << "tiny_encoder.safetensors" << "tiny_decoder.safetensors";
    }
    void tinyMatchesDiffusers() {
        QFETCH(QString, decoderPath);
        QFETCH(QString, encoderPath);
        c10::InferenceMode guard;
        const auto other = encoderPath.isEmpty() ? std::string() : kDir + "/" + encoderPath.toStdString();
        auto taesd = nn::loadTaesd(kDir + "/" + decoderPath.toStdString(), torch::kCPU, other);
        QVERIFY(taesd->hasEncoder() && taesd->hasDecoder());
        QCOMPARE(taesd->config().numDecoderBlocks, (std::vector<int64_t>{1, 2, 1}));
        QCOMPARE(taesd->config().decoderBlockOutChannels, (std::vector<int64_t>{16, 16, 16}));
        QCOMPARE(taesd->scaleFactor(), int64_t(4));
        const auto f = fixture("tiny");
        QVERIFY(f.at("latents").abs().max().item<double>() > 3);  // the tanh clamp matters
        const double dec = maxAbsDifference(taesd->decode(f.at("latents")), f.at("decoded"));
        const double enc = maxAbsDifference(taesd->encode(f.at("image")), f.at("encoded"));
        qInfo("%s: max abs error decode %.3g, encode %.3g", qPrintable(decoderPath), dec, enc);
        QVERIFY(dec < 1e-5 && enc < 1e-5);
        QVERIFY(maxAbsDifference(taesd->scaleLatents(f.at("encoded")), f.at("scaled")) < 1e-6);
        QVERIFY(maxAbsDifference(taesd->unscaleLatents(f.at("scaled")), f.at("unscaled")) < 1e-6);
        const auto rgb = taesd->decodeLatents(f.at("latents"));
        QVERIFY(maxAbsDifference(rgb, (f.at("decoded") / 2 + 0.5).clamp(0, 1)) < 1e-5);
    }

    void singleHalves() {
        c10::InferenceMode guard;
        const auto f = fixture("tiny");
        auto dec = nn::loadTaesd(kDir + "/tiny_decoder.safetensors");
        QVERIFY(dec->hasDecoder() && !dec->hasEncoder());
        QVERIFY(maxAbsDifference(dec->decode(f.at("latents")), f.at("decoded")) < 1e-5);
        QVERIFY_THROWS_EXCEPTION(std::logic_error, dec->encode(f.at("image")));
        auto enc = nn::loadTaesd(kDir + "/tiny_encoder.safetensors");
        QVERIFY(enc->hasEncoder() && !enc->hasDecoder());
        QVERIFY(maxAbsDifference(enc->encode(f.at("image")), f.at("encoded")) < 1e-5);
        QCOMPARE(enc->config().numEncoderBlocks, (std::vector<int64_t>{1, 2, 1}));
    }

    void defaultArchitectureMatchesDiffusers_data() {
        QTest::addColumn<QString>("path");
        QTest::addColumn<QString>("other");
        QTest::newRow("diffusers folder (fp16)") << "default" << "";
        QTest::newRow("original fp16 files") << "default_decoder.safetensors" << "default_encoder.safetensors";
    }
    void defaultArchitectureMatchesDiffusers() {
        QFETCH(QString, path);
        QFETCH(QString, other);
        c10::InferenceMode guard;
        auto taesd = nn::loadTaesd(kDir + "/" + path.toStdString(), torch::kCPU,
                                   other.isEmpty() ? std::string() : kDir + "/" + other.toStdString());
        const nn::TaesdConfig want;  // diffusers' defaults are the published TAESD
        QCOMPARE(taesd->config().numDecoderBlocks, want.numDecoderBlocks);
        QCOMPARE(taesd->config().numEncoderBlocks, want.numEncoderBlocks);
        QCOMPARE(taesd->config().decoderBlockOutChannels, want.decoderBlockOutChannels);
        QCOMPARE(taesd->config().latentChannels, int64_t(4));
        QCOMPARE(taesd->scaleFactor(), int64_t(8));
        int64_t decoderParams = 0;
        for (const auto& p : taesd->decoder->parameters()) decoderParams += p.numel();
        QCOMPARE(decoderParams, int64_t(1222531));  // TAESD README
        QCOMPARE(taesd->parameters().front().scalar_type(), torch::kFloat32);
        const auto f = fixture("default");
        const double dec = maxAbsDifference(taesd->decode(f.at("latents")), f.at("decoded"));
        const double enc = maxAbsDifference(taesd->encode(f.at("image")), f.at("encoded"));
        qInfo("%s: max abs error decode %.3g (|ref| max %.3g), encode %.3g", qPrintable(path), dec,
              f.at("decoded").abs().max().item<double>(), enc);
        QVERIFY(dec < 1e-5 && enc < 1e-5);
    }

    void previewIsTheDecodeInBytes() {
        c10::InferenceMode guard;
        auto taesd = nn::loadTaesd(kDir + "/default_decoder.safetensors");
        const auto f = fixture("default");
        const auto img = pipeline::taesdPreview(*taesd, f.at("latents")[0]);
        QCOMPARE(img.width, 128);
        QCOMPARE(img.height, 128);
        QCOMPARE(img.rgb.size(), size_t(128 * 128 * 3));
        const auto want = (f.at("decoded")[0] / 2 + 0.5).clamp(0, 1).mul(255).permute({1, 2, 0}).floor();
        const auto got = torch::from_blob(const_cast<uint8_t*>(img.rgb.data()), {128, 128, 3}, torch::kUInt8).to(torch::kFloat32);
        // Truncation may flip a level where the float result sits on an integer.
        QVERIFY2(maxAbsDifference(got, want) <= 1, qPrintable(QString::number(maxAbsDifference(got, want))));
        // Half-precision latents (a UNet run in fp16) are cast to the model's dtype.
        QCOMPARE(pipeline::taesdPreview(*taesd, f.at("latents")[0].to(torch::kFloat16)).rgb.size(), img.rgb.size());
    }

    void missingWeightIsNamed_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("drop");
        QTest::addColumn<QString>("named");
        QTest::newRow("diffusers") << "tiny/diffusion_pytorch_model.safetensors" << "decoder.layers.2.conv.4.bias"
                                   << "'decoder.layers.2.conv.4.bias' is missing";
        QTest::newRow("original decoder") << "tiny_decoder.safetensors" << "3.conv.4.bias" << "'3.conv.4.bias'";
        QTest::newRow("original encoder") << "tiny_encoder.safetensors" << "1.conv.2.weight" << "'1.conv.2.weight'";
        QTest::newRow("output conv") << "tiny_decoder.safetensors" << "11.bias" << "decoder has no output conv";
    }
    void missingWeightIsNamed() {
        QFETCH(QString, file);
        QFETCH(QString, drop);
        QFETCH(QString, named);
        const auto path = rewritten(file.toStdString(),
                                    [&](io::TensorMap& w) { QVERIFY(w.erase(drop.toStdString()) == 1); });
        const auto msg = modelFileErrorOf([&] { nn::loadTaesd(path); });
        qInfo("%s", qPrintable(msg));
        QVERIFY2(msg.contains(named) && msg.contains(QString::fromStdString(path)), qPrintable(msg));
    }

    void folderWithMissingWeightNamesIt() {
        const auto dir = fs::path(DD_BINARY_DIR) / "test_taesd_scratch" / "folder";
        fs::create_directories(dir);
        fs::copy_file(kDir + "/tiny/config.json", dir / "config.json", fs::copy_options::overwrite_existing);
        auto w = io::SafetensorsFile::open(kDir + "/tiny/diffusion_pytorch_model.safetensors")->all();
        w.erase("encoder.layers.0.weight");
        io::writeSafetensors((dir / "diffusion_pytorch_model.safetensors").string(), w);
        const auto msg = modelFileErrorOf([&] { nn::loadTaesd(dir.string()); });
        QVERIFY2(msg.contains("'encoder.layers.0.weight' is missing") && msg.contains("[16, 3, 3, 3]"), qPrintable(msg));
    }

    void wrongKeysAreNamed_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("key");
        QTest::addColumn<QString>("named");
        QTest::newRow("unknown key in original") << "tiny_decoder.safetensors" << "first_stage_model.x" << "'first_stage_model.x'";
        QTest::newRow("unknown key in diffusers") << "tiny/diffusion_pytorch_model.safetensors" << "vae.conv_in.weight"
                                                  << "'vae.conv_in.weight'";
        QTest::newRow("extra layer") << "tiny_decoder.safetensors" << "4.conv.9.weight" << "unexpected weight '4.conv.9.weight'";
        QTest::newRow("wrong shape") << "tiny_decoder.safetensors" << "3.conv.0.weight" << "'3.conv.0.weight'";
    }
    void wrongKeysAreNamed() {
        QFETCH(QString, file);
        QFETCH(QString, key);
        QFETCH(QString, named);
        const auto k = key.toStdString();
        const auto path = rewritten(file.toStdString(), [&](io::TensorMap& w) {
            w[k] = w.count(k) ? torch::zeros({16, 8, 3, 3}) : torch::zeros({2});
        });
        const auto msg = modelFileErrorOf([&] { nn::loadTaesd(path); });
        qInfo("%s", qPrintable(msg));
        QVERIFY2(msg.contains(named), qPrintable(msg));
    }

    void otherModelFilesAreRejected() {
        QVERIFY(modelFileErrorOf([] { nn::loadTaesd(kDir + "/nowhere.safetensors"); }).contains("not found"));
        QVERIFY(modelFileErrorOf([] { nn::loadTaesd(kDir); }).contains("not a diffusers AutoencoderTiny folder"));
        // A reference-output file is not a model: its first key is neither layout.
        QVERIFY(modelFileErrorOf([] { nn::loadTaesd(kDir + "/tiny.safetensors"); }).contains("unexpected key 'decoded'"));
        auto j = nlohmann::json::parse(std::ifstream(kDir + "/tiny/config.json"));
        j["_class_name"] = "AutoencoderKL";
        QVERIFY(modelFileErrorOf([&] { nn::TaesdConfig::fromJson(j); }).contains("not AutoencoderTiny"));
        j["_class_name"] = "AutoencoderTiny";
        j["decoder_block_out_channels"] = {16, 32, 16};
        QVERIFY(modelFileErrorOf([&] { nn::TaesdConfig::fromJson(j); }).contains("must all be equal"));
        j["decoder_block_out_channels"] = {16, 16};
        QVERIFY(modelFileErrorOf([&] { nn::TaesdConfig::fromJson(j); }).contains("differ in length"));
    }
};

DD_REGISTER_TEST(TestTaesd)

} // namespace test_taesd
#include "test_taesd.moc"
