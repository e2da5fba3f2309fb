// A1111's prompt editing and alternation (core/text/prompt_schedule) against schedules made by lark on A1111's grammar
// (tests/parity/fixtures_prompt_editing.py): 30 prompts, plain, edited, nested, malformed, at five step counts, and a
// hires fix's second pass.
#include "core/text/prompt_schedule.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

using namespace dd;

class TestPromptSchedule : public QObject {
    Q_OBJECT

private slots:
    void matchesTheReference() {
        QFile f(QString(DD_FIXTURES_DIR) + "/prompt_editing/schedules.json");
        QVERIFY2(f.open(QIODevice::ReadOnly), "run tests/parity/make_fixtures.py first");
        const QJsonArray cases = QJsonDocument::fromJson(f.readAll()).array();
        QVERIFY(cases.size() >= 150);
        int failures = 0;
        for (const auto& value : cases) {
            const QJsonObject c = value.toObject();
            const std::string prompt = c["prompt"].toString().toStdString();
            std::vector<text::ScheduledText> want;
            for (const auto& entry : c["schedule"].toArray())
                want.push_back({entry.toArray()[0].toInt(), entry.toArray()[1].toString().toStdString()});
            const auto got = text::promptSchedule(prompt, c["steps"].toInt(), c["first_pass_steps"].toInt(0));
            if (got == want) continue;
            ++failures;
            QString shown;
            for (const auto& g : got) shown += QString(" [%1, '%2']").arg(g.lastStep).arg(QString::fromStdString(g.text));
            qWarning("'%s' at %d steps:%s", prompt.c_str(), c["steps"].toInt(), qPrintable(shown));
        }
        QCOMPARE(failures, 0);
    }

    // AND and the parts' weights, as A1111's re_AND and re_weight split them.
    void andSplitsAsA1111() {
        QFile f(QString(DD_FIXTURES_DIR) + "/prompt_editing/splits.json");
        QVERIFY2(f.open(QIODevice::ReadOnly), "run tests/parity/make_fixtures.py first");
        for (const auto& value : QJsonDocument::fromJson(f.readAll()).array()) {
            const QJsonObject c = value.toObject();
            std::vector<text::PromptPart> want;
            for (const auto& p : c["parts"].toArray()) want.push_back({p.toArray()[0].toString().toStdString(), p.toArray()[1].toDouble()});
            const auto got = text::splitAnd(c["prompt"].toString().toStdString());
            QVERIFY2(got == want, qPrintable(c["prompt"].toString() + " split into " + QString::number(got.size())));
        }
    }

    void editingIsSeen() {
        QVERIFY(text::hasPromptEditing("a [cat:dog:0.5]"));
        QVERIFY(text::hasPromptEditing("a [cat|dog]"));
        QVERIFY(text::hasPromptEditing("(a [cat::3]:1.2)"));
        QVERIFY(!text::hasPromptEditing("a (cat:1.2) [dog]"));
        QVERIFY(!text::hasPromptEditing("a [cat:dog] | b"));
    }
};

QTEST_GUILESS_MAIN(TestPromptSchedule)
#include "test_prompt_schedule.moc"
