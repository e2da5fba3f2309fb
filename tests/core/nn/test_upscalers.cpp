// Upscaler networks against spandrel (fixtures from tests/parity/fixtures_upscalers.py): ESRGAN in its three key
// layouts (old, Real-ESRGAN with pixel unshuffle, BSRGAN), ESRGAN+, the compact SRVGGNet and three SwinIR heads,
// detected from the weights alone; tiled against untiled; the files that are refused and why.
#include "core/api/errors.h"
#include "core/io/model_error.h"
#include "core/io/safetensors.h"
#include "core/nn/cpu_kernels.h"
#include "core/nn/upscaler.h"
#include "core/pipeline/upscale.h"
#include "tests/common/tensor_checks.h"
#include "tests/common/test_program.h"

#include <QtTest>

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace test_upscalers {

using namespace dd;
namespace fs = std::filesystem;

namespace {

const std::string kDir = std::string(DD_FIXTURES_DIR) + "/upscalers";

using test::maxAbsDifference;
using test::modelFileErrorOf;

nlohmann::json cases() { return nlohmann::json::parse(std::ifstream(kDir + "/cases.json")); }

struct Case {
    nn::LoadedUpscaler model;
    torch::Tensor input, expected;  // [1,3,H,W] in [0, 1]; spandrel's output
};

Case load(const std::string& name) {
    const auto io = io::SafetensorsFile::open(kDir + "/" + name + ".io.safetensors");
    auto image = io->tensor("input");
    return {nn::loadUpscaler(kDir + "/" + name + ".safetensors"), image.permute({2, 0, 1}).unsqueeze(0).to(torch::kFloat32) / 255.0,
            io->tensor("output")};
}

std::string scratch(const std::string& file, const io::TensorMap& tensors) {
    const auto dir = fs::path(DD_BINARY_DIR) / "test_upscalers_scratch";
    fs::create_directories(dir);
    const auto path = (dir / file).string();
    io::writeSafetensors(path, tensors);
    return path;
}

} // namespace

class TestUpscalers : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
        if (!fs::exists(kDir + "/cases.json")) QSKIP("fixtures missing: run tests/parity/fixtures_upscalers.py <fixtures dir>");
    }

    void matchesSpandrel_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QString>("architecture");
        QTest::addColumn<int>("scale");
        for (const auto& c : cases())
            QTest::newRow(c["name"].get<std::string>().c_str())
                << QString::fromStdString(c["name"]) << QString::fromStdString(c["architecture"]) << c["scale"].get<int>();
    }

    // The architecture and scale spandrel detects, and its output within 1e-4 with our CPU fast paths off.
    void matchesSpandrel() {
        QFETCH(QString, name);
        QFETCH(QString, architecture);
        QFETCH(int, scale);
        const c10::InferenceMode inference;
        const nn::WinogradConvScope exact(false);
        auto c = load(name.toStdString());
        const auto& config = c.model.net->config;
        QCOMPARE(config.scale, scale);
        const QString ours = QString::fromStdString(config.architectureName());
        QVERIFY2(ours.startsWith(architecture == "Compact" ? "RealESRGAN Compact" : architecture), qPrintable(ours));
        const auto out = c.model.net->upscale(c.input);
        const double err = maxAbsDifference(out, c.expected);
        qInfo("%s: %s, max |Δ| %.2e", qPrintable(name), config.describe().c_str(), err);
        QVERIFY2(err < 1e-4, qPrintable(QString::number(err)));
    }

    // Tiles whose overlap covers the receptive field give the whole image's result; with the fast paths on too.
    void tiledEqualsUntiled_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<double>("tolerance");
        QTest::newRow("esrgan") << "esrgan-old-4x" << 1e-5;
        QTest::newRow("unshuffle") << "realesrgan-x2-unshuffle" << 1e-5;
        QTest::newRow("compact") << "compact-4x" << 1e-5;
        // Shifted windows see the whole image; the tiles' windows start where the image's do (tiles of 8 and
        // an overlap of 8, both multiples of the window) and the error is what the cut-off context leaves.
        QTest::newRow("swinir") << "swinir-classical-2x" << 0.5;
    }
    void tiledEqualsUntiled() {
        QFETCH(QString, name);
        QFETCH(double, tolerance);
        const c10::InferenceMode inference;
        auto c = load(name.toStdString());
        auto& net = *c.model.net;
        const auto whole = pipeline::upscaleTiled(net, c.input, {});
        const int64_t radius = net.config.arch == nn::UpscalerArch::SwinIR ? 8 : net.receptiveRadius();
        int tiles = 0;
        const auto tiled = pipeline::upscaleTiled(net, c.input, {8, radius}, nullptr, [&](int, int total) { tiles = total; });
        QVERIFY(tiles >= 6);
        const double err = maxAbsDifference(tiled, whole);
        qInfo("%s: %d tiles, overlap %lld, max |Δ| %.2e", qPrintable(name), tiles, (long long)radius, err);
        QVERIFY2(err < tolerance, qPrintable(QString::number(err)));
        if (net.config.arch != nn::UpscalerArch::SwinIR) return;
        // A larger overlap brings the SwinIR tiles closer to the whole image.
        const auto wider = pipeline::upscaleTiled(net, c.input, {8, 16});
        QVERIFY(maxAbsDifference(wider, whole) < err);
    }

    // The 8-bit path: spandrel's output clamped and rounded, to the unit.
    void imageRoundTrip() {
        const c10::InferenceMode inference;
        const nn::WinogradConvScope exact(false);
        auto c = load("compact-2x");
        api::Image in{int(c.input.size(3)), int(c.input.size(2)), {}};
        const auto hwc = (c.input[0].permute({1, 2, 0}) * 255).round().to(torch::kUInt8).contiguous();
        in.rgb.assign(hwc.data_ptr<uint8_t>(), hwc.data_ptr<uint8_t>() + hwc.numel());
        const auto out = pipeline::upscaleImage(*c.model.net, in, {});
        QCOMPARE(out.width, in.width * 2);
        QCOMPARE(out.height, in.height * 2);
        const auto want = (c.expected[0].clamp(0, 1) * 255).round().to(torch::kUInt8).permute({1, 2, 0}).contiguous();
        const auto got = torch::from_blob(const_cast<uint8_t*>(out.rgb.data()), {out.height, out.width, 3}, torch::kUInt8);
        QVERIFY((got.to(torch::kInt32) - want.to(torch::kInt32)).abs().max().item<int>() <= 1);
    }

    void cancelledBetweenTiles() {
        const c10::InferenceMode inference;
        auto c = load("compact-2x");
        api::CancelToken cancel;
        int seen = 0;
        const pipeline::TileProgress cancelAfterTheFirst = [&](int done, int) {
            seen = done;
            cancel.cancel();
        };
        const pipeline::UpscaleTiling tiling{8, 4};
        QVERIFY_THROWS_EXCEPTION(api::Cancelled, pipeline::upscaleTiled(*c.model.net, c.input, tiling, &cancel, cancelAfterTheFirst));
        QCOMPARE(seen, 1);
    }

    void tileSizeFollowsTheBudget() {
        const auto c = load("esrgan-old-4x").model.net->config;
        const int64_t small = pipeline::upscaleTileFor(c, 64LL << 20), large = pipeline::upscaleTileFor(c, 1LL << 30);
        QVERIFY(small >= 32 && small < large);
        QVERIFY(pipeline::upscaleTileBytes(c, large, 32) <= (1LL << 30));
        QVERIFY(pipeline::upscaleTileBytes(c, large + 64, 32) > (1LL << 30));
    }

    void refusedFiles() {
        const auto pth = (fs::path(DD_BINARY_DIR) / "test_upscalers_scratch" / "RealESRGAN_x4plus.pth").string();
        fs::create_directories(fs::path(pth).parent_path());
        std::ofstream(pth) << "PK\x03\x04 pickle";
        const auto pickle = modelFileErrorOf([&] { nn::loadUpscaler(pth); });
        QVERIFY2(pickle.contains("RealESRGAN_x4plus.pth") && pickle.contains("never unpickles") && pickle.contains("save_file"), qPrintable(pickle));
        QVERIFY(modelFileErrorOf([] { nn::loadUpscaler(kDir + "/nowhere.safetensors"); }).contains("not found"));
        const auto unknown = modelFileErrorOf([] { nn::loadUpscaler(kDir + "/unknown-architecture.safetensors"); });
        QVERIFY2(unknown.contains("unknown-architecture.safetensors") && unknown.contains("ESRGAN") && unknown.contains("SwinIR"), qPrintable(unknown));
        const auto image = scratch("not-a-model.safetensors", {{"model.diffusion_model.input_blocks.0.0.weight", torch::zeros({4})}});
        QVERIFY(modelFileErrorOf([&] { nn::loadUpscaler(image); }).contains("Stable Diffusion model, not an upscaler"));
        // A weight of the wrong shape is named.
        auto w = io::SafetensorsFile::open(kDir + "/compact-2x.safetensors")->all();
        w["body.2.weight"] = torch::zeros({8, 8, 5, 5});
        const auto shape = modelFileErrorOf([&] { nn::loadUpscaler(scratch("bad-shape.safetensors", w)); });
        QVERIFY2(shape.contains("body.2.weight"), qPrintable(shape));
        // A weight the architecture does not have is named too.
        w = io::SafetensorsFile::open(kDir + "/compact-2x.safetensors")->all();
        w["extra.weight"] = torch::zeros({1});
        const auto extra = modelFileErrorOf([&] { nn::loadUpscaler(scratch("extra.safetensors", w)); });
        QVERIFY2(extra.contains("extra.weight"), qPrintable(extra));
    }
};

DD_REGISTER_TEST(TestUpscalers)

} // namespace test_upscalers
#include "test_upscalers.moc"
