// Out-of-memory recovery. The ladder itself (pure), then the engine with allocation failures
// injected per stage through its test hook: the same error types a real failure throws
// (c10::OutOfMemoryError, as the CUDA caching allocator and the CPU allocator raise it, and std::bad_alloc).
// Each retried run must give exactly the image of a run made directly with the setting it fell back to.
#include "core/memory/oom_retry.h"
#include "core/pipeline/engine.h"
#include "core/pipeline/engine_test_hooks.h"
#include "tests/common/test_program.h"

#include "tests/common/demo_run.h"

#include <c10/util/Exception.h>

#include <QtTest>

#include <set>

namespace test_oom_retry {  // the test program is a unity build: each file keeps its names

using namespace dd;
using api::Attention;
using memory::Stage;

namespace {

std::vector<memory::Preset> presets() {
    std::vector<memory::Preset> v;
    auto add = [&](const char* name, int64_t gb, api::Offload offload) {
        memory::Preset p;
        p.name = name;
        p.budgetBytes = gb << 30;
        p.strategy = std::string("row ") + name;
        p.plan.device = "cuda";
        p.plan.offload = offload;
        p.plan.attention = Attention::Sliced;
        p.plan.groupBlocks = int(gb);  // makes every row's plan distinct
        v.push_back(p);
    };
    add("cpu", 64, api::Offload::None);
    v.back().plan.device = "cpu";
    add("4gb", 4, api::Offload::Model);
    add("12gb", 12, api::Offload::None);
    add("6gb", 6, api::Offload::None);
    return v;
}

// Two rows the CPU runs quickly (bf16): the engine's recovery steps down through them in the tests.
std::vector<memory::Preset> cpuPresets() {
    memory::Preset big, small;
    big.name = big.strategy = "big";
    big.budgetBytes = int64_t(12) << 30;
    big.plan.unet = api::Precision::BF16;
    big.plan.attention = Attention::SdpaMath;
    small.name = small.strategy = "small";
    small.budgetBytes = int64_t(4) << 30;
    small.plan.unet = api::Precision::BF16;
    small.plan.attention = Attention::Sliced;
    small.plan.offload = api::Offload::Model;
    small.plan.vaeTiling = true;
    return {small, big};
}

// Every rung of a stage's ladder, from `start`.
std::vector<std::string> ladder(Stage stage, memory::FrugalState state, const memory::RetryContext& ctx) {
    std::vector<std::string> steps;
    while (const auto next = memory::nextFallback(stage, state, ctx)) {
        steps.push_back(next->change);
        state = next->state;
        if (steps.size() > 20) break;
    }
    return steps;
}

api::GenerationSettings base(int size = 64) {
    auto s = test::demoSettings(size);  // the decode tests take 128: the demo VAE's tile is 64 px, so tiling really tiles
    s.seed = 5;
    s.sampler = "DPM++ 2M";
    return s;
}

// Fails the listed attempts of one stage the way a real allocation failure does.
pipeline::EngineTestHooks failAt(const std::string& stage, std::set<int> attempts, bool badAlloc = false) {
    pipeline::EngineTestHooks h;
    h.beforeStageAttempt = [=](const std::string& s, int attempt) {
        if (s != stage || !attempts.count(attempt)) return;
        if (badAlloc) throw std::bad_alloc();
        TORCH_CHECK_WITH(OutOfMemoryError, false, "CUDA out of memory. Tried to allocate 2.00 GiB (injected by the test)");
    };
    return h;
}

const auto generate = test::generateOnce;

bool mentions(const std::vector<std::string>& warnings, const std::string& text) {
    for (const auto& w : warnings)
        if (w.find(text) != std::string::npos) return true;
    return false;
}

} // namespace

class TestOomRetry : public QObject {
    Q_OBJECT

private slots:
    void decodeLadder() {
        memory::RetryContext ctx;
        ctx.computeIsCpu = false;
        ctx.batch = 2;
        ctx.vaeSampleSize = 512;
        ctx.minTileSize = 128;
        const auto steps = ladder(Stage::Decode, {}, ctx);
        const std::vector<std::string> expected{"VAE slicing on", "VAE tiling on", "256-px VAE tiles", "128-px VAE tiles",
                                                "VAE decode on the CPU"};
        QCOMPARE(steps, expected);
        ctx.computeIsCpu = true;
        ctx.batch = 1;
        QCOMPARE(ladder(Stage::Decode, {}, ctx), (std::vector<std::string>{"VAE tiling on", "256-px VAE tiles", "128-px VAE tiles"}));
    }

