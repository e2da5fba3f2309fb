// Sidecar JSON: full round trip, local paths stripped, and a clear error for each way a file can be wrong.
#include "core/settings/sidecar.h"

#include <QtTest>
#include <nlohmann/json.hpp>

using namespace dd::settings;
namespace api = dd::api;

namespace {

Sidecar sample() {
    Sidecar s;
    s.settings.model = "/home/alice/models/v1-5-pruned-emaonly.safetensors";
    s.settings.prompt = "a (red:1.2) car\nünïcode ✓";
    s.settings.negativePrompt = "blurry";
    s.settings.seed = 4294967295;
    s.settings.steps = 30;
    s.settings.cfgScale = 6.5;
    s.settings.guidanceRescale = 0.2;
    s.settings.sampler = "Euler";
    s.settings.predictionType = "epsilon";  // what an SD 2.x base single file needs
    s.settings.timestepSpacing = "leading";
    s.settings.scheduleType = "Karras";
    s.settings.width = 640;
    s.settings.height = 832;
    s.settings.batchSize = 2;
    s.settings.clipSkip = 2;
    s.settings.initImage = "/home/alice/in.png";
    s.settings.initImageHash = std::string(64, 'a');
    s.settings.inpaint.mask = "/home/alice/in-mask.png";
    s.settings.inpaint.maskHash = std::string(64, 'b');
    s.settings.inpaint.maskBlur = 9;
    s.settings.inpaint.invertMask = true;
    s.settings.inpaint.maskedContent = "latent nothing";
    s.settings.strength = 0.45;
    s.settings.preset = "6gb";
    s.modelName = "v1-5-pruned-emaonly.safetensors";
    s.modelHash = "6ce0161689";
    s.modelSha256 = std::string(64, 'a');
    s.seeds = {4294967295, 4294967296};
    s.settings.plan.unet = dd::api::Precision::FP16;
    s.settings.plan.attention = dd::api::Attention::Sliced;
    s.settings.plan.attentionSliceSize = 4;
    s.settings.plan.vaeTiling = true;
    s.settings.plan.offload = dd::api::Offload::Model;
    s.settings.deterministic = true;
    s.imageIndex = 1;
    s.timings = {1.5, 0.25, {0.1, 0.11, 0.12}, 0.8};
    s.memory.load = {1000, 2000};
    s.memory.encode = {3000, 4000};
    s.memory.denoise = {5000, 3500000000};
    s.memory.decode = {7000, 8000};
    s.environment = {"0.1.0", "2.5.1", "NVIDIA GeForce RTX 3060", "unet=fp16 text_encoder=fp16 vae=fp32", "sliced", "model", 8, true};
    s.warnings = {"VAE decode ran out of memory; retried with tiling"};
    s.cost.pricePerHour = 3.6;
    s.cost.secondsPerImage = 2.5;
    s.appVersion = "0.1.0";
    s.createdAt = "2025-01-31T12:00:00Z";
    return s;
}

void expectError(const std::string& text, const char* part) {
    try {
        readSidecar(text);
        QFAIL(qPrintable(QString("accepted: ") + text.substr(0, 120).c_str()));
    } catch (const SidecarError& e) {
        QVERIFY2(std::string(e.what()).find(part) != std::string::npos, e.what());
    }
}

} // namespace

class TestSidecar : public QObject {
    Q_OBJECT
private slots:
    void roundTrips() {
        const Sidecar s = sample();
        const std::string text = writeSidecar(s);
        QVERIFY(text.rfind("{\n  \"schema\": \"diffusiondesk.sidecar/2\",", 0) == 0);
        QVERIFY(text.find("/home/alice") == std::string::npos);  // a shared image reveals no local paths
        const Sidecar back = readSidecar(text);
        api::GenerationSettings want = s.settings;
        want.model = "v1-5-pruned-emaonly.safetensors";
        want.initImage = "in.png";
        want.inpaint.mask = "in-mask.png";
        QCOMPARE(nlohmann::json(back.settings), nlohmann::json(want));
        QCOMPARE(back.modelName, s.modelName);
        QCOMPARE(back.modelHash, s.modelHash);
        QCOMPARE(back.modelSha256, s.modelSha256);
        QCOMPARE(back.seeds, s.seeds);
        QCOMPARE(back.timings.loadSeconds, 1.5);
        QCOMPARE(back.timings.encodeSeconds, 0.25);
        QCOMPARE(back.timings.stepSeconds, s.timings.stepSeconds);
        QCOMPARE(back.timings.decodeSeconds, 0.8);
        QCOMPARE(back.imageIndex, 1);
        QCOMPARE(back.memory.denoise.device, int64_t(3500000000));
        QCOMPARE(back.memory.decode.host, int64_t(7000));
        QCOMPARE(back.environment.precision, s.environment.precision);
        QCOMPARE(back.environment.threads, 8);
        QVERIFY(back.environment.deterministic);
        QCOMPARE(back.warnings, s.warnings);
        QCOMPARE(back.cost.pricePerHour, 3.6);
        QCOMPARE(back.cost.perImage(), 0.0025);
        QVERIFY(back.settings.plan == s.settings.plan);
        QVERIFY(back.settings.deterministic);
        QCOMPARE(back.appVersion, s.appVersion);
        QCOMPARE(back.createdAt, s.createdAt);
        QCOMPARE(writeSidecar(back), writeSidecar([&] { Sidecar t = s; t.settings = want; return t; }()));
    }

