// Engine::load (the desktop app's explicit model load on the worker): progress per part, cancel between parts,
// the previous model kept when a load is cancelled or fails; preview gating (Observer::wantsPreview) and TAESD
// previews. Fixtures: tests/parity/fixtures_*.py (tiny-sd1, taesd/tiny).
#include "core/io/model_error.h"
#include "core/io/model_hash.h"
#include "core/nn/taesd.h"
#include "core/pipeline/engine.h"
#include "core/pipeline/find_taesd.h"
#include "core/pipeline/previewer.h"
#include "core/pipeline/taesd_preview.h"
#include "tests/common/test_program.h"

#include <torch/torch.h>

#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

namespace test_engine_load {  // the test program is a unity build: each file keeps its names

using namespace dd;

namespace {

const std::string kModels = std::string(DD_FIXTURES_DIR) + "/models";
// A tiny SD 1.x folder whose text encoder has CLIP's whole vocabulary, so any prompt encodes.
const std::string kTinySd1 = std::string(DD_FIXTURES_DIR) + "/pipeline/tiny-sd1-e2e";
const std::string kTaesd = std::string(DD_FIXTURES_DIR) + "/taesd/tiny";

api::GenerationSettings small(const std::string& model, int steps = 4) {
    api::GenerationSettings s;
    s.model = model;
    s.prompt = "a red apple";
    s.steps = steps;
    s.width = s.height = 64;
    s.seed = 7;
    s.plan.threads = 2;  // runs are compared bit for bit: not a count that follows the load
    return s;
}

// Wants a preview on the steps in `wanted` (all when empty); keeps what it got.
struct Recorder : dd::pipeline::LatentObserver {
    std::set<int> wanted;
    bool none = false;
    int previews = 0;
    api::Image lastPreview;
    torch::Tensor lastLatent;
    bool wantsPreview(int step, int) override { return !none && (wanted.empty() || wanted.count(step)); }
    void onLatents(int, const at::Tensor& latents) override { lastLatent = latents[0].clone(); }
    void onStep(int, int, const api::Image& preview) override {
        if (preview.rgb.empty()) return;
        ++previews;
        lastPreview = preview;
    }
};

} // namespace

class TestEngineLoad : public QObject {
    Q_OBJECT

private slots:
    void loadReportsPartsAndGenerateReusesIt() {
        int loads = 0;
        pipeline::Engine engine([&](const std::string& line) { loads += line.rfind("loaded ", 0) == 0; });
        api::CancelToken cancel;
        std::vector<std::string> parts;
        const std::string path = kTinySd1;
        const auto report = engine.load(path, {}, cancel, [&](const std::string& part, int done, int total) {
            parts.push_back(part);
            QVERIFY(done <= total);
        });
        QCOMPARE(parts, (std::vector<std::string>{"checkpoint", "unet", "vae", "text_encoder", "ready"}));
        QCOMPARE(report.family, std::string("SD 1.x"));
        QVERIFY(!report.alreadyLoaded);
        QCOMPARE(engine.loadedModel(), path);
        QCOMPARE(loads, 1);
        const auto result = engine.generate(small(path, 2), cancel, nullptr);
        QCOMPARE(result.images.size(), size_t(1));
        QCOMPARE(loads, 1);  // generate found it loaded
        QVERIFY(engine.load(path, {}, cancel).alreadyLoaded);
        // A single file is hashed at load.
        const std::string file = kModels + "/tiny-sd1.safetensors";
        QCOMPARE(engine.load(file, {}, cancel).hash, io::hashModelFile(file).shortHash);
    }

    void cancelBetweenPartsKeepsThePreviousModel() {
        int loads = 0;
        pipeline::Engine engine([&](const std::string& line) { loads += line.rfind("loaded ", 0) == 0; });
        api::CancelToken cancel;
        engine.load(pipeline::kDemoModel, {}, cancel);
        std::vector<std::string> parts;
        QVERIFY_THROWS_EXCEPTION(api::Cancelled,
                                 engine.load(kTinySd1, {}, cancel, [&](const std::string& part, int, int) {
                                     parts.push_back(part);
                                     if (part == "unet") cancel.cancel();  // the UI's Cancel, while the UNet loads
                                 }));
        QCOMPARE(parts, (std::vector<std::string>{"checkpoint", "unet"}));  // stopped before the VAE
        QCOMPARE(engine.loadedModel(), std::string(pipeline::kDemoModel));
        cancel.reset();
        QCOMPARE(engine.generate(small(pipeline::kDemoModel, 1), cancel, nullptr).images.size(), size_t(1));
        QCOMPARE(loads, 1);  // the demo was still loaded
    }