    void denoiseLadderEndsWithLowerPresets() {
        const auto rows = presets();
        memory::RetryContext ctx;
        ctx.maxHeads = 8;
        ctx.presets = &rows;
        memory::FrugalState start;
        start.preset = "12gb";
        const auto steps = ladder(Stage::Denoise, start, ctx);
        // heads/2 = 4 per slice ("auto"), then 2, 1; then 6gb, whose sliced "auto" is stepped down again, then
        // 4gb and its slices; nothing is below 4gb.
        QCOMPARE(steps.size(), size_t(9));
        QCOMPARE(steps[0], std::string("sliced attention (auto)"));
        QCOMPARE(steps[1], std::string("sliced attention (2 heads per slice)"));
        QCOMPARE(steps[2], std::string("sliced attention (1 head per slice)"));
        QCOMPARE(steps[3], std::string("preset 6gb (row 6gb)"));
        QCOMPARE(steps[5], std::string("sliced attention (1 head per slice)"));
        QCOMPARE(steps[6], std::string("preset 4gb (row 4gb)"));
        QCOMPARE(steps[8], std::string("sliced attention (1 head per slice)"));
        // A preset keeps the device the run is on.
        auto state = start;
        state.plan.attention = Attention::Sliced;
        state.plan.attentionSliceSize = 1;
        state.plan.device = "cuda:1";
        const auto next = memory::nextFallback(Stage::Denoise, state, ctx);
        QVERIFY(next && next->presetSwitch);
        QCOMPARE(next->state.plan.device, std::string("cuda:1"));
        QCOMPARE(next->state.preset, std::string("6gb"));
        // A balanced placement stays balanced on a row without offload (6gb here); a row that offloads runs on the
        // first GPU instead (balanced placement cannot offload), keeping the caps in the plan.
        state.plan.device = "balanced";
        state.plan.maxMemory = {{"cuda:0", int64_t(3) << 30}};
        const auto balanced = memory::nextFallback(Stage::Denoise, state, ctx);
        QCOMPARE(balanced->state.plan.device, std::string("balanced"));
        api::validate(balanced->state.plan);
        memory::FrugalState at6 = balanced->state;
        at6.plan.attentionSliceSize = 1;
        const auto to4 = memory::nextFallback(Stage::Denoise, at6, ctx);
        QCOMPARE(to4->state.preset, std::string("4gb"));
        QCOMPARE(to4->state.plan.device, std::string("auto"));
        QVERIFY(to4->state.plan.maxMemory == state.plan.maxMemory);
        api::validate(to4->state.plan);
        // Text encoding goes straight to the presets; from no preset, the largest one first.
        memory::FrugalState none;
        QCOMPARE(memory::nextFallback(Stage::Encode, none, ctx)->state.preset, std::string("12gb"));
        none.preset = "4gb";
        QVERIFY(!memory::nextFallback(Stage::Encode, none, ctx));
    }

    void decodeRetriesTiledThenSmallerTiles() {
        pipeline::Engine direct, recovering;
        // Attempt 0 fails: tiled (the VAE's 64-px tiles).
        recovering.setTestHooks(failAt("VAE decode", {0}));
        const auto r = generate(recovering, base(128));
        QVERIFY(mentions(r.warnings, "out of memory in VAE decode: retried with VAE tiling on"));
        QVERIFY(r.settings.plan.vaeTiling);
        auto s = base(128);
        s.plan.vaeTiling = true;
        const auto d = generate(direct, s);
        QVERIFY(r.images.at(0).rgb == d.images.at(0).rgb);
        const auto untiled = generate(direct, base(128));
        QVERIFY(untiled.images.at(0).rgb != d.images.at(0).rgb);  // the fallback really changed the decode

        // Attempts 0 and 1 fail (bad_alloc, as a failed host allocation): 32-px tiles.
        recovering.setTestHooks(failAt("VAE decode", {0, 1}, true));
        const auto r2 = generate(recovering, base(128));
        QVERIFY(mentions(r2.warnings, "retried with 32-px VAE tiles"));
        QCOMPARE(r2.settings.plan.vaeTileSize, 32);
        s.plan.vaeTileSize = 32;
        QVERIFY(r2.images.at(0).rgb == generate(direct, s).images.at(0).rgb);
    }

    void whenNothingFitsTheMessageSaysWhatWasTried() {
        pipeline::Engine engine;
        engine.setTestHooks(failAt("VAE decode", {0, 1, 2, 3, 4}));
        try {
            generate(engine, base(128));
            QFAIL("expected an out-of-memory error");
        } catch (const api::OutOfMemory& e) {
            const std::string m = e.what();
            qInfo("%s", e.what());
            QCOMPARE(api::failureMessage(e), m);  // what the window, the CLI and the batch journal show
            QVERIFY2(m.find("out of memory in VAE decode and nothing more frugal is left to try "
                            "(tried: VAE tiling on, 32-px VAE tiles)") != std::string::npos, e.what());
            QVERIFY2(m.find("CUDA out of memory. Tried to allocate 2.00 GiB") != std::string::npos, e.what());
        }
        // The engine still works afterwards.
        engine.setTestHooks({});
        QCOMPARE(generate(engine, base(128)).images.size(), size_t(1));
    }