    // The copy inside an image holds nothing that changes between reruns.
    void embeddedPartHasNoTimeOrCost() {
        const std::string text = writeSidecar(sample(), SidecarParts::Embedded);
        for (const char* k : {"created_at", "timings", "memory", "cost"}) QVERIFY2(text.find(std::string("\"") + k + "\"") == std::string::npos, k);
        const Sidecar back = readSidecar(text);
        QVERIFY(back.settings.plan == sample().settings.plan);
        QCOMPARE(back.imageIndex, 1);
    }

    // Schema 1 files still read: environment strings and the single peak are mapped.
    void readsSchema1() {
        const Sidecar s = readSidecar(R"({"schema": "diffusiondesk.sidecar/1", "settings": {"prompt": "p", "seed": 5},
            "peak_memory_bytes": 3500000000, "environment": {"torch_version": "2.5.1", "device": "cpu", "dtype": "float16",
            "attention_backend": "sdpa", "offload_mode": "none", "threads": "8", "deterministic": "on", "os": "Debian 12"}})");
        QCOMPARE(s.settings.prompt, std::string("p"));
        QCOMPARE(s.memory.denoise.device, int64_t(3500000000));
        QCOMPARE(s.environment.precision, std::string("float16"));
        QCOMPARE(s.environment.attention, std::string("sdpa"));
        QCOMPARE(s.environment.threads, 8);
        QVERIFY(s.environment.deterministic);
        QCOMPARE(s.imageIndex, 0);
    }

    void toleratesMissingAndUnknownFields() {
        const Sidecar s = readSidecar(R"({"schema": "diffusiondesk.sidecar/1", "settings": {"prompt": "p", "steps": 9},
                                          "added_in_1_1": {"x": 1}, "environment": {"device": "cpu", "new_field": "y"}})");
        QCOMPARE(s.settings.prompt, std::string("p"));
        QCOMPARE(s.settings.steps, 9);
        QCOMPARE(s.settings.cfgScale, 7.0);
        QCOMPARE(s.environment.device, std::string("cpu"));
        QVERIFY(s.seeds.empty());
    }

    void clearErrors() {
        expectError("", "not valid JSON");
        expectError(R"({"schema": "diffusiondesk.sidecar/1", "seed": 3e333})", "not valid JSON");  // found by fuzzing
        expectError("[1]", "JSON object");
        expectError(R"({"settings": {}})", "no \"schema\" field");
        expectError(R"({"schema": 1, "settings": {}})", "must be a string");
        expectError(R"({"schema": "invokeai/3", "settings": {}})", "not a DiffusionDesk sidecar");
        expectError(R"({"schema": "diffusiondesk.sidecar/3", "settings": {}})", "newer DiffusionDesk (schema 3)");
        expectError(R"({"schema": "diffusiondesk.sidecar/2", "settings": {}, "memory": {"load": {"host_bytes": 1e300}}})", "out of range");
        expectError(R"({"schema": "diffusiondesk.sidecar/2", "settings": {"memory_plan": {"attention": "magic"}}})", "wrong type");
        expectError(R"({"schema": "diffusiondesk.sidecar/2", "settings": {"memory_plan": {"threads": 1e30}}})", "out of range");
        expectError(R"({"schema": "diffusiondesk.sidecar/2", "settings": {}, "image_index": -1})", "out of range");
        // Every whole-number field is range-checked, not only the ones a list once named (fuzz_a1111 found 8e22).
        expectError(R"({"schema": "diffusiondesk.sidecar/2", "settings": {"width": 4294967808}})", "width: number 4294967808 is out of range");
        expectError(R"({"schema": "diffusiondesk.sidecar/2", "settings": {"memory_plan": {"group_blocks": -1e300}}})", "memory_plan: group_blocks: number -1e+300 is out of range");
        expectError(R"({"schema": "diffusiondesk.sidecar/2", "settings": {}, "seeds": [1, 1e300]})", "seeds = [1,1e+300] is out of range");
        expectError(R"({"schema": "diffusiondesk.sidecar/2", "settings": {"steps": 7.5}})", "not a whole number");
        expectError(R"({"schema": "diffusiondesk.sidecar/0", "settings": {}})", "does not exist");
        expectError(R"({"schema": "diffusiondesk.sidecar/one", "settings": {}})", "not a number");
        expectError(R"({"schema": "diffusiondesk.sidecar/1"})", "no \"settings\"");
        expectError(R"({"schema": "diffusiondesk.sidecar/1", "settings": {"steps": "many"}})", "settings has a field of the wrong type");
        expectError(R"({"schema": "diffusiondesk.sidecar/1", "settings": {}, "seeds": "1"})", "seeds has the wrong type");
        expectError(R"({"schema": "diffusiondesk.sidecar/1", "settings": {}, "timings": {"decode_s": "x"}})", "timings.decode_s");
        expectError(R"({"schema": "diffusiondesk.sidecar/1", "settings": {}, "model": "x"})", "model must be an object");
        expectError("{\"schema\": \"diffusiondesk.sidecar/1\", \"settings\": {\"prompt\": \"\xff\"}}", "UTF-8");
        expectError(std::string(kMaxMetadataText + 1, ' '), "limit");
    }
};

QTEST_GUILESS_MAIN(TestSidecar)
#include "test_sidecar.moc"
