// Engine telemetry and determinism mode on the demo model: peak memory per stage, onMemory at every stage
// boundary and once per step, the environment fingerprint, bit-identical reruns in determinism mode, and
// torch's global switches put back afterwards.
#include "core/pipeline/engine.h"
#include "tests/common/test_program.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>

#include <QtTest>

#include <map>
#include <string>

namespace test_engine_telemetry {  // the test program is a unity build: each file keeps its names

using namespace dd;

namespace {

struct MemoryLog : api::Observer {
    std::map<std::string, int> samples;
    std::vector<std::string> order;
    void onStep(int, int, const api::Image&) override {}
    void onMemory(const char* stage, const api::MemorySample& s) override {
        ++samples[stage];
        order.push_back(stage);
        QVERIFY(s.hostRss > 0);
    }
};

api::GenerationSettings demoSettings() {
    api::GenerationSettings s;
    s.model = pipeline::kDemoModel;
    s.prompt = "a lighthouse at dusk";
    s.steps = 3;
    s.width = s.height = 64;
    s.plan.device = "cpu";
    return s;
}

} // namespace

class TestEngineTelemetry : public QObject {
    Q_OBJECT

private slots:
    void peaksPerStageAndSamplesPerStep() {
        pipeline::Engine engine;
        api::CancelToken cancel;
        MemoryLog log;
        const auto r = engine.generate(demoSettings(), cancel, &log);
        double steps = 0;
        for (double t : r.timings.stepSeconds) steps += t;
        qInfo("load %.2f s, encode %.2f s, %zu steps %.2f s, decode %.2f s; peaks MB load %.0f encode %.0f denoise %.0f decode %.0f",
              r.timings.loadSeconds, r.timings.encodeSeconds, r.timings.stepSeconds.size(), steps, r.timings.decodeSeconds,
              r.memory.load.host / 1e6, r.memory.encode.host / 1e6, r.memory.denoise.host / 1e6, r.memory.decode.host / 1e6);
        QCOMPARE(log.samples["load"], 1);
        QCOMPARE(log.samples["encode"], 1);
        QCOMPARE(log.samples["denoise"], 3 + 1);  // once per step + the stage's end
        QCOMPARE(log.samples["decode"], 1);
        QCOMPARE(log.order.front(), std::string("load"));
        QCOMPARE(log.order.back(), std::string("decode"));
        for (const auto* p : {&r.memory.load, &r.memory.encode, &r.memory.denoise, &r.memory.decode}) {
            QVERIFY(p->host > 0);
            QCOMPARE(p->device, int64_t(0));  // CPU run
        }
    }

    void environmentFingerprint() {
        pipeline::Engine engine;
        api::CancelToken cancel;
        const auto r = engine.generate(demoSettings(), cancel, nullptr);
        const auto& e = r.environment;
        QCOMPARE(e.appVersion, std::string(DD_VERSION));
        QVERIFY(e.torchVersion.rfind("2.", 0) == 0);
        QCOMPARE(e.device, std::string("CPU"));
        QCOMPARE(e.precision, std::string("unet=fp32 text_encoder=fp32 vae=fp32"));
        QCOMPARE(e.attention, std::string("sdpa"));
        QCOMPARE(e.offload, std::string("none"));
        QVERIFY(e.threads >= 1);
        QVERIFY(!e.deterministic);
        QVERIFY(r.modelHash.empty());  // the demo has no file
    }

    void determinismModeIsBitIdenticalAndRestoresState() {
        auto& ctx = at::globalContext();
        const int threadsBefore = at::get_num_threads();
        QVERIFY(!ctx.deterministicAlgorithms());
        auto s = demoSettings();
        s.deterministic = true;
        s.plan.threads = 1;
        pipeline::Engine engine;
        api::CancelToken cancel;
        const auto a = engine.generate(s, cancel, nullptr);
        const auto b = engine.generate(s, cancel, nullptr);
        QCOMPARE(a.environment.attention, std::string("sdpa-math"));
        QCOMPARE(a.environment.threads, 1);
        QVERIFY(a.environment.deterministic);
        QVERIFY(a.images.at(0).rgb == b.images.at(0).rgb);
        // Different seeds differ.
        s.seed = 1;
        const auto c = engine.generate(s, cancel, nullptr);
        QVERIFY(a.images.at(0).rgb != c.images.at(0).rgb);
        // The process-wide switches are back as they were.
        QVERIFY(!ctx.deterministicAlgorithms());
        QCOMPARE(at::get_num_threads(), threadsBefore);
    }

    void unknownDeviceIsAClearError() {
        auto s = demoSettings();
        s.plan.device = "tpu";
        pipeline::Engine engine;
        api::CancelToken cancel;
        try {
            engine.generate(s, cancel, nullptr);
            QFAIL("expected an error");
        } catch (const std::invalid_argument& e) {
            QVERIFY2(std::string(e.what()).find("tpu") != std::string::npos, e.what());
        }
    }
};

DD_REGISTER_TEST(TestEngineTelemetry)

} // namespace test_engine_telemetry
#include "test_engine_telemetry.moc"
