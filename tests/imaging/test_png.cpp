// PNG text chunks: read what Pillow (A1111's writer) wrote, and read back what we write.
#include "imaging/png.h"

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <numeric>

using namespace dd;

class TestPng : public QObject {
    Q_OBJECT
private slots:
    void readsPillowTextChunks() {
        QFile f(QString(DD_FIXTURES_DIR) + "/png/a1111.json");
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonObject want = QJsonDocument::fromJson(f.readAll()).object();
        const std::string path = std::string(DD_FIXTURES_DIR) + "/png/a1111.png";
        const auto text = imaging::readPngText(path);
        for (const char* key : {"parameters", "plain", "packed"})
            QCOMPARE(QString::fromStdString(text.at(key)), want[key].toString());
        const auto img = imaging::readImage(path);
        QCOMPARE(img.width, want["width"].toInt());
        QCOMPARE(img.height, want["height"].toInt());
        QCOMPARE(std::accumulate(img.rgb.begin(), img.rgb.end(), int64_t(0)), int64_t(want["checksum"].toDouble()));
    }

    void roundTripsPixelsAndText() {
        QTemporaryDir dir;
        api::Image img{5, 3, {}};
        for (int i = 0; i < 5 * 3 * 3; ++i) img.rgb.push_back(uint8_t(i * 17));
        const std::string path = dir.filePath("out.png").toStdString();
        imaging::writePng(path, img, {{"parameters", "Steps: 20, Seed: 1\nünïcode ✓"}, {"dd", "{\"a\":1}"}});
        const auto text = imaging::readPngText(path);
        QCOMPARE(text.at("parameters"), std::string("Steps: 20, Seed: 1\nünïcode ✓"));
        QCOMPARE(text.at("dd"), std::string("{\"a\":1}"));
        const auto back = imaging::readImage(path);
        QCOMPARE(back.rgb, img.rgb);
        QVERIFY(!QFile::exists(QString::fromStdString(path + ".partial")));
    }

    void failuresNameTheFile() {
        QTemporaryDir dir;
        const std::string path = dir.filePath("missing/out.png").toStdString();
        try {
            imaging::writePng(path, {1, 1, {0, 0, 0}});
            QFAIL("write into a missing folder succeeded");
        } catch (const std::runtime_error& e) {
            QVERIFY(QString(e.what()).startsWith(QString::fromStdString(path)));
        }
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, imaging::readPngText(dir.filePath("nope.png").toStdString()));
    }
};

QTEST_GUILESS_MAIN(TestPng)
#include "test_png.moc"
