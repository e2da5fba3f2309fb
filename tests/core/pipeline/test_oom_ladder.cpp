// OutOfMemoryLadder on its own, without a model: a stage that runs out of memory is retried one rung lower until
// it fits, each rung a warning; a rung that is another preset restarts the run; the bottom says what was tried.
#include "core/api/errors.h"
#include "core/pipeline/oom_ladder.h"
#include "tests/common/test_program.h"

#include <QtTest>

#include <new>

namespace test_oom_ladder {  // the test program is a unity build: each file keeps its names

using namespace dd;
using memory::Stage;

namespace {

// A CUDA run of two images, the context the engine fills in once the model is loaded.
memory::RetryContext cudaContext(const std::vector<memory::Preset>* presets = nullptr) {
    memory::RetryContext c;
    c.computeIsCpu = false;
    c.batch = 2;
    c.vaeSampleSize = 512;
    c.minTileSize = 256;
    c.maxHeads = 8;
    c.presets = presets;
    return c;
}

// Throws std::bad_alloc on the first `failures` calls.
struct Failing {
    int failures;
    int calls = 0;
    void operator()() {
        if (calls++ < failures) throw std::bad_alloc();
    }
};

} // namespace

class TestOomLadder : public QObject {
    Q_OBJECT

private slots:
    void aStageIsRetriedOneRungLowerUntilItFits() {
        api::GenerationSettings s;
        s.batchSize = 2;
        pipeline::RetryHistory history;
        std::vector<std::string> warnings{"an earlier warning"};
        pipeline::OutOfMemoryLadder ladder(s, cudaContext(), history, warnings);
        Failing decode{2};
        int applied = 0;
        ladder.attempt(Stage::Decode, std::ref(decode), [&] { ++applied; });
        QCOMPARE(decode.calls, 3);
        QCOMPARE(applied, 2);
        QVERIFY(ladder.plan().vaeSlicing && ladder.plan().vaeTiling);
        QCOMPARE(warnings, (std::vector<std::string>{"an earlier warning", "out of memory in VAE decode: retried with VAE slicing on",
                                                     "out of memory in VAE decode: retried with VAE tiling on"}));
        QCOMPARE(history.changes, (std::vector<std::string>{"VAE slicing on", "VAE tiling on"}));
        QCOMPARE(history.attempts.at("VAE decode"), 3);
        // A stage that fits the first time changes nothing.
        Failing fits{0};
        ladder.attempt(Stage::Denoise, std::ref(fits));
        QCOMPARE(fits.calls, 1);
        QCOMPARE(warnings.size(), size_t(3));
    }

    void aPresetRungRestartsTheRunWithThatPreset() {
        std::vector<memory::Preset> presets(2);
        presets[0].name = presets[0].strategy = "small";
        presets[0].budgetBytes = int64_t(4) << 30;
        presets[0].plan.offload = api::Offload::Model;
        presets[1].name = presets[1].strategy = "big";
        presets[1].budgetBytes = int64_t(12) << 30;
        presets[1].plan.unet = api::Precision::FP16;
        api::GenerationSettings s;
        s.preset = "big";
        s.plan = presets[1].plan;
        s.seed = 42;
        pipeline::RetryHistory history;
        std::vector<std::string> warnings;
        pipeline::OutOfMemoryLadder ladder(s, cudaContext(&presets), history, warnings);
        Failing load{1};
        try {
            ladder.attempt(Stage::Load, std::ref(load));
            QFAIL("expected a restart");
        } catch (const pipeline::OutOfMemoryLadder::Restart& restart) {
            QCOMPARE(restart.settings.preset, std::string("small"));
            QCOMPARE(restart.settings.plan.offload, api::Offload::Model);
            QCOMPARE(restart.settings.seed, int64_t(42));  // everything else as asked
            QCOMPARE(restart.warnings, (std::vector<std::string>{"out of memory in load: retried with preset small (small)"}));
        }
        QCOMPARE(load.calls, 1);
    }

    void theBottomRungSaysWhatWasTried() {
        api::GenerationSettings s;
        pipeline::RetryHistory history;
        std::vector<std::string> warnings;
        auto context = cudaContext();
        context.batch = 1;
        pipeline::OutOfMemoryLadder ladder(s, context, history, warnings);
        // Before a model is loaded the message is the load's.
        try {
            ladder.attempt(Stage::Load, [] { throw std::bad_alloc(); });
            QFAIL("expected api::OutOfMemory");
        } catch (const api::OutOfMemory& e) {
            QCOMPARE(std::string(e.what()),
                     std::string("out of memory while loading the model and no lower preset is left to try (a host memory allocation failed)"));
        }
        // Once it is, the run's own message, given every change tried.
        std::vector<std::string> told;
        ladder.onExhausted([&](Stage stage, const std::string& error, const std::vector<std::string>& tried) {
            told = tried;
            return std::string(memory::stageName(stage)) + ": " + error;
        });
        try {
            ladder.attempt(Stage::Decode, [] { throw std::bad_alloc(); });
            QFAIL("expected api::OutOfMemory");
        } catch (const api::OutOfMemory& e) {
            QCOMPARE(std::string(e.what()), std::string("VAE decode: a host memory allocation failed"));
        }
        QCOMPARE(told, history.changes);
        QCOMPARE(told.front(), std::string("VAE tiling on"));  // one image: no slicing rung
        QCOMPARE(told.back(), std::string("VAE decode on the CPU"));
        QVERIFY(ladder.vaeOnCpu());
    }
};

DD_REGISTER_TEST(TestOomLadder)

} // namespace test_oom_ladder

#include "test_oom_ladder.moc"
