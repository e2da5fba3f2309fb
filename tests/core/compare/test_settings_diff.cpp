// Which settings and environment fields differ between two results, and the A/B quick actions' pairs.
#include "core/compare/ab_settings.h"
#include "core/compare/pixel_diff.h"
#include "core/compare/settings_diff.h"

#include <nlohmann/json.hpp>

#include <QtTest>

using namespace dd;

namespace {
std::vector<std::string> fields(const std::vector<compare::FieldDifference>& d) {
    std::vector<std::string> out;
    for (const auto& f : d) out.push_back(f.field);
    return out;
}
} // namespace

class TestSettingsDiff : public QObject {
    Q_OBJECT
private slots:
    void equalSettingsHaveNoDifferences() {
        api::GenerationSettings a;
        a.prompt = "a lighthouse";
        QVERIFY(compare::diffSettings(a, a).empty());
    }

    void namesEveryChangedFieldWithBothValues() {
        api::GenerationSettings a, b;
        a.prompt = b.prompt = "a lighthouse";
        b.seed = 43;
        b.cfgScale = 4.5;
        b.sampler = "DPM++ 2M";
        b.plan.unet = api::Precision::FP16;
        b.plan.vaeTiling = true;
        const auto d = compare::diffSettings(a, b);
        const std::vector<std::string> want = {"cfg_scale", "memory_plan.precision.unet", "memory_plan.vae_tiling",
                                               "sampler", "seed"};
        QCOMPARE(fields(d), want);
        QCOMPARE(d[0].a, std::string("7.0"));
        QCOMPARE(d[0].b, std::string("4.5"));
        QCOMPARE(d[1].a, std::string("fp32"));  // strings unquoted
        QCOMPARE(d[1].b, std::string("fp16"));
        QCOMPARE(d[2].b, std::string("true"));
        QCOMPARE(d[4].a, std::string("0"));
        QCOMPARE(d[4].b, std::string("43"));
        QVERIFY(compare::describe(d).find("sampler: Euler a \u2192 DPM++ 2M\n") != std::string::npos);
    }

    void jsonDiffHandlesMissingKeysAndNumberKinds() {
        const auto a = nlohmann::json::parse(R"({"x": 7, "o": {"p": 1, "q": [1, 2]}, "only_a": "s"})");
        const auto b = nlohmann::json::parse(R"({"x": 7.0, "o": {"p": 1, "q": [1, 3]}, "only_b": true})");
        const auto d = compare::diffJson(a, b);
        QCOMPARE(fields(d), (std::vector<std::string>{"o.q", "only_a", "only_b"}));
        QCOMPARE(d[1].b, std::string("(absent)"));
        QCOMPARE(d[2].a, std::string("(absent)"));
    }

    void environmentDifferences() {
        api::Environment a{"0.1.0", "2.15.0", "CPU", "unet=fp32 text_encoder=fp32 vae=fp32", "sdpa-math", "none", 2, true};
        QVERIFY(compare::diffEnvironment(a, a).empty());
        auto b = a;
        b.device = "NVIDIA H200";
        b.threads = 16;
        b.deterministic = false;
        const auto d = compare::diffEnvironment(a, b);
        QCOMPARE(fields(d), (std::vector<std::string>{"deterministic", "device", "threads"}));
        QCOMPARE(d[1].a, std::string("CPU"));
        QCOMPARE(d[2].b, std::string("16"));
        QCOMPARE(compare::environmentJson(a)["precision"].get<std::string>(), a.precision);
    }

    void pixelDifferenceBasics() {
        api::Image a{2, 1, {0, 0, 0, 10, 20, 30}}, b = a;
        auto d = compare::pixelDifference(a, b);
        QVERIFY(d.sameSize && d.maxAbs == 0 && std::isinf(d.psnr));
        QCOMPARE(compare::describe(d), std::string("identical pixels"));
        b.rgb[4] = 25;
        d = compare::pixelDifference(a, b);
        QCOMPARE(d.maxAbs, 5);
        QCOMPARE(d.differingPixels, int64_t(1));
        QCOMPARE(d.mse, 25.0 / 6.0);
        api::Image c{1, 2, a.rgb};
        QVERIFY(!compare::pixelDifference(a, c).sameSize);
    }

