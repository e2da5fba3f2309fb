// Balanced multi-device placement (memory plan device "balanced"), proven on the CPU: the engine places
// on named stand-ins for the GPUs (EngineTestHooks::balancedStandIns, all of them the CPU in fact), so the ledger
// shows which network went where and each stand-in's cap can be checked; the pixels must be the single-device
// run's. The placement rule itself (diffusers' zig-zag) is tested in test_placement_pure.
#include "core/memory/memory_probe.h"
#include "core/pipeline/engine.h"
#include "core/pipeline/engine_test_hooks.h"
#include "core/pipeline/sd_model.h"
#include "tests/common/test_program.h"

#include "tests/common/demo_run.h"

#include <torch/torch.h>

#include <QtTest>

#include <filesystem>

namespace test_balanced_placement {  // the test program is a unity build: each file keeps its names

using namespace dd;

namespace {

api::GenerationSettings base() {
    auto s = test::demoSettings();
    s.seed = 5;
    return s;
}

api::GenerationSettings balanced(api::GenerationSettings s) {
    s.plan.device = "balanced";
    return s;
}

const auto generate = test::generateOnce;

int64_t weightBytes(const torch::nn::Module& net) {
    int64_t n = 0;
    for (const auto& p : net.parameters()) n += p.numel() * int64_t(p.element_size());
    return n;
}

// The demo model's networks and their weight bytes, counted from torch's own parameters.
std::map<std::string, int64_t> demoSizes() {
    const auto m = pipeline::makeDemoModel(torch::kCPU);
    return {{"unet", weightBytes(*m->unet)}, {"vae", weightBytes(*m->vae)}, {"text_encoder", weightBytes(*m->textEncoder)}};
}

std::string largestOf(const std::map<std::string, int64_t>& sizes) {
    return std::max_element(sizes.begin(), sizes.end(), [](const auto& a, const auto& b) { return a.second < b.second; })->first;
}

std::string errorOf(const std::function<void()>& f) {
    try {
        f();
    } catch (const std::exception& e) {
        return e.what();
    }
    return {};
}

} // namespace

class TestBalancedPlacement : public QObject {
    Q_OBJECT

private slots:
    // Two stand-ins with room for everything: the largest network goes to the larger one, the next two to the
    // other (the zig-zag d0 d1 d1); each holds exactly its networks' weights, within its cap, and the image is the
    // single-device one, bit for bit.
    void spreadsTheNetworksWithinTheCaps() {
        const auto sizes = demoSizes();
        int64_t total = 0;
        for (const auto& [part, bytes] : sizes) total += bytes;
        const std::string largest = largestOf(sizes);

        pipeline::Engine plainEngine, engine;
        const auto plain = generate(plainEngine, base());
        pipeline::EngineTestHooks hooks;
        hooks.balancedStandIns = {{"gpu1", total - 1}, {"gpu0", total}};
        engine.setTestHooks(hooks);
        const auto r = generate(engine, balanced(base()));
        QVERIFY(r.images.at(0).rgb == plain.images.at(0).rgb);

        const auto& ledger = engine.ledger();
        qInfo("sizes: unet %lld, vae %lld, text_encoder %lld bytes; ledger: %s", (long long)sizes.at("unet"),
              (long long)sizes.at("vae"), (long long)sizes.at("text_encoder"), ledger.summary().c_str());
        QCOMPARE(ledger.resident("gpu0"), sizes.at(largest));
        QCOMPARE(ledger.resident("gpu1"), total - sizes.at(largest));
        QCOMPARE(ledger.resident("cpu"), int64_t(0));
        QVERIFY(ledger.peak("gpu0") <= total && ledger.peak("gpu1") <= total - 1);
        // The sidecar's environment says where each network ran.
        const std::string& device = r.environment.device;
        QVERIFY2(device.rfind("balanced: ", 0) == 0 && device.find(largest + "=gpu0") != std::string::npos, device.c_str());
        for (const auto& [part, bytes] : sizes)
            if (part != largest) QVERIFY2(device.find(part + "=gpu1") != std::string::npos, device.c_str());

        // The same plan again: nothing is reloaded or moved.
        const auto again = generate(engine, balanced(base()));
        QVERIFY(again.images.at(0).rgb == plain.images.at(0).rgb);
        QCOMPARE(ledger.resident("gpu0"), sizes.at(largest));
    }

