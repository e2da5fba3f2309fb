// diffusiondesk-cli as a user runs it: a report on good input, one clear line and a non-zero exit on bad.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

class TestCli : public QObject {
    Q_OBJECT

    struct Run {
        int code;
        QString out, err;
    };
    static Run cli(const QStringList& args) {
        QProcess p;
        p.start(QString(DD_BINARY_DIR) + "/bin/diffusiondesk-cli", args);
        if (!p.waitForFinished(120000)) return {-1, {}, "timeout"};
        return {p.exitCode(), QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError())};
    }

private slots:
    void inspectsSingleFile() {
        const QString model = QString(DD_FIXTURES_DIR) + "/models/tiny-sdxl.safetensors";
        const Run r = cli({"inspect", model});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY(r.out.contains("family:     SDXL"));
        QVERIFY(r.out.contains("format:     single file"));
        QVERIFY(r.out.contains("component:  text_encoder_2"));
        QVERIFY(r.out.contains(QRegularExpression("hash:       [0-9a-f]{10}  \\(A1111")));
        QVERIFY(r.out.contains(QRegularExpression("parameters: [0-9,]+")));
    }

    void inspectsDiffusersFolder() {
        const Run r = cli({"inspect", QString(DD_FIXTURES_DIR) + "/models/tiny-sd2"});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY(r.out.contains("family:     SD 2.x"));
        QVERIFY(r.out.contains(QRegularExpression("component:  unet  [0-9,]+ parameters in [0-9]+ tensors \\(Float")));
    }

    void badInputIsOneClearLine_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("expected");
        QTest::newRow("missing file") << QStringList{"inspect", "/nonexistent/model.safetensors"} << "no such file or folder";
        QTest::newRow("unknown command") << QStringList{"frobnicate"} << "unknown command 'frobnicate'";
        QTest::newRow("missing argument") << QStringList{"inspect"} << "inspect takes exactly one PATH";
    }
    void badInputIsOneClearLine() {
        QFETCH(QStringList, args);
        QFETCH(QString, expected);
        const Run r = cli(args);
        QVERIFY(r.code != 0);
        const QString first = r.err.section('\n', 0, 0);
        QVERIFY2(first.startsWith("error: ") && first.contains(expected), qPrintable(r.err));
    }

    void truncatedFileNamesTheProblem() {
        QTemporaryDir dir;
        const QString path = dir.filePath("cut.safetensors");
        QFile::copy(QString(DD_FIXTURES_DIR) + "/models/tiny-sd1.safetensors", path);
        QFile f(path);
        QVERIFY(f.open(QIODevice::ReadWrite));
        QVERIFY(f.resize(f.size() / 2));
        f.close();
        const Run r = cli({"inspect", path});
        QVERIFY(r.code != 0);
        QVERIFY2(r.err.startsWith("error: " + path + ": truncated: tensor '"), qPrintable(r.err));
        QCOMPARE(r.err.count('\n'), 1);
    }
};

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"
