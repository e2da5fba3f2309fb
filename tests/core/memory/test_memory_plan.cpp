// MemoryPlan JSON round trip and validation messages; the shipped presets match the recipe table of
// ../shared/reference/seed_digest.md row by row; recommendPreset picks the row a card of that size should use.
#include "core/memory/preset.h"
#include "core/memory/preset_settings.h"

#include <nlohmann/json.hpp>

#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

using namespace dd::memory;
namespace api = dd::api;

namespace {

const std::string kPresets = std::string(DD_SOURCE_DIR) + "/resources/presets";
constexpr int64_t GB = 1000000000, GiB = int64_t(1) << 30;

template <typename F>
std::string errorOf(F&& f) {
    try {
        f();
    } catch (const std::exception& e) {
        return e.what();
    }
    return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

} // namespace

class TestMemoryPlan : public QObject {
    Q_OBJECT

private slots:
    void jsonRoundTrip() {
        api::MemoryPlan p;
        p.device = "cuda:1";
        p.unet = api::Precision::FP16;
        p.textEncoder = api::Precision::BF16;
        p.vae = api::Precision::FP32;
        p.vaeUpcast = false;
        p.attention = api::Attention::Chunked;
        p.attentionSliceSize = 3;
        p.queryChunkSize = 256;
        p.vaeSlicing = p.vaeTiling = p.channelsLast = true;
        p.offload = api::Offload::Group;
        p.groupBlocks = 2;
        p.offloadToDisk = true;
        p.vaeTileSize = 256;
        p.fp8Storage = "e4m3fn";
        p.threads = 4;
        p.maxMemory = {{"cuda:0", int64_t(8) << 30}, {"cuda:1", 4'000'000'000}};
        const nlohmann::json j = p;
        QCOMPARE(j.at("max_memory").at("cuda:1").get<int64_t>(), int64_t(4'000'000'000));
        QCOMPARE(j.at("precision").at("text_encoder").get<std::string>(), std::string("bf16"));
        QCOMPARE(j.at("attention").get<std::string>(), std::string("chunked"));
        QVERIFY(j.get<api::MemoryPlan>() == p);
        QVERIFY(nlohmann::json::parse(j.dump()).get<api::MemoryPlan>() == p);
        // Missing keys keep the defaults; one precision string sets all three components.
        const auto partial = nlohmann::json::parse(R"({"precision": "bf16", "vae_tiling": true})").get<api::MemoryPlan>();
        QVERIFY(partial.unet == api::Precision::BF16 && partial.textEncoder == api::Precision::BF16 && partial.vae == api::Precision::BF16);
        QVERIFY(partial.vaeTiling && partial.attention == api::Attention::Sdpa && partial.device == "auto");
    }

    void badNamesSayWhatIsAllowed() {
        const auto e = errorOf([] { nlohmann::json::parse(R"({"attention": "xformers"})").get<api::MemoryPlan>(); });
        QVERIFY2(contains(e, "attention 'xformers' is unknown") && contains(e, "sdpa-math") && contains(e, "chunked"), e.c_str());
        const auto e2 = errorOf([] { nlohmann::json::parse(R"({"precision": {"vae": "fp8"}})").get<api::MemoryPlan>(); });
        QVERIFY2(contains(e2, "precision.vae 'fp8'") && contains(e2, "bf16"), e2.c_str());
        const auto e3 = errorOf([] { nlohmann::json::parse(R"({"offload": "disk"})").get<api::MemoryPlan>(); });
        QVERIFY2(contains(e3, "offload 'disk'") && contains(e3, "sequential"), e3.c_str());
    }

    void validationMessages() {
        QVERIFY(errorOf([] { validate(api::MemoryPlan{}); }).empty());
        auto check = [](auto mutate, const char* expected) {
            api::MemoryPlan p;
            mutate(p);
            const auto e = errorOf([&] { validate(p); });
            QVERIFY2(contains(e, expected), (e + " | expected: " + expected).c_str());
        };
        check([](api::MemoryPlan& p) { p.device = "tpu"; }, "device 'tpu' is unknown");
        check([](api::MemoryPlan& p) { p.attentionSliceSize = -1; }, "slice size");
        check([](api::MemoryPlan& p) { p.queryChunkSize = 0; }, "query chunk size must be positive");
        check([](api::MemoryPlan& p) { p.groupBlocks = -1; }, "0 (leaf level) or more blocks");
        check([](api::MemoryPlan& p) { p.vaeTileSize = 100; }, "multiple of 8");
        check([](api::MemoryPlan& p) { p.fp8Storage = "e3m4"; }, "fp8 storage 'e3m4'");
        check([](api::MemoryPlan& p) { p.threads = -2; }, "threads");
        check([](api::MemoryPlan& p) { p.offload = api::Offload::Model; p.offloadToDisk = true; }, "offload to disk works with group offload only");
        check([](api::MemoryPlan& p) { p.device = "balanced"; p.offload = api::Offload::Model; }, "cannot be combined with offload");
        check([](api::MemoryPlan& p) { p.maxMemory = {{"gpu0", 1}}; }, "max_memory names device 'gpu0': use cuda:N");
        check([](api::MemoryPlan& p) { p.maxMemory = {{"cuda:", 1}}; }, "max_memory names device 'cuda:'");
        check([](api::MemoryPlan& p) { p.maxMemory = {{"cuda:1", 0}}; }, "max_memory for cuda:1 must be positive");
        api::MemoryPlan balanced;
        balanced.device = "balanced";
        balanced.maxMemory = {{"cuda:0", 1}, {"cuda:12", 2}};
        QVERIFY(errorOf([&] { validate(balanced); }).empty());
        // Caps in a file are whole numbers in range, read by name.
        const auto e = errorOf([] { nlohmann::json::parse(R"({"max_memory": {"cuda:0": 8e22}})").get<api::MemoryPlan>(); });
        QVERIFY2(contains(e, "cuda:0: number 8e+22 is out of range"), e.c_str());
        const auto e2 = errorOf([] { nlohmann::json::parse(R"({"max_memory": [1, 2]})").get<api::MemoryPlan>(); });
        QVERIFY2(contains(e2, "max_memory: type must be object"), e2.c_str());
    }

    void presetFileErrorsNameTheFile() {
        QTemporaryDir dir;
        const std::string bad = dir.filePath("broken.json").toStdString();
        std::ofstream(bad) << R"({"name": "x", "budget_bytes": 5, "plan": {"attention": "flash"}})";
        const auto e = errorOf([&] { loadPreset(bad); });
        QVERIFY2(contains(e, bad) && contains(e, "attention 'flash'"), e.c_str());
        const std::string noBudget = dir.filePath("nobudget.json").toStdString();
        std::ofstream(noBudget) << R"({"name": "x", "budget_bytes": 0})";
        QVERIFY(contains(errorOf([&] { loadPreset(noBudget); }), "budget_bytes must be positive"));
        // A custom preset saved and loaded back; the broken file is skipped and reported.
        Preset custom;
        custom.name = "my laptop";
        custom.budgetBytes = 3 * GB;
        custom.plan.vaeTiling = true;
        savePreset(custom, dir.filePath("mine.json").toStdString());
        std::vector<std::string> errors;
        const auto all = loadPresets(dir.path().toStdString(), &errors);
        QCOMPARE(all.size(), size_t(1));
        QCOMPARE(all[0].name, std::string("my laptop"));
        QVERIFY(all[0].plan == custom.plan);
        QCOMPARE(errors.size(), size_t(2));
    }

    // Numbers past a field's range were cast blindly before (UBSan stopped fuzz_preset on 8e22): now refused by name.
    void presetNumbersOutOfRangeAreRefused() {
        QTemporaryDir numbers;
        const std::string huge = numbers.filePath("huge.json").toStdString();
        std::ofstream(huge) << R"({"name": "x", "budget_bytes": 5, "width": 8e22})";
        QVERIFY2(contains(errorOf([&] { loadPreset(huge); }), "width: number 8e+22 is out of range"), errorOf([&] { loadPreset(huge); }).c_str());
        const std::string wraps = numbers.filePath("wraps.json").toStdString();
        std::ofstream(wraps) << R"({"name": "x", "budget_bytes": 5, "plan": {"threads": 4294967298}})";
        QVERIFY(contains(errorOf([&] { loadPreset(wraps); }), "plan: threads: number 4294967298 is out of range"));
        const std::string half = numbers.filePath("half.json").toStdString();
        std::ofstream(half) << R"({"name": "x", "budget_bytes": 5.5})";
        QVERIFY(contains(errorOf([&] { loadPreset(half); }), "budget_bytes: number 5.5 is not a whole number"));
    }

    // Each row of the recipe table (seed 000): VRAM, strategy, approx. time at 1024², 30 steps.
    void shippedPresetsAreTheRecipeTable() {
        std::vector<std::string> errors;
        const auto presets = loadPresets(kPresets, &errors);
        QVERIFY2(errors.empty(), errors.empty() ? "" : errors.front().c_str());
        QCOMPARE(presets.size(), size_t(6));
        std::map<std::string, Preset> by;
        for (const auto& p : presets) by[p.name] = p;
        struct Row {
            const char* name;
            int64_t budget;
            const char* family;
            api::Attention attention;
            bool tiling;
            api::Offload offload;
            const char* strategy;
            const char* time;
        };
        const Row rows[] = {
            {"4gb", 4 * GB, "sd1", api::Attention::Sliced, false, api::Offload::Model, "SD 1.5 + fp16 + attention slicing + CPU offload", "60–120 s"},
            {"6gb", 6 * GB, "sdxl", api::Attention::Sliced, true, api::Offload::None, "SDXL + fp16 + attention slicing + VAE tiling", "25–45 s"},
            {"8gb", 8 * GB, "sdxl", api::Attention::Sliced, false, api::Offload::None, "SDXL + fp16 + attention slicing", "15–25 s"},
            {"12gb", 12 * GB, "sdxl", api::Attention::Sdpa, false, api::Offload::None, "SDXL + fp16 (everything on; ControlNet possible)", "8–15 s"},
            {"24gb", 24 * GB, "sdxl", api::Attention::Sdpa, false, api::Offload::None, "SDXL + fp16 (Refiner + 2× ControlNet + LoRA together)", "6–12 s"},
        };
        for (const auto& r : rows) {
            QVERIFY2(by.count(r.name), r.name);
            const auto& p = by.at(r.name);
            QCOMPARE(p.budgetBytes, r.budget);
            QCOMPARE(p.family, std::string(r.family));
            QCOMPARE(p.width, 1024);
            QCOMPARE(p.height, 1024);
            QCOMPARE(p.strategy, std::string(r.strategy));
            QVERIFY2(contains(p.expectedTime, r.time) && contains(p.expectedTime, "1024²") && contains(p.expectedTime, "30 steps"),
                     p.expectedTime.c_str());
            QCOMPARE(p.plan.device, std::string("cuda"));
            QVERIFY(p.plan.unet == api::Precision::FP16 && p.plan.textEncoder == api::Precision::FP16 && p.plan.vae == api::Precision::FP16);
            QVERIFY(p.plan.vaeUpcast);  // SDXL's VAE stays fp32 (force_upcast), as diffusers does
            QVERIFY(p.plan.attention == r.attention);
            QCOMPARE(p.plan.attentionSliceSize, 0);  // "auto"
            QCOMPARE(p.plan.vaeTiling, r.tiling);
            QVERIFY(!p.plan.vaeSlicing && !p.plan.channelsLast && p.plan.fp8Storage.empty());
            QVERIFY(p.plan.offload == r.offload);
            // Only the 24 GB row keeps the SDXL refiner beside the base; the lower rows swap them (docs/refiner.md).
            QCOMPARE(p.plan.swapModels, std::string(r.name) != "24gb");
        }
        const auto& cpu = by.at("cpu");
        QCOMPARE(cpu.plan.device, std::string("cpu"));
        QCOMPARE(cpu.family, std::string("sd1"));
        QVERIFY(cpu.plan.unet == api::Precision::FP32 && cpu.plan.offload == api::Offload::None && cpu.plan.vaeSlicing);
    }

    void recommendsTheRowThatFits() {
        const auto presets = loadPresets(kPresets);
        auto pick = [&](int64_t bytes, bool cuda) {
            const auto* p = recommendPreset(presets, bytes, cuda);
            return p ? p->name : std::string("none");
        };
        QCOMPARE(pick(5 * GB, true), std::string("4gb"));
        QCOMPARE(pick(16 * GB, true), std::string("12gb"));
        // Cards report a little under their marketed size in GiB: a "8 GB" card (8191.5 MiB) gets 8gb.
        QCOMPARE(pick(8589410304, true), std::string("8gb"));
        QCOMPARE(pick(4294639616, true), std::string("4gb"));
        QCOMPARE(pick(24 * GiB, true), std::string("24gb"));
        QCOMPARE(pick(141 * GB, true), std::string("24gb"));
        QCOMPARE(pick(2 * GB, true), std::string("none"));
        // CPU: RAM is the budget, and only the cpu preset is a CPU plan.
        QCOMPARE(pick(24 * GiB, false), std::string("cpu"));
        QCOMPARE(pick(4 * GB, false), std::string("none"));
    }

    void presetFillsTheSettings() {
        const auto presets = loadPresets(kPresets);
        dd::api::GenerationSettings s;
        s.width = s.height = 768;
        const auto it = std::find_if(presets.begin(), presets.end(), [](const Preset& p) { return p.name == "6gb"; });
        QVERIFY(it != presets.end());
        applyPreset(*it, s);
        QCOMPARE(s.preset, std::string("6gb"));
        QVERIFY(s.plan == it->plan);
        QCOMPARE(s.width, 768);  // the user's size stays
    }
};

QTEST_GUILESS_MAIN(TestMemoryPlan)
#include "test_memory_plan.moc"
