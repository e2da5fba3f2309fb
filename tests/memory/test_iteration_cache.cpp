// Fast iteration (issue 15): a run that changes only seed, steps, CFG, sampler or size reuses the prompt's
// text conditioning (no text encoder runs) and gives the same image as a cold engine; anything that changes
// the encoders' output misses. Switching models gives the previous model's memory back (CPU RSS).
#include "core/io/safetensors.h"
#include "core/memory/memory_probe.h"
#include "core/nn/clip_text.h"
#include "core/nn/unet.h"
#include "core/pipeline/engine.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>

using namespace dd;
namespace fs = std::filesystem;

namespace {

const fs::path kSdxl = fs::path(DD_FIXTURES_DIR) / "pipeline" / "tiny-sdxl-e2e";
const fs::path kSd1 = fs::path(DD_FIXTURES_DIR) / "pipeline" / "tiny-sd1-e2e";

settings::GenerationSettings base() {
    settings::GenerationSettings s;
    s.model = pipeline::kDemoModel;
    s.prompt = "a (stone bridge:1.2) over a river, BREAK morning fog";
    s.negativePrompt = "lowres";
    s.seed = 7;
    s.steps = 3;
    s.width = s.height = 64;
    s.plan.device = "cpu";
    return s;
}

pipeline::GenerationResult run(pipeline::Engine& e, const settings::GenerationSettings& s) {
    pipeline::CancelToken cancel;
    return e.generate(s, cancel, nullptr);
}

int64_t clipCalls() { return nn::ClipTextModelImpl::forwardCalls(); }

} // namespace

class TestIterationCache : public QObject {
    Q_OBJECT

private slots:
    void newSeedSkipsTextEncodingAndMatchesAColdRun() {
        pipeline::Engine warm;
        auto s = base();
        const auto first = run(warm, s);
        QVERIFY(!first.textEncodeCached);
        QCOMPARE(warm.textEncoderRuns(), int64_t(1));

        // Everything a user changes between takes, except the prompt and the model.
        s.seed = 8;
        s.steps = 4;
        s.cfgScale = 5.5;
        s.sampler = "Euler";
        s.width = 96;
        const int64_t before = clipCalls();
        const auto second = run(warm, s);
        QCOMPARE(clipCalls(), before);  // no text encoder ran
        QVERIFY(second.textEncodeCached);
        QCOMPARE(warm.textEncoderRuns(), int64_t(1));

        pipeline::Engine cold;
        const auto reference = run(cold, s);
        QVERIFY(!reference.textEncodeCached);
        QVERIFY(second.images.at(0).rgb == reference.images.at(0).rgb);
    }

    void whatChangesTheEncodingMisses_data() {
        QTest::addColumn<QString>("field");
        for (const char* f : {"prompt", "negative", "clip skip", "prompt syntax", "emphasis", "text precision", "model"})
            QTest::newRow(f) << QString(f);
    }
    void whatChangesTheEncodingMisses() {
        QFETCH(QString, field);
        pipeline::Engine e;
        auto s = base();
        s.steps = 1;
        run(e, s);
        if (field == "prompt") s.prompt += ", autumn";
        if (field == "negative") s.negativePrompt = "watermark";
        if (field == "clip skip") s.clipSkip = 2;
        if (field == "prompt syntax") s.promptSyntax = "reference";
        if (field == "emphasis") s.emphasis = "No norm";
        if (field == "text precision") s.plan.textEncoder = memory::Precision::BF16;
        if (field == "model") s.model = kSd1.string();
        if (field == "model" && !fs::exists(kSd1)) QSKIP("run tests/parity/make_fixtures.py first");
        const int64_t before = clipCalls();
        const auto r = run(e, s);
        QVERIFY(!r.textEncodeCached);
        QVERIFY(clipCalls() > before);
    }

