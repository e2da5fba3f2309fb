// kill -9 while images are being saved (and indexed, as the window's autosave does): afterwards every image and
// sidecar that exists is complete, the only leftovers are hidden temporaries that removeStaleTemporaries clears,
// and the library index opens undamaged, lists only complete images and, after a scan, every one of them.
#include "core/library/library.h"
#include "core/library/scan.h"
#include "core/queue/durable_file.h"
#include "core/settings/restore.h"
#include "imaging/png.h"

#include <QDir>
#include <QElapsedTimer>
#include <QJsonDocument>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <thread>

namespace {

dd::api::Image pattern(int size, int index) {  // as crash_writer.cpp draws it
    dd::api::Image img{size, size, {}};
    img.rgb.resize(std::size_t(size) * size * 3);
    uint32_t x = 2463534242u + uint32_t(index);
    for (auto& b : img.rgb) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        b = uint8_t(x);
    }
    return img;
}

} // namespace

class TestCrashSafety : public QObject {
    Q_OBJECT

    // The index a killed writer left: opens without repair, names only files that exist, and a scan of the
    // folder adds what the kill kept out of it (the image written, its index row not yet committed).
    static void checkIndex(const QTemporaryDir& dir) {
        dd::library::Library lib(dir.filePath("library.db").toStdString());
        QVERIFY2(!lib.rebuilt(), lib.note().c_str());
        for (const auto& s : lib.stamps()) QVERIFY2(QFile::exists(QString::fromStdString(s.path)), s.path.c_str());
        const int64_t before = lib.count();
        const auto report = dd::library::scanFolder(lib, dir.path().toStdString());
        QVERIFY(report.added <= 1);
        QCOMPARE(report.removed, 0);
        const int pngs = int(QDir(dir.path()).entryList({"img-*.png"}, QDir::Files).size());
        QCOMPARE(lib.count(), int64_t(pngs));
        QVERIFY(before >= pngs - 1);
    }

private slots:
    void killDuringSaveLeavesNoPartialFile_data() {
        QTest::addColumn<int>("killAfterMs");
        QTest::addColumn<bool>("indexed");
        for (int ms : {0, 7, 23, 61, 140}) QTest::newRow(qPrintable(QString::number(ms) + " ms")) << ms << false;
        for (int ms : {0, 11, 37, 90}) QTest::newRow(qPrintable(QString::number(ms) + " ms, indexed")) << ms << true;
    }
    void killDuringSaveLeavesNoPartialFile() {
        QFETCH(int, killAfterMs);
        QFETCH(bool, indexed);
        constexpr int kSize = 512;  // ~800 KB per PNG
        QTemporaryDir dir;
        QProcess child;
        QStringList args{dir.path(), QString::number(kSize)};
        if (indexed) args << "index";
        child.start(QString(DD_BINARY_DIR) + "/bin/crash_writer", args);
        QVERIFY(child.waitForStarted());
        // Wait for the first image, then a little more, so the kill lands at different points of a write.
        QElapsedTimer t;
        t.start();
        while (!QFile::exists(dir.filePath("img-00001.png")) && t.elapsed() < 60000) std::this_thread::sleep_for(std::chrono::milliseconds(2));
        std::this_thread::sleep_for(std::chrono::milliseconds(killAfterMs));
        child.kill();  // SIGKILL
        QVERIFY(child.waitForFinished());
        QCOMPARE(child.exitStatus(), QProcess::CrashExit);

        if (indexed) {
            checkIndex(dir);
            for (const char* suffix : {"", "-wal", "-shm", ".thumbnails", ".thumbnails-wal", ".thumbnails-shm"})
                QFile::remove(dir.filePath(QString("library.db") + suffix));
        }
        const QStringList visible = QDir(dir.path()).entryList(QDir::Files);
        QVERIFY(!visible.isEmpty());
        for (const QString& name : visible) {
            const std::string path = dir.filePath(name).toStdString();
            if (name.endsWith(".json")) {
                QFile f(dir.filePath(name));
                QVERIFY(f.open(QIODevice::ReadOnly));
                QVERIFY2(QJsonDocument::fromJson(f.readAll()).isObject(), qPrintable(name));  // complete JSON
                continue;
            }
            QVERIFY2(name.endsWith(".png"), qPrintable(name));
            const int index = name.mid(4, 5).toInt();
            const auto img = dd::imaging::readImage(path);  // a partial PNG would not decode
            QVERIFY2(img.rgb == pattern(kSize, index).rgb, qPrintable(name));
            QCOMPARE(dd::settings::restoreFromFile(path).settings.seed, int64_t(index));
            QVERIFY2(visible.contains(name.chopped(4) + ".json"), qPrintable(name + " has no sidecar"));
        }
        const QStringList hidden = QDir(dir.path()).entryList(QDir::Files | QDir::Hidden);
        for (const QString& name : hidden)
            if (!visible.contains(name)) QVERIFY2(dd::queue::isTemporaryName(name.toStdString()), qPrintable(name));
        QCOMPARE(dd::queue::removeStaleTemporaries(dir.path().toStdString()), int(hidden.size() - visible.size()));
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden), visible);
    }
};

QTEST_GUILESS_MAIN(TestCrashSafety)
#include "test_crash_safety.moc"