    void abSeeds() {
        api::GenerationSettings base;
        base.seed = 42;
        const auto p = compare::abSeeds(base, 43);
        QCOMPARE(p.a.seed, int64_t(42));
        QCOMPARE(p.b.seed, int64_t(43));
        QCOMPARE(fields(compare::diffSettings(p.a, p.b)), std::vector<std::string>{"seed"});
        QCOMPARE(p.label, std::string("seed 42 vs 43"));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, compare::abSeeds(base, 42));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, compare::abSeeds(base, -1));
    }

    void abSettingVariesExactlyOneField() {
        api::GenerationSettings base;
        const auto cfg = compare::abSetting(base, "cfg_scale", nlohmann::json(4.5));
        QCOMPARE(cfg.b.cfgScale, 4.5);
        QCOMPARE(fields(compare::diffSettings(cfg.a, cfg.b)), std::vector<std::string>{"cfg_scale"});
        const auto prec = compare::abSettingFromText(base, "memory_plan.precision.unet", "fp16");
        QCOMPARE(prec.b.plan.unet, api::Precision::FP16);
        QCOMPARE(prec.label, std::string("memory_plan.precision.unet fp32 vs fp16"));
        QCOMPARE(compare::abSettingFromText(base, "steps", "30").b.steps, 30);
        QCOMPARE(compare::abSettingFromText(base, "cfg_scale", "3").b.cfgScale, 3.0);
        QCOMPARE(compare::abSettingFromText(base, "memory_plan.vae_tiling", "true").b.plan.vaeTiling, true);
        QCOMPARE(compare::abSettingFromText(base, "sampler", "DDIM").b.sampler, std::string("DDIM"));
        // Every offered field exists in the settings.
        for (const auto& f : compare::abFields()) {
            nlohmann::json j = base;
            nlohmann::json* node = &j;
            for (size_t s = 0, e; s != std::string::npos; s = e == std::string::npos ? e : e + 1) {
                e = f.path.find('.', s);
                const auto key = f.path.substr(s, e == std::string::npos ? e : e - s);
                QVERIFY2(node->contains(key), f.path.c_str());
                node = &(*node)[key];
            }
        }
    }

    void abSettingRejectsWhatCannotBeRun() {
        api::GenerationSettings base;
        const auto fails = [&](const std::string& path, const std::string& text, const std::string& needle) {
            try {
                compare::abSettingFromText(base, path, text);
            } catch (const std::invalid_argument& e) {
                return std::string(e.what()).find(needle) != std::string::npos;
            }
            return false;
        };
        QVERIFY(fails("no_such_field", "1", "'no_such_field' is not a generation setting"));
        QVERIFY(fails("memory_plan.nope", "1", "is not a generation setting"));
        QVERIFY(fails("steps", "many", "'steps' expects a whole number"));
        QVERIFY(fails("steps", "2.5", "'steps' expects a whole number"));
        QVERIFY(fails("steps", "0", "steps must be between 1 and 1000"));
        QVERIFY(fails("steps", "20", "already 20"));
        QVERIFY(fails("memory_plan.precision.unet", "fp12", "fp12"));
        QVERIFY(fails("memory_plan.vae_tiling", "maybe", "true or false"));
        QVERIFY(fails("memory_plan", "x", "cannot be varied"));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, compare::abSetting(base, "steps", nlohmann::json("30")));
    }

    void abPreset() {
        api::GenerationSettings base;
        memory::Preset p;
        p.name = "8gb";
        p.plan.unet = api::Precision::FP16;
        p.plan.vaeTiling = true;
        const auto pair = compare::abPreset(base, p);
        QCOMPARE(pair.b.preset, std::string("8gb"));
        QCOMPARE(pair.b.plan, p.plan);
        QCOMPARE(pair.label, std::string("preset (none) vs 8gb"));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, compare::abPreset(pair.b, p));
    }
};

QTEST_GUILESS_MAIN(TestSettingsDiff)
#include "test_settings_diff.moc"
