// Sidecar JSON: full round trip, local paths stripped, and a clear error for each way a file can be wrong.
#include "core/settings/sidecar.h"

#include <QtTest>
#include <nlohmann/json.hpp>

using namespace dd::settings;

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
    s.settings.scheduleType = "Karras";
    s.settings.width = 640;
    s.settings.height = 832;
    s.settings.batchSize = 2;
    s.settings.clipSkip = 2;
    s.settings.initImage = "/home/alice/in.png";
    s.settings.strength = 0.45;
    s.settings.preset = "6gb";
    s.modelName = "v1-5-pruned-emaonly.safetensors";
    s.modelHash = "6ce0161689";
    s.modelSha256 = std::string(64, 'a');
    s.seeds = {4294967295, 4294967296};
    s.timings = {1.5, 0.25, {0.1, 0.11, 0.12}, 0.8};
    s.peakMemoryBytes = 3.5e9;
    s.environment = {"2.5.1", "cuda:0 NVIDIA GeForce RTX 3060 (12 GB)", "float16", "sdpa", "none", "8", "on", "Debian 12"};
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
        QVERIFY(text.rfind("{\n  \"schema\": \"diffusiondesk.sidecar/1\",", 0) == 0);
        QVERIFY(text.find("/home/alice") == std::string::npos);  // a shared image reveals no local paths
        const Sidecar back = readSidecar(text);
        GenerationSettings want = s.settings;
        want.model = "v1-5-pruned-emaonly.safetensors";
        want.initImage = "in.png";
        QCOMPARE(nlohmann::json(back.settings), nlohmann::json(want));
        QCOMPARE(back.modelName, s.modelName);
        QCOMPARE(back.modelHash, s.modelHash);
        QCOMPARE(back.modelSha256, s.modelSha256);
        QCOMPARE(back.seeds, s.seeds);
        QCOMPARE(back.timings.loadSeconds, 1.5);
        QCOMPARE(back.timings.encodeSeconds, 0.25);
        QCOMPARE(back.timings.stepSeconds, s.timings.stepSeconds);
        QCOMPARE(back.timings.decodeSeconds, 0.8);
        QCOMPARE(back.peakMemoryBytes, 3.5e9);
        QVERIFY(back.environment == s.environment);
        QCOMPARE(back.appVersion, s.appVersion);
        QCOMPARE(back.createdAt, s.createdAt);
        QCOMPARE(writeSidecar(back), writeSidecar([&] { Sidecar t = s; t.settings = want; return t; }()));
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
        expectError(R"({"schema": "diffusiondesk.sidecar/2", "settings": {}})", "newer DiffusionDesk (schema 2)");
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