    void brokenFileKeepsThePreviousModel() {
        pipeline::Engine engine;
        api::CancelToken cancel;
        engine.load(kTinySd1, {}, cancel);
        QTemporaryDir dir;
        const std::string broken = dir.filePath("broken.safetensors").toStdString();
        std::ofstream(broken) << "not a safetensors file at all";
        try {
            engine.load(broken, {}, cancel);
            QFAIL("a broken file loaded");
        } catch (const io::ModelFileError& e) {
            QVERIFY2(std::string(e.what()).find(broken) != std::string::npos, e.what());
        }
        QCOMPARE(engine.loadedModel(), kTinySd1);
        QCOMPARE(engine.generate(small(kTinySd1, 1), cancel, nullptr).images.size(), size_t(1));
    }

    void previewsAreComputedOnlyWhenWanted() {
        pipeline::Engine engine;
        api::CancelToken cancel;
        Recorder every;
        const auto all = engine.generate(small(pipeline::kDemoModel, 4), cancel, &every);
        QCOMPARE(every.previews, 4);
        QCOMPARE(engine.previewsBuilt(), int64_t(4));
        Recorder some;
        some.wanted = {2, 4};
        engine.generate(small(pipeline::kDemoModel, 4), cancel, &some);
        QCOMPARE(some.previews, 2);
        QCOMPARE(engine.previewsBuilt(), int64_t(6));
        Recorder none;
        none.none = true;
        const auto without = engine.generate(small(pipeline::kDemoModel, 4), cancel, &none);
        QCOMPARE(none.previews, 0);
        QCOMPARE(engine.previewsBuilt(), int64_t(6));
        QVERIFY(all.images.front().rgb == without.images.front().rgb);  // previews never touch the result
    }

    void taesdPreviewsWhenSet() {
        pipeline::Engine engine;
        api::CancelToken cancel;
        Recorder linear;
        const auto before = engine.generate(small(pipeline::kDemoModel, 2), cancel, &linear);
        const int latentWidth = int(linear.lastLatent.size(2));
        QCOMPARE(linear.lastPreview.width, latentWidth);  // the linear map stays at latent resolution
        engine.setPreviewDecoder(kTaesd);
        QCOMPARE(engine.previewDecoder(), kTaesd);
        Recorder taesd;
        const auto after = engine.generate(small(pipeline::kDemoModel, 2), cancel, &taesd);
        // The preview is exactly TAESD's decode of the step's latent (the tiny TAESD upsamples 4×).
        auto reference = nn::loadTaesd(kTaesd);
        const auto expected = pipeline::taesdPreview(*reference, taesd.lastLatent);
        QCOMPARE(taesd.lastPreview.width, 4 * latentWidth);
        QCOMPARE(expected.width, 4 * latentWidth);
        QVERIFY(taesd.lastPreview.rgb == expected.rgb);
        QVERIFY(before.images.front().rgb == after.images.front().rgb);
        // A bad TAESD path names the file and keeps the working one.
        QVERIFY_THROWS_EXCEPTION(io::ModelFileError, engine.setPreviewDecoder("/nonexistent/taesd"));
        QCOMPARE(engine.previewDecoder(), kTaesd);
        engine.setPreviewDecoder("");
        Recorder back;
        engine.generate(small(pipeline::kDemoModel, 1), cancel, &back);
        QCOMPARE(back.lastPreview.width, latentWidth);
    }

    void findsTaesdNextToAModel() {
        QTemporaryDir dir;
        QDir(dir.path()).mkpath("sd15/taesd");
        std::ofstream((dir.filePath("sd15/taesd/config.json")).toStdString()) << "{}";
        std::ofstream((dir.filePath("model.safetensors")).toStdString()) << "x";
        std::ofstream((dir.filePath("taesdxl_decoder.safetensors")).toStdString()) << "x";
        const std::string root = dir.path().toStdString();
        QCOMPARE(pipeline::findTaesdNextTo(root + "/sd15", false), root + "/sd15/taesd");
        QCOMPARE(pipeline::findTaesdNextTo(root + "/model.safetensors", true), root + "/taesdxl_decoder.safetensors");
        QCOMPARE(pipeline::findTaesdNextTo(root + "/model.safetensors", false), std::string());
    }
};

DD_REGISTER_TEST(TestEngineLoad)

} // namespace test_engine_load
#include "test_engine_load.moc"
