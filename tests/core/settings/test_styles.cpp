// Prompt styles (core/settings/styles): A1111's styles.csv read and written, its merge of a style into a prompt
// ({prompt} placeholder or ", " after) and its extraction back out, against texts Python's csv module and A1111's
// documented rules give.
#include "core/settings/styles.h"

#include <QTemporaryDir>
#include <QtTest>

using namespace dd::settings;

class TestStyles : public QObject {
    Q_OBJECT

private slots:
    void readsA1111StylesCsv() {
        // As A1111 writes it (csv.DictWriter, \r\n), with a quoted prompt holding a comma, a quote and a line break.
        const std::string csv =
            "name,prompt,negative_prompt\r\n"
            "Cinematic,\"cinematic still of {prompt}, \"\"film\"\" grain\nshallow depth\",\"cartoon, drawing\"\r\n"
            "Plain,oil painting,\r\n"
            ",no name: skipped,\r\n"
            "Short\r\n";
        const auto styles = readStylesCsv(csv);
        QCOMPARE(styles.size(), size_t(3));
        QCOMPARE(styles[0], (PromptStyle{"Cinematic", "cinematic still of {prompt}, \"film\" grain\nshallow depth", "cartoon, drawing"}));
        QCOMPARE(styles[1], (PromptStyle{"Plain", "oil painting", ""}));
        QCOMPARE(styles[2], (PromptStyle{"Short", "", ""}));
        QCOMPARE(readStylesCsv(writeStylesCsv(styles)), styles);  // what we write reads back the same
        // Columns in another order, a byte-order mark, A1111's first header ("text"), extra columns.
        QCOMPARE(readStylesCsv("\xEF\xBB\xBFnegative_prompt,extra,name,text\nbad,x,Old,good\n"),
                 (std::vector<PromptStyle>{{"Old", "good", "bad"}}));
    }

    void badFilesNameTheLine() {
        try {
            readStylesCsv("name,prompt\nA,\"never closed\nB,x\n");
            QFAIL("read");
        } catch (const std::invalid_argument& e) {
            QCOMPARE(QString(e.what()), QString("styles.csv line 2: a quote is never closed"));
        }
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, readStylesCsv("prompt,negative_prompt\nx,y\n"));
        QVERIFY(readStylesCsv("").empty());
        QTemporaryDir dir;
        QVERIFY(readStylesFile(dir.filePath("missing.csv").toStdString()).empty());  // no file yet: no styles
        const std::string path = dir.filePath("sub/styles.csv").toStdString();
        writeStylesFile(path, {{"A", "a {prompt}", "n"}});
        QCOMPARE(readStylesFile(path), (std::vector<PromptStyle>{{"A", "a {prompt}", "n"}}));
    }

    void mergeAndExtractAsA1111() {
        QCOMPARE(applyStyleText("cinematic still of {prompt}, film grain", "a fox"), std::string("cinematic still of a fox, film grain"));
        QCOMPARE(applyStyleText("oil painting", "a fox "), std::string("a fox, oil painting"));
        QCOMPARE(applyStyleText("oil painting", ""), std::string("oil painting"));
        QCOMPARE(applyStyleText("", " a fox "), std::string("a fox"));
        QCOMPARE(applyStyleText("{prompt} and {prompt}", "x"), std::string("x and x"));
        QCOMPARE(removeStyleText("cinematic still of {prompt}, film grain", "cinematic still of a fox, film grain"), std::optional<std::string>("a fox"));
        QCOMPARE(removeStyleText("oil painting", "a fox, oil painting"), std::optional<std::string>("a fox"));
        QCOMPARE(removeStyleText("oil painting", "oil painting"), std::optional<std::string>(""));
        QCOMPARE(removeStyleText("oil painting", "a fox, watercolour"), std::nullopt);
        QCOMPARE(removeStyleText("still of {prompt}, grain", "a fox"), std::nullopt);
        // Applied then removed: the prompt as it was.
        for (const std::string style : {"x {prompt} y", "trailing words", "{prompt}, only after"})
            QCOMPARE(removeStyleText(style, applyStyleText(style, "a fox")), std::optional<std::string>("a fox"));
    }

    void importReplacesByName() {
        const auto merged = mergeStyles({{"A", "a", ""}, {"B", "b", ""}}, {{"B", "new b", "n"}, {"C", "c", ""}});
        QCOMPARE(merged, (std::vector<PromptStyle>{{"A", "a", ""}, {"B", "new b", "n"}, {"C", "c", ""}}));
    }
};

QTEST_GUILESS_MAIN(TestStyles)
#include "test_styles.moc"