    void denoiseRetriesSlicedAttention() {
        pipeline::Engine direct, recovering;
        recovering.setTestHooks(failAt("denoise", {0}));
        const auto r = generate(recovering, base());
        QVERIFY(mentions(r.warnings, "out of memory in denoise: retried with sliced attention (auto)"));
        QCOMPARE(r.settings.plan.attention, Attention::Sliced);
        QCOMPARE(r.environment.attention, std::string("sliced (auto)"));
        auto s = base();
        s.plan.attention = Attention::Sliced;
        QVERIFY(r.images.at(0).rgb == generate(direct, s).images.at(0).rgb);

        recovering.setTestHooks(failAt("denoise", {0, 1}));
        const auto r2 = generate(recovering, base());
        QVERIFY(mentions(r2.warnings, "retried with sliced attention (2 heads per slice)"));
        s.plan.attentionSliceSize = 2;
        QVERIFY(r2.images.at(0).rgb == generate(direct, s).images.at(0).rgb);
    }

    void thenTheNextLowerPreset() {
        // Slices exhausted (auto = 4 heads, 2, 1): the fourth failure switches to the largest preset, which
        // restarts the run with that preset's plan on this run's device. (The shipped rows are fp16, which
        // the CPU runs a hundred times slower: these rows are bf16.)
        const auto rows = cpuPresets();
        pipeline::Engine direct, recovering;
        auto hooks = failAt("denoise", {0, 1, 2, 3});
        hooks.presets = &rows;
        recovering.setTestHooks(hooks);
        const auto r = generate(recovering, base());
        QVERIFY(mentions(r.warnings, "retried with sliced attention (1 head per slice)"));
        QVERIFY(mentions(r.warnings, "out of memory in denoise: retried with preset big"));
        QCOMPARE(r.settings.preset, std::string("big"));
        QCOMPARE(r.settings.plan.device, std::string("cpu"));
        QCOMPARE(r.settings.plan.unet, api::Precision::BF16);  // the row's plan, not ours
        auto s = base();
        s.plan = r.settings.plan;
        s.preset = "big";
        QVERIFY(r.images.at(0).rgb == generate(direct, s).images.at(0).rgb);
    }

    void loadStepsDownThroughThePresetsAndTheEngineSurvives() {
        // Out of memory while loading (host allocation failure): the load is retried with the next lower preset.
        const auto rows = cpuPresets();
        pipeline::Engine direct, recovering;
        auto hooks = failAt("load", {0}, /*badAlloc=*/true);
        hooks.presets = &rows;
        recovering.setTestHooks(hooks);
        const auto r = generate(recovering, base());
        QVERIFY(mentions(r.warnings, "out of memory in load: retried with preset big"));
        QCOMPARE(r.settings.preset, std::string("big"));
        auto s = base();
        s.plan = r.settings.plan;
        s.preset = "big";
        QVERIFY(r.images.at(0).rgb == generate(direct, s).images.at(0).rgb);
        // Every load attempt fails: a clear message naming the stage and what was tried, not a crash...
        auto always = failAt("load", {0, 1, 2, 3, 4, 5, 6, 7});
        always.presets = &rows;
        pipeline::Engine failing;
        failing.setTestHooks(always);
        try {
            generate(failing, base());
            QFAIL("expected an out-of-memory error");
        } catch (const api::OutOfMemory& e) {
            const std::string what = e.what();
            QVERIFY2(what.find("out of memory") != std::string::npos && what.find("load") != std::string::npos, e.what());
        }
        // ...and the same engine generates once memory is there again.
        failing.setTestHooks({});
        QVERIFY(generate(failing, base()).images.at(0).rgb == generate(direct, base()).images.at(0).rgb);
    }

    void encodeStepsDownThroughThePresets() {
        // Two failures: "big", then "small" (model offload, run on the CPU through the test hook).
        const auto rows = cpuPresets();
        pipeline::Engine direct, recovering;
        auto hooks = failAt("text encode", {0, 1});
        hooks.presets = &rows;
        hooks.offloadOnCpu = true;
        recovering.setTestHooks(hooks);
        const auto r = generate(recovering, base());
        QVERIFY(mentions(r.warnings, "out of memory in text encode: retried with preset big"));
        QVERIFY(mentions(r.warnings, "out of memory in text encode: retried with preset small"));
        QCOMPARE(r.settings.preset, std::string("small"));
        QCOMPARE(r.environment.offload, std::string("model"));
        auto s = base();
        s.plan = r.settings.plan;
        s.preset = "small";
        QVERIFY(r.images.at(0).rgb == generate(direct, s).images.at(0).rgb);
        // A third failure: nothing is below "small".
        hooks.beforeStageAttempt = failAt("text encode", {0, 1, 2}).beforeStageAttempt;
        recovering.setTestHooks(hooks);
        try {
            generate(recovering, base());
            QFAIL("expected an out-of-memory error");
        } catch (const std::runtime_error& e) {
            QVERIFY2(std::string(e.what()).find("(tried: preset big (big), preset small (small))") != std::string::npos, e.what());
        }
    }
};

DD_REGISTER_TEST(TestOomRetry)

} // namespace test_oom_retry
#include "test_oom_retry.moc"
