// A1111 "parameters" text against tests/parity/fixtures_a1111.py, which re-states create_infotext's layout and
// quoting and parse_generation_parameters' reading in Python: the writer must produce the same bytes, and the
// parser must find the same prompt, negative prompt and key/value pairs.
#include "core/settings/a1111_parameters.h"

#include <QFile>
#include <QtTest>
#include <nlohmann/json.hpp>

#include <map>
#include <set>

using namespace dd::settings;
namespace api = dd::api;
using nlohmann::json;

class TestA1111Parity : public QObject {
    Q_OBJECT

    json m_cases;

private slots:
    void initTestCase() {
        QFile f(QString(DD_FIXTURES_DIR) + "/a1111/cases.json");
        QVERIFY2(f.open(QIODevice::ReadOnly), "run tests/parity/make_fixtures.py first");
        m_cases = json::parse(f.readAll().toStdString());
    }

    void writerMatchesCreateInfotext() {
        for (const auto& c : m_cases["writer"]) {
            const api::GenerationSettings s = c["settings"].get<api::GenerationSettings>();
            const auto& o = c["options"];
            A1111WriteOptions opts;
            opts.modelName = o.value("model_name", "");
            opts.modelHash = o.value("model_hash", "");
            opts.version = o.value("version", "");
            // "extra_is_ours": the extra parameters are what the settings write (TI hashes), not options.extra.
            if (!o.value("extra_is_ours", false))
                for (const auto& e : o["extra"]) opts.extra.emplace_back(e[0].get<std::string>(), e[1].get<std::string>());
            const std::string got = writeA1111Parameters(s, opts), want = c["text"].get<std::string>();
            QVERIFY2(got == want, (got + "\n  vs A1111's\n" + want).c_str());
        }
    }

    void parserMatchesParseGenerationParameters() {
        // Keys DiffusionDesk consumes into settings; every other key must come back unchanged in `unknown`.
        const std::set<std::string> consumed{"Steps", "Sampler", "Schedule type", "CFG scale", "Seed", "Size", "Size-1", "Size-2",
                                             "Model hash", "Model", "Denoising strength", "Clip skip", "Batch size",
                                             "CFG Rescale", "RNG", "Version", "Lora hashes", "Hires upscale", "Hires resize",
                                             "Hires steps", "Hires upscaler", "Mask blur", "Mask mode", "Masked content",
                                             "Variation seed", "Variation seed strength", "Seed resize from", "TI hashes"};
        for (const auto& c : m_cases["parser"]) {
            const std::string text = c["text"];
            const auto info = parseA1111Parameters(text);
            const QByteArray at = QByteArray("text: ") + text.c_str();
            QVERIFY2(info.settings.prompt == c["prompt"].get<std::string>(), at);
            QVERIFY2(info.settings.negativePrompt == c["negative"].get<std::string>(), at);

            std::map<std::string, std::string> want;
            for (const auto& kv : c["params"]) want[kv[0]] = kv[1];
            std::map<std::string, std::string> got(info.unknown.begin(), info.unknown.end());
            for (const auto& [k, v] : info.unknown) {
                // A1111 splits every "WxH" value into k-1 / k-2; we keep other keys' sizes whole. (A repeated key whose
                // last value is "WxH" leaves A1111 with both k and k-1 / k-2; we keep the last value only.)
                const auto x = v.find('x');
                if (x != std::string::npos && want.count(k + "-1")) {
                    QVERIFY2(want[k + "-1"] + "x" + want[k + "-2"] == v, at + " key " + k.c_str());
                    want.erase(k + "-1"), want.erase(k + "-2"), want.erase(k), got.erase(k);
                }
            }
            // Consumed into settings.variation: the values A1111 reads.
            if (want.count("Variation seed")) QVERIFY2(std::to_string(info.settings.variation.seed) == want["Variation seed"], at);
            if (want.count("Variation seed strength"))
                QVERIFY2(info.settings.variation.strength == std::stod(want["Variation seed strength"]), at);
            if (want.count("Seed resize from-1"))
                QVERIFY2(std::to_string(info.settings.variation.resizeFromWidth) == want["Seed resize from-1"] &&
                             std::to_string(info.settings.variation.resizeFromHeight) == want["Seed resize from-2"], at);
            // Consumed into settings.loras: every "name: hash" must be there (a value without pairs is only warned about).
            if (want.count("Lora hashes") && want["Lora hashes"].find(':') != std::string::npos) {
                std::string joined;
                for (const auto& l : info.settings.loras) joined += (joined.empty() ? "" : ", ") + l.name + ": " + l.hash;
                auto bare = [](std::string v) { std::erase(v, ' '); return v; };  // spacing is free in the text
                QVERIFY2(bare(joined) == bare(want["Lora hashes"]), at + " Lora hashes read as: " + joined.c_str());
            }
            // Consumed into settings.embeddings: the same pairs, in order.
            if (want.count("TI hashes")) {
                std::string joined;
                for (const auto& e : info.settings.embeddings) joined += (joined.empty() ? "" : ", ") + e.name + ": " + e.hash;
                QVERIFY2(joined == want["TI hashes"], at + " TI hashes read as: " + joined.c_str());
            }
            for (const auto& [k, v] : want) {
                const bool split = k.size() > 2 && (k.ends_with("-1") || k.ends_with("-2"));
                if (consumed.count(k) || (split && consumed.count(k.substr(0, k.size() - 2)))) continue;
                QVERIFY2(got.count(k) && got[k] == v, at + " missing or changed: " + k.c_str());
                got.erase(k);
            }
            QVERIFY2(got.empty(), at + " extra key: " + (got.empty() ? "" : got.begin()->first.c_str()));

            if (want.count("Steps") && info.has("steps")) QCOMPARE(double(info.settings.steps), std::stod(want["Steps"]));
            if (want.count("Seed") && info.has("seed")) QVERIFY2(std::to_string(info.settings.seed) == want["Seed"] ||
                                                                 std::stod(want["Seed"]) == double(info.settings.seed), at);
            if (want.count("Size-1")) {
                QCOMPARE(std::to_string(info.settings.width), want["Size-1"]);
                QCOMPARE(std::to_string(info.settings.height), want["Size-2"]);
            }
            if (want.count("Model") && !info.modelName.empty()) {
                const std::string m = want["Model"];
                QCOMPARE(info.modelName, m.substr(0, m.find_last_not_of(' ') + 1));
            }
        }
    }
};

QTEST_GUILESS_MAIN(TestA1111Parity)
#include "test_a1111_parity.moc"
