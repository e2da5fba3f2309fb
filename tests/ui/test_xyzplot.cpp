// The X/Y/Z plots under way (ui/xyzplot): a plot's cells collected from the saved jobs' specs, kept in a file so a
// plot started before a restart is completed after it, its sheet composed from the cells; a damaged file is set
// aside, not a failure.
#include "ui/xyzplot.h"

#include "imaging/png.h"

#include <nlohmann/json.hpp>

#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

using dd::ui::PlotBook;

namespace {

QString spec(const QString& tag) { return QString::fromStdString(nlohmann::json{{"steps", 2}, {"xyz_plot", tag.toStdString()}}.dump()); }

QString cellImage(const QTemporaryDir& dir, int n, uint8_t value) {
    const QString path = dir.filePath(QStringLiteral("cell-%1.png").arg(n));
    dd::imaging::writePng(path.toStdString(), {16, 16, std::vector<uint8_t>(16 * 16 * 3, value)}, {{"parameters", "a fox\nSteps: 2, Seed: 1"}});
    return path;
}

} // namespace

class TestXyzPlot : public QObject {
    Q_OBJECT

private slots:
    void aPlotSurvivesARestart() {
        QTemporaryDir dir;
        const QString file = dir.filePath("plots.json");
        QString id, tag1;
        {
            PlotBook book(file);
            const auto& run = book.start({{"steps", {"2", "3"}}}, 2);
            id = run.id(), tag1 = run.jobTag(1);
            QVERIFY(!book.cellSaved(spec(run.jobTag(0)), cellImage(dir, 0, 40)));
            QVERIFY(!book.cellSaved(spec("elsewhere/0"), cellImage(dir, 9, 0)));  // another plot's job: not ours
        }
        PlotBook after(file);  // the restart
        QCOMPARE(after.runs().size(), size_t(1));
        QCOMPARE(after.runs()[0].collected(), 1);
        const auto done = after.cellSaved(spec(tag1), cellImage(dir, 1, 200));
        QVERIFY(done);
        QCOMPARE(done->id(), id);
        QVERIFY(after.runs().empty());
        QCOMPARE(PlotBook(file).runs().size(), size_t(0));  // taken out of the file too
        const QStringList sheets = done->writeSheets(dir.path());
        QCOMPARE(sheets, QStringList{dir.filePath("xyz-0001.png")});
        const auto sheet = dd::imaging::readImage(sheets[0].toStdString());
        QVERIFY(sheet.width >= 32 && sheet.height >= 16);
        QCOMPARE(dd::imaging::readPngText(sheets[0].toStdString()).at("parameters"), std::string("a fox\nSteps: 2, Seed: 1"));
        QCOMPARE(done->writeSheets(dir.path()), QStringList{dir.filePath("xyz-0002.png")});  // never over a file
    }

    void aDamagedFileIsSetAside() {
        QTemporaryDir dir;
        QFile f(dir.filePath("plots.json"));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("[{\"id\": 3");
        f.close();
        PlotBook book(dir.filePath("plots.json"));
        QVERIFY(book.runs().empty());
        QVERIFY2(book.problem().contains("plots.json.damaged"), qPrintable(book.problem()));
        QVERIFY(QFile::exists(dir.filePath("plots.json.damaged")));
        book.start({{"steps", {"2"}}}, 1);
        QCOMPARE(PlotBook(dir.filePath("plots.json")).runs().size(), size_t(1));
    }
};

QTEST_MAIN(TestXyzPlot)
#include "test_xyzplot.moc"