    // A network no stand-in can hold stays on the CPU (diffusers does the same), and the run still gives the image.
    void whatFitsNowhereRunsOnTheCpu() {
        const auto sizes = demoSizes();
        const auto smallest = std::min_element(sizes.begin(), sizes.end(), [](const auto& a, const auto& b) {
            return a.second < b.second;
        });
        pipeline::Engine plainEngine, engine;
        const auto plain = generate(plainEngine, base());
        pipeline::EngineTestHooks hooks;
        hooks.balancedStandIns = {{"gpu0", smallest->second}};
        engine.setTestHooks(hooks);
        const auto r = generate(engine, balanced(base()));
        QVERIFY(r.images.at(0).rgb == plain.images.at(0).rgb);
        int64_t total = 0;
        for (const auto& [part, bytes] : sizes) total += bytes;
        QCOMPARE(engine.ledger().resident("gpu0"), smallest->second);
        QCOMPARE(engine.ledger().resident("cpu"), total - smallest->second);
        QVERIFY2(r.environment.device.find(smallest->first + "=gpu0") != std::string::npos, r.environment.device.c_str());
    }

    // SDXL from a folder: two text encoders (their outputs are joined across devices), the loader placing each
    // network straight on its device, networks in bf16.
    void sdxlFromAFolder() {
        const auto model = std::filesystem::path(DD_FIXTURES_DIR) / "pipeline" / "tiny-sdxl-e2e";
        QVERIFY2(std::filesystem::exists(model), "fixtures missing: run tests/parity/make_fixtures.py build/fixtures");
        auto s = base();
        s.model = model.string();
        s.plan.unet = s.plan.vae = api::Precision::BF16;
        s.deterministic = true;  // math attention: the same reduction order whatever the placement
        pipeline::Engine plainEngine, engine;
        const auto plain = generate(plainEngine, s);
        const int64_t total = plainEngine.ledger().resident("cpu");
        pipeline::EngineTestHooks hooks;
        hooks.balancedStandIns = {{"gpu0", total}, {"gpu1", total}, {"gpu2", total}};
        engine.setTestHooks(hooks);
        const auto r = generate(engine, balanced(s));
        QVERIFY(r.images.at(0).rgb == plain.images.at(0).rgb);
        const auto byDevice = engine.ledger().residentByDevice();
        qInfo("ledger: %s; %s", engine.ledger().summary().c_str(), r.environment.device.c_str());
        QCOMPARE(engine.ledger().resident("cpu"), int64_t(0));
        int64_t placed = 0, used = 0;
        for (const auto& [device, bytes] : byDevice) placed += bytes, used += bytes > 0;
        QCOMPARE(placed, total);
        QCOMPARE(used, int64_t(3));  // four networks over three devices: the zig-zag d0 d1 d2 d2
        QVERIFY2(r.environment.device.find("text_encoder_2=") != std::string::npos, r.environment.device.c_str());
    }

    // Engine::load places like a run does, so the run that follows finds the model loaded.
    void loadPlacesLikeARun() {
        pipeline::Engine engine;
        pipeline::EngineTestHooks hooks;
        hooks.balancedStandIns = {{"gpu0", int64_t(1) << 30}, {"gpu1", int64_t(1) << 30}};
        engine.setTestHooks(hooks);
        api::CancelToken cancel;
        const auto plan = balanced(base()).plan;
        QVERIFY(!engine.load(pipeline::kDemoModel, plan, cancel).alreadyLoaded);
        QVERIFY(engine.load(pipeline::kDemoModel, plan, cancel).alreadyLoaded);
        const int64_t onGpu0 = engine.ledger().resident("gpu0");
        QVERIFY(onGpu0 > 0 && engine.ledger().resident("gpu1") > 0);
        generate(engine, balanced(base()));
        QCOMPARE(engine.ledger().resident("gpu0"), onGpu0);
    }

    void refusedWithAClearMessage() {
        pipeline::Engine engine;
        auto s = balanced(base());
        s.plan.offload = api::Offload::Model;
        const auto e = errorOf([&] { generate(engine, s); });
        QVERIFY2(e.find("cannot be combined with offload") != std::string::npos, e.c_str());
        // Without GPUs (and without stand-ins) there is nothing to balance over.
        if (memory::cudaDeviceCount() == 0) {
            const auto e2 = errorOf([&] { generate(engine, balanced(base())); });
            QVERIFY2(e2.find("balanced placement spreads the networks over CUDA devices and none is available") != std::string::npos,
                     e2.c_str());
        }
    }
};

DD_REGISTER_TEST(TestBalancedPlacement)

} // namespace test_balanced_placement
#include "test_balanced_placement.moc"