    void cfgOffReusesTheEncodingWithNegative() {
        pipeline::Engine e;
        auto s = base();
        s.steps = 1;
        run(e, s);
        s.cfgScale = 1.0;  // no negative side needed: served by the entry that has both
        QVERIFY(run(e, s).textEncodeCached);
        pipeline::Engine e2;
        run(e2, s);
        s.cfgScale = 7.0;  // the entry without a negative cannot serve CFG
        QVERIFY(!run(e2, s).textEncodeCached);
    }

    void sdxlCachedPooledWithNewSizeMatchesAColdRun() {
        if (!fs::exists(kSdxl)) QSKIP("run tests/parity/make_fixtures.py first");
        pipeline::Engine warm;
        auto s = base();
        s.model = kSdxl.string();
        run(warm, s);
        s.seed = 9;
        s.width = 96;  // new time ids (target size), same text
        const int64_t before = clipCalls();
        const auto second = run(warm, s);
        QCOMPARE(clipCalls(), before);
        QVERIFY(second.textEncodeCached);
        pipeline::Engine cold;
        QVERIFY(second.images.at(0).rgb == run(cold, s).images.at(0).rgb);
    }

    // A ~200 MB model (the tiny SD 1.x pipeline with a 192/384-channel UNet) is loaded, run and switched away
    // from; the process's resident memory must come back to within 5 % of where it was.
    void modelSwitchReturnsMemory() {
        if (!fs::exists(kSd1)) QSKIP("run tests/parity/make_fixtures.py first");
        QTemporaryDir dir;
        const fs::path big = dir.filePath("wide-sd1").toStdString();
        fs::copy(kSd1, big, fs::copy_options::recursive);
        nlohmann::json config = nlohmann::json::parse(std::ifstream(big / "unet" / "config.json"));
        config["block_out_channels"] = {192, 384};
        std::ofstream(big / "unet" / "config.json") << config.dump(2);
        int64_t bytes = 0;
        {
            torch::manual_seed(0);
            nn::UNet2DConditionModel unet(nn::UNetConfig::fromJson(config));
            io::TensorMap weights;
            for (const auto& p : unet->named_parameters()) weights[p.key()] = p.value().detach();
            for (const auto& b : unet->named_buffers()) weights[b.key()] = b.value().detach();
            for (const auto& [k, t] : weights) bytes += t.numel() * int64_t(t.element_size());
            io::writeSafetensors((big / "unet" / "diffusion_pytorch_model.safetensors").string(), weights);
        }
        QVERIFY(bytes > 150'000'000);  // 5 % of the baseline RSS is ~25 MB: the model is far above that

        pipeline::Engine e;
        auto s = base();
        s.steps = 1;
        s.promptSyntax = "reference";
        // A bf16 UNet: converted at load, so resident until released (fp32 weights would be used in place from the
        // file and their pages given back after each stage: never resident after a run).
        s.plan.unet = memory::Precision::BF16;
        run(e, s);  // torch, the demo model and the allocator's working set are warm
        run(e, s);
        const int64_t baseline = memory::sampleMemory().hostRss;

        s.model = big.string();
        run(e, s);
        const int64_t loaded = memory::sampleMemory().hostRss;
        s.model = pipeline::kDemoModel;
        run(e, s);
        const int64_t after = memory::sampleMemory().hostRss;
        qInfo("RSS: baseline %.1f MB, with the %.0f MB model %.1f MB, after switching back %.1f MB",
              baseline / 1e6, bytes / 1e6, loaded / 1e6, after / 1e6);
        QVERIFY2(loaded - baseline > bytes / 4, "the big model was not resident: the measurement means nothing");
        QVERIFY2(after <= baseline * 1.05, qPrintable(QString("RSS %1 MB after the switch, baseline %2 MB")
                                                          .arg(after / 1e6).arg(baseline / 1e6)));
        // releaseModel frees the demo too.
        e.releaseModel();
        QVERIFY(memory::sampleMemory().hostRss <= after * 1.05);
    }
};

QTEST_GUILESS_MAIN(TestIterationCache)
#include "test_iteration_cache.moc"
