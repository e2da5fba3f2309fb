// X/Y/Z plot axes (core/compare/xyz_plot): A1111's value syntax against a re-creation with numpy
// (tests/parity/fixtures_xyz.py), and the cells: x fastest, each a valid single-image run, Prompt S/R and size as
// A1111 applies them, and one message per axis value that does not fit.
#include "core/compare/xyz_plot.h"

#include <nlohmann/json.hpp>

#include <QFile>
#include <QtTest>

using namespace dd;

class TestXyzPlot : public QObject {
    Q_OBJECT

private slots:
    void valuesMatchTheReference() {
        QFile f(QString(DD_FIXTURES_DIR) + "/xyz/ranges.json");
        QVERIFY2(f.open(QIODevice::ReadOnly), "run tests/parity/make_fixtures.py first");
        const auto cases = nlohmann::json::parse(f.readAll().toStdString());
        QVERIFY(cases.size() >= 19);
        for (const auto& c : cases) {
            const std::string text = c["text"], kind = c["kind"];
            const QByteArray at = QByteArray("'") + text.c_str() + "' as " + kind.c_str();
            if (c["values"].empty()) {  // A1111 would plot nothing: a message instead
                QVERIFY_THROWS_EXCEPTION(std::invalid_argument, compare::parseAxisValues(text, kind != "text", kind == "int"));
                continue;
            }
            const auto got = compare::parseAxisValues(text, kind != "text", kind == "int");
            QVERIFY2(got.size() == c["values"].size(), at + " gave " + QByteArray::number(qsizetype(got.size())) + " values");
            for (size_t i = 0; i < got.size(); ++i) {
                const auto& want = c["values"][i];
                if (want.is_number()) QVERIFY2(std::abs(std::stod(got[i]) - want.get<double>()) < 1e-12, at + " value " + got[i].c_str());
                else QVERIFY2(got[i] == want.get<std::string>(), at + " value " + got[i].c_str());
            }
        }
    }

    void cellsRunXFastest() {
        api::GenerationSettings base;
        base.model = "demo:tiny-sd1";
        base.prompt = "a red fox";
        base.negativePrompt = "red ink";
        base.batchSize = 4;
        const std::vector<compare::PlotAxis> axes{compare::parseAxis(base, "steps", "10-30 (+10)"),
                                                  compare::parseAxis(base, "prompt_sr", "red, blue"),
                                                  compare::parseAxis(base, "size", "512x512, 768x512")};
        const auto cells = compare::plotCells(base, axes);
        QCOMPARE(cells.size(), size_t(12));
        QCOMPARE(cells[1].settings.steps, 20);
        QCOMPARE(cells[1].x, 1);
        QCOMPARE(cells[3].y, 1);
        QCOMPARE(cells[3].settings.prompt, std::string("a blue fox"));
        QCOMPARE(cells[3].settings.negativePrompt, std::string("blue ink"));  // A1111 replaces in both
        QCOMPARE(cells[0].settings.prompt, std::string("a red fox"));
        QCOMPARE(cells[11].settings.width, 768);
        QCOMPARE(cells[11].z, 1);
        for (const auto& c : cells) QCOMPARE(c.settings.batchSize, 1);  // one image a cell: no batch effects
        // Any settings path; a variation strength from a base without one.
        const auto strength = compare::plotCells(base, {compare::parseAxis(base, "variation.strength", "0-1 [3]")});
        QCOMPARE(strength[1].settings.variation.strength, 0.5);
        const auto tiling = compare::plotCells(base, {compare::parseAxis(base, "memory_plan.vae_tiling", "false, true")});
        QVERIFY(tiling[1].settings.plan.vaeTiling);
    }

    void badAxesAreOneMessage_data() {
        QTest::addColumn<QString>("field");
        QTest::addColumn<QString>("values");
        QTest::addColumn<QString>("message");
        QTest::newRow("unknown field") << "colour" << "1, 2" << "'colour' is not a generation setting";
        QTest::newRow("whole number") << "steps" << "10, 12.5" << "X axis (steps) value '12.5': 'steps' expects a whole number";
        QTest::newRow("invalid") << "steps" << "0-2" << "X axis (steps) value '0': steps must be between 1 and 1000";
        QTest::newRow("size") << "size" << "512" << "X axis (size) value '512': size expects WxH";
        QTest::newRow("not found") << "prompt_sr" << "green, blue" << "Prompt S/R did not find 'green'";
        QTest::newRow("hires off") << "hires.denoising" << "0.5" << "'hires.denoising': turn the hires fix on first";
        QTest::newRow("no lora") << "lora_weight" << "0.5" << "LoRA weight: no LoRA in the list";
        QTest::newRow("huge") << "seed" << "1-5000" << "makes 5000 values";
    }
    void badAxesAreOneMessage() {
        QFETCH(QString, field);
        QFETCH(QString, values);
        QFETCH(QString, message);
        api::GenerationSettings base;
        base.prompt = "a red fox";
        try {
            compare::plotCells(base, {compare::parseAxis(base, field.toStdString(), values.toStdString())});
            QFAIL("accepted");
        } catch (const std::invalid_argument& e) {
            QVERIFY2(QString(e.what()).contains(message), e.what());
        }
    }
};

QTEST_GUILESS_MAIN(TestXyzPlot)
#include "test_xyz_plot.moc"
