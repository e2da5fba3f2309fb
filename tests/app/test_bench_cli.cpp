// Smoke test of `diffusiondesk-cli bench` on the built-in demo model, one step: the markdown table and the JSON
// carry every requested row with measured and predicted per-stage peaks; a row the CPU cannot apply (offload)
// says so. Times are printed, never checked.
#include <nlohmann/json.hpp>

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

class TestBenchCli : public QObject {
    Q_OBJECT
private slots:
    void demoModelOneStep() {
        QTemporaryDir dir;
        const QString json = dir.filePath("bench.json");
        QProcess cli;
        cli.start(QString(DD_BINARY_DIR) + "/bin/diffusiondesk-cli",
                  {"bench", "--model", "demo:tiny-sd1", "--steps", "1", "--size", "64x64", "--rows", "fp32,sliced,vae-tiling,fp8,offload-model",
                   "--json", json});
        QVERIFY(cli.waitForFinished(120000));
        const QString out = cli.readAllStandardOutput();
        QVERIFY2(cli.exitCode() == 0, qPrintable(out + cli.readAllStandardError()));
        QVERIFY(out.contains("| row | s/image | s/step |"));
        for (const char* row : {"| fp32 |", "| sliced |", "| vae-tiling |", "| fp8 |"}) QVERIFY2(out.contains(row), row);
        // Offload on the CPU: measured, and reported as not applied rather than passed off as offloading.
        QVERIFY2(out.contains("| offload-model (not applied: the engine ran offload none (nothing to offload to on the CPU)) |"),
                 qPrintable(out));

        std::ifstream in(json.toStdString());
        QVERIFY(in.good());
        const auto doc = nlohmann::json::parse(in);
        QCOMPARE(doc["rows"].size(), size_t(5));
        for (const auto& row : doc["rows"]) {
            if (row["row"] == "offload-model") continue;
            QVERIFY2(!row.contains("error"), row.dump().c_str());
            for (const char* stage : {"load", "encode", "denoise", "decode"}) {
                QVERIFY(row["peak_bytes"][stage].get<int64_t>() > 0);
                QVERIFY(row["predicted"][stage]["total"].get<int64_t>() > 0);
            }
            QCOMPARE(row["seconds"]["per_step_median"].is_number(), true);
            QCOMPARE(row["not_applied"].get<std::string>(), std::string());
        }
        QCOMPARE(doc["rows"][1]["plan"]["attention"].get<std::string>(), std::string("sliced"));
        QCOMPARE(doc["rows"][3]["plan"]["fp8_storage"].get<std::string>(), std::string("e4m3fn"));
        QVERIFY2(doc["rows"][3]["environment"]["precision"].get<std::string>().find("unet=bf16") != std::string::npos,
                 doc["rows"][3].dump().c_str());
    }

    void badRowIsOneLine() {
        QProcess cli;
        cli.start(QString(DD_BINARY_DIR) + "/bin/diffusiondesk-cli", {"bench", "--model", "demo:tiny-sd1", "--rows", "fp64"});
        QVERIFY(cli.waitForFinished(60000));
        QCOMPARE(cli.exitCode(), 1);
        const QString err = cli.readAllStandardError();
        QVERIFY2(err.contains("unknown bench row 'fp64'"), qPrintable(err));
    }
};

QTEST_GUILESS_MAIN(TestBenchCli)
#include "test_bench_cli.moc"
