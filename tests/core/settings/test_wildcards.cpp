// Wildcards (core/settings/wildcards): __name__ picks a line of name.txt with a generator seeded by the run's
// seed, the same line every time; nested wildcards, sub-folders, comments; missing files named.
#include "core/settings/wildcards.h"

#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include <set>

using namespace dd;

namespace {

void write(const QTemporaryDir& dir, const QString& name, const QByteArray& text) {
    QDir().mkpath(QFileInfo(dir.filePath(name)).absolutePath());
    QFile f(dir.filePath(name));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(text);
}

} // namespace

class TestWildcards : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    std::vector<std::string> folders() const { return {m_dir.path().toStdString()}; }

private slots:
    void initTestCase() {
        write(m_dir, "colour.txt", "# colours\nred\n\n  green  \r\nblue\n");
        write(m_dir, "animal.txt", "fox\n__colour__ cat\n");
        write(m_dir, "places/city.txt", "Paris\n");
        write(m_dir, "empty.txt", "# nothing\n\n");
        write(m_dir, "loop.txt", "__loop__\n");
    }

    void linesSkipCommentsAndBlanks() {
        QCOMPARE(settings::wildcardLines("# c\nred\n\n  green  \r\nblue"), (std::vector<std::string>{"red", "green", "blue"}));
    }

    void theSeedPicksTheSameLines() {
        const auto a = settings::resolveWildcards("a __colour__ __animal__ in __places/city__", 7, folders());
        QCOMPARE(settings::resolveWildcards("a __colour__ __animal__ in __places/city__", 7, folders()), a);
        QVERIFY2(a.find("__") == std::string::npos && a.ends_with(" in Paris"), a.c_str());
        // Over seeds, every line of colour.txt comes up.
        std::set<std::string> seen;
        for (int64_t seed = 0; seed < 40; ++seed) seen.insert(settings::resolveWildcards("__colour__", seed, folders()));
        QCOMPARE(seen, (std::set<std::string>{"red", "green", "blue"}));
        QVERIFY(!settings::hasWildcards("a plain _prompt_ with __ and ____"));
        QVERIFY(settings::hasWildcards("__a b/c-d__"));
    }

    void settingsKeepTheTemplate() {
        api::GenerationSettings s;
        s.seed = 3;
        s.prompt = "a __animal__";
        s.negativePrompt = "blurry";
        settings::resolveWildcards(s, folders());
        QCOMPARE(s.promptTemplate, std::string("a __animal__"));
        QVERIFY(s.prompt.find("__") == std::string::npos);
        QCOMPARE(s.negativePrompt, std::string("blurry"));
        api::GenerationSettings plain = s;  // a restored run, its prompt then edited to have no wildcard
        plain.prompt = "no wildcard";
        settings::resolveWildcards(plain, {});
        QVERIFY(plain.promptTemplate.empty() && plain.negativeTemplate.empty());
        QCOMPARE(plain.prompt, std::string("no wildcard"));
    }

    void missingFilesAreNamed() {
        const auto message = [&](const std::string& prompt, const std::vector<std::string>& in) {
            try {
                settings::resolveWildcards(prompt, 1, in);
            } catch (const std::invalid_argument& e) {
                return QString(e.what());
            }
            return QString();
        };
        QCOMPARE(message("__hat__", folders()), QString("wildcard __hat__: no hat.txt in %1").arg(m_dir.path()));
        QCOMPARE(message("__hat__", {}), QString("wildcard __hat__: no hat.txt in any wildcard folder (none is set)"));
        QVERIFY(message("__empty__", folders()).contains("has no line to pick"));
        QVERIFY(message("__loop__", folders()).contains("nested more than 16 deep"));
        QVERIFY(message("__../colour__", folders()).isEmpty());  // not a wildcard name ('.'): text
        QVERIFY(message("__a/../colour__", folders()).isEmpty());
    }
};

QTEST_GUILESS_MAIN(TestWildcards)
#include "test_wildcards.moc"
