// Prompt editing in a whole run, against diffusers' components in a small loop (tests/parity/
// fixtures_prompt_editing.py): each distinct text encoded once by the tiny SD 1.x model's CLIP, the conditioning
// switched at the steps A1111's schedule says, Euler. The engine encodes each stretch once, from the cache after.
#include "core/io/safetensors.h"
#include "core/pipeline/engine.h"
#include "tests/common/pipeline_case.h"
#include "tests/common/test_program.h"

#include <torch/torch.h>

#include <QJsonArray>
#include <QJsonObject>
#include <QtTest>

namespace test_prompt_editing {  // the test program is a unity build: each file keeps its names

using namespace dd;

namespace {

const QString kDir = QString(DD_FIXTURES_DIR) + "/prompt_editing";
const QString kModels = QString(DD_FIXTURES_DIR) + "/pipeline";

} // namespace

class TestPromptEditing : public QObject {
    Q_OBJECT
    QJsonArray m_cases;

private slots:
    void initTestCase() {
        QVERIFY2(test::readCases(kDir, m_cases), "run tests/parity/make_fixtures.py first");
        QVERIFY(m_cases.size() >= 3);
    }

    void matchesTheReferenceLoop_data() {
        QTest::addColumn<int>("index");
        for (int i = 0; i < m_cases.size(); ++i) QTest::newRow(qPrintable(m_cases.at(i).toObject()["prompt"].toString())) << i;
    }
    void matchesTheReferenceLoop() {
        QFETCH(int, index);
        const auto c = m_cases.at(index).toObject();
        api::GenerationSettings s = test::caseSettings(c, (kModels + "/" + c["model"].toString()).toStdString());
        s.promptSyntax = "a1111";  // the editing syntax; plain text within 75 tokens encodes as diffusers does
        pipeline::Engine engine;
        api::CancelToken cancel;
        test::LastLatents observer;
        const int64_t runsBefore = engine.textEncoderRuns();
        engine.generate(s, cancel, &observer);
        // Each distinct stretch once (and an AND prompt's padding chunk, the empty prompt).
        const bool parts = c["prompt"].toString().contains(" AND ");
        QCOMPARE(engine.textEncoderRuns() - runsBefore, int64_t(c["segments"].toInt() + (parts ? 1 : 0)));
        const auto want = io::SafetensorsFile::open((kDir + QString("/case_%1.safetensors").arg(index)).toStdString())->tensor("latents");
        const double err = test::maxAbs(observer.latents, want);
        qInfo("latents max abs %.3g", err);
        QVERIFY2(err <= 1e-4, qPrintable(QString("latents differ by %1").arg(err)));
        // Run again: every stretch from the cache.
        const int64_t before = engine.textEncoderRuns();
        const auto again = engine.generate(s, cancel, nullptr);
        QCOMPARE(engine.textEncoderRuns(), before);
        QVERIFY(again.textEncodeCached);
    }

    // The edit changes the picture: the same seed without it is another image, and a schedule that switches after
    // the last step is the prompt before the switch.
    void theEditMatters() {
        const auto c = m_cases.at(0).toObject();
        api::GenerationSettings s = test::caseSettings(c, (kModels + "/" + c["model"].toString()).toStdString());
        s.promptSyntax = "a1111";
        pipeline::Engine engine;
        api::CancelToken cancel;
        const auto edited = engine.generate(s, cancel, nullptr);
        s.prompt = "a red lighthouse on a cliff";
        const auto red = engine.generate(s, cancel, nullptr);
        QVERIFY(edited.images.at(0).rgb != red.images.at(0).rgb);
        s.prompt = "a [red:blue:1.0] lighthouse on a cliff";
        QVERIFY(engine.generate(s, cancel, nullptr).images.at(0).rgb == red.images.at(0).rgb);
    }
};

DD_REGISTER_TEST(TestPromptEditing)

} // namespace test_prompt_editing

#include "test_prompt_editing.moc"
