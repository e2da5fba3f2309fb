// Fast iteration: a run that changes only seed, steps, CFG, sampler or size reuses the prompt's
// text conditioning (no text encoder runs) and gives the same image as a cold engine; anything that changes
// the encoders' output misses. (Switching models gives the previous model's memory back: test_model_switch.)
#include "core/nn/clip_text.h"
#include "core/pipeline/engine.h"
#include "tests/common/test_program.h"

#include <torch/torch.h>

#include <QtTest>

#include <filesystem>

namespace test_iteration_cache {  // the test program is a unity build: each file keeps its names

using namespace dd;
namespace fs = std::filesystem;

namespace {

const fs::path kSdxl = fs::path(DD_FIXTURES_DIR) / "pipeline" / "tiny-sdxl-e2e";
const fs::path kSd1 = fs::path(DD_FIXTURES_DIR) / "pipeline" / "tiny-sd1-e2e";

api::GenerationSettings base() {
    api::GenerationSettings s;
    s.model = pipeline::kDemoModel;
    s.plan.threads = 2;  // runs are compared bit for bit: not a count that follows the load
    s.prompt = "a (stone bridge:1.2) over a river, BREAK morning fog";
    s.negativePrompt = "lowres";
    s.seed = 7;
    s.steps = 3;
    s.width = s.height = 64;
    s.plan.device = "cpu";
    return s;
}

api::GenerationResult run(pipeline::Engine& e, const api::GenerationSettings& s) {
    api::CancelToken cancel;
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
        if (field == "text precision") s.plan.textEncoder = api::Precision::BF16;
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
};

DD_REGISTER_TEST(TestIterationCache)

} // namespace test_iteration_cache
#include "test_iteration_cache.moc"
