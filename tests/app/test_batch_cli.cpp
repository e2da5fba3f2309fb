// diffusiondesk-cli generate / batch as a user runs them, on the built-in demo model at 64x64, 2 steps:
// kill -9 during a batch and restart (every image exactly once), shards, --from byte-identical reruns.
#include "core/settings/restore.h"
#include "core/settings/sidecar.h"

#include <QDir>
#include <QElapsedTimer>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <thread>

namespace {

struct Run {
    int code;
    QString out, err;
};

QString cliPath() { return QString(DD_BINARY_DIR) + "/bin/diffusiondesk-cli"; }

Run cli(const QStringList& args, const QStringList& environment = {}) {
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    for (const QString& kv : environment) env.insert(kv.section('=', 0, 0), kv.section('=', 1));
    p.setProcessEnvironment(env);
    p.start(cliPath(), args);
    if (!p.waitForFinished(300000)) return {-1, {}, "timeout"};
    return {p.exitCode(), QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError())};
}

QByteArray readFile(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// Six jobs; line 3 is a comment, line 5 asks for two images.
QString writeJobs(const QDir& dir) {
    const QString path = dir.filePath("jobs.jsonl");
    QFile f(path);
    f.open(QIODevice::WriteOnly);
    for (int i = 1; i <= 7; ++i) {
        if (i == 3) { f.write("# a comment line keeps the numbering\n"); continue; }
        f.write(QString(R"({"model": "demo:tiny-sd1", "prompt": "job %1", "seed": %2, "steps": 2, "width": 64, "height": 64, "batch_size": %3, "deterministic": true})")
                    .arg(i).arg(100 + i).arg(i == 5 ? 2 : 1).toUtf8() + "\n");
    }
    return path;
}

QStringList expectedImages() {
    return {"00001-101.png", "00002-102.png", "00004-104.png", "00005-105-1.png", "00005-105-2.png", "00006-106.png", "00007-107.png"};
}

QStringList images(const QDir& dir) { return dir.entryList({"*.png"}, QDir::Files, QDir::Name); }

// True while the batch journal's last event is a job start, i.e. a job is being generated right now.
bool jobRunning(const QDir& out) {
    const QList<QByteArray> lines = readFile(out.filePath(".diffusiondesk-batch-jobs.jsonl")).trimmed().split('\n');
    return !lines.isEmpty() && lines.last().contains("\"event\":\"start\"") && lines.last().endsWith('}');
}

} // namespace

class TestBatchCli : public QObject {
    Q_OBJECT
private slots:
    void killedBatchCompletesWithEveryImageOnce() {
        QTemporaryDir tmp;
        QDir dir(tmp.path());
        dir.mkdir("out");
        const QString jobs = writeJobs(dir), out = dir.filePath("out");
        for (int kill = 0; kill < 2; ++kill) {  // killed twice, at different points
            QProcess p;
            p.start(cliPath(), {"batch", jobs, "--out", out});
            QVERIFY(p.waitForStarted());
            QElapsedTimer t;
            t.start();
            const int want = 1 + 2 * kill;
            // Kill mid-job (journal says "start"), not in the few ms between one job's "done" and the next "start".
            while ((images(QDir(out)).size() < want || !jobRunning(QDir(out))) && p.state() == QProcess::Running &&
                   t.elapsed() < 120000)
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            QVERIFY2(p.state() == QProcess::Running, "the batch finished before it could be killed");
            p.kill();  // SIGKILL
            p.waitForFinished();
        }
        QVERIFY(images(QDir(out)).size() < expectedImages().size());
        const Run r = cli({"batch", jobs, "--out", out});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QCOMPARE(images(QDir(out)), expectedImages());  // every image exactly once, nothing renamed "-2"
        QStringList visible = QDir(out).entryList(QDir::Files);
        QCOMPARE(visible.size(), 2 * expectedImages().size());  // + one sidecar each
        for (const QString& name : expectedImages()) {
            const auto restored = dd::settings::restoreFromFile(QDir(out).filePath(name).toStdString());
            QCOMPARE(restored.settings.steps, 2);
            QVERIFY(visible.contains(name.chopped(4) + ".json"));
        }
        // A rerun makes nothing and touches nothing.
        const QByteArray before = readFile(QDir(out).filePath("00001-101.png"));
        const Run again = cli({"batch", jobs, "--out", out});
        QVERIFY2(again.code == 0 && again.err.contains("0 made, 6 already done"), qPrintable(again.err));
        QCOMPARE(readFile(QDir(out).filePath("00001-101.png")), before);
        // The journal recorded every job as done.
        const QByteArray journal = readFile(QDir(out).filePath(".diffusiondesk-batch-jobs.jsonl"));
        QVERIFY(journal.count("\"interrupted\"") >= 1);
        for (int line : {1, 2, 4, 5, 6, 7}) QVERIFY(journal.contains(QString("\"id\":\"line-%1\"").arg(line).toUtf8()));
    }

    void shardsSplitByLine() {
        QTemporaryDir tmp;
        QDir dir(tmp.path());
        dir.mkdir("out");
        const QString jobs = writeJobs(dir), out = dir.filePath("out");
        const Run a = cli({"batch", jobs, "--out", out, "--shard", "0/2"});
        QVERIFY2(a.code == 0, qPrintable(a.err));
        QCOMPARE(images(QDir(out)), QStringList({"00001-101.png", "00005-105-1.png", "00005-105-2.png", "00007-107.png"}));
        const Run b = cli({"batch", jobs, "--out", out, "--shard", "1/2"});
        QVERIFY2(b.code == 0, qPrintable(b.err));
        QCOMPARE(images(QDir(out)), expectedImages());
        QVERIFY(cli({"batch", jobs, "--out", out, "--shard", "2/2"}).err.contains("I must be in 0..N-1"));
    }

    // A Slurm array (--array=1-2: tasks 1 and 2) and a Kubernetes Indexed Job name the shard without --shard.
    void shardComesFromTheScheduler() {
        QTemporaryDir tmp;
        QDir dir(tmp.path());
        dir.mkdir("out");
        const QString jobs = writeJobs(dir), out = dir.filePath("out");
        const QStringList slurm = {"SLURM_ARRAY_TASK_MIN=1", "SLURM_ARRAY_TASK_MAX=2", "SLURM_ARRAY_TASK_COUNT=2"};
        const Run a = cli({"batch", jobs, "--out", out}, slurm + QStringList{"SLURM_ARRAY_TASK_ID=1"});
        QVERIFY2(a.code == 0 && a.err.contains("shard 0/2 from the Slurm array task 1"), qPrintable(a.err));
        QCOMPARE(images(QDir(out)), QStringList({"00001-101.png", "00005-105-1.png", "00005-105-2.png", "00007-107.png"}));
        const Run k = cli({"batch", jobs, "--out", out, "--shards", "2"}, {"JOB_COMPLETION_INDEX=1"});
        QVERIFY2(k.code == 0 && k.err.contains("shard 1/2 from the Kubernetes Indexed Job index 1"), qPrintable(k.err));
        QCOMPARE(images(QDir(out)), expectedImages());
        // The same shard's journal either way: a resubmitted Slurm task finds the Kubernetes run's work done.
        const Run again = cli({"batch", jobs, "--out", out}, slurm + QStringList{"SLURM_ARRAY_TASK_ID=2"});
        QVERIFY2(again.code == 0 && again.err.contains("0 made, 3 already done"), qPrintable(again.err));
        QVERIFY(cli({"batch", jobs, "--out", out}, {"JOB_COMPLETION_INDEX=0"}).err.contains("--shards N"));
        QVERIFY(cli({"batch", jobs, "--out", out}, slurm + QStringList{"SLURM_ARRAY_TASK_ID=7"}).err.contains("give --shard I/N"));
        // One task resubmitted alone (sbatch --array=1: its own range is 1..1): --shards keeps it shard 1 of 2.
        const QStringList alone = {"SLURM_ARRAY_TASK_MIN=1", "SLURM_ARRAY_TASK_MAX=1", "SLURM_ARRAY_TASK_COUNT=1", "SLURM_ARRAY_TASK_ID=1"};
        const Run resubmitted = cli({"batch", jobs, "--out", out, "--shards", "2"}, alone);
        QVERIFY2(resubmitted.err.contains("shard 1/2 from the Slurm array task 1") && resubmitted.err.contains("3 already done"),
                 qPrintable(resubmitted.err));
        // --shard wins over the environment.
        const Run given = cli({"batch", jobs, "--out", out, "--shard", "0/1"}, slurm + QStringList{"SLURM_ARRAY_TASK_ID=2"});
        QVERIFY2(given.code == 0 && given.err.contains("shard 0/1: 0 made, 6 already done"), qPrintable(given.err));
    }

    void badJobLineIsNamedAndOthersRun() {
        QTemporaryDir tmp;
        QDir dir(tmp.path());
        QFile f(dir.filePath("jobs.jsonl"));
        f.open(QIODevice::WriteOnly);
        f.write(R"({"model": "demo:tiny-sd1", "prompt": "ok", "steps": 2, "width": 64, "height": 64})" "\n");
        f.write(R"({"model": "demo:tiny-sd1", "steps": "many"})" "\n");
        f.close();
        const Run r = cli({"batch", dir.filePath("jobs.jsonl"), "--out", dir.path()});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("jobs.jsonl:2: "), qPrintable(r.err));
        QCOMPARE(images(dir).size(), 1);
    }

    // A job line can inpaint: its init image and mask paths are used as written, and the result's sidecar
    // records both with their SHA-256.
    void jobLineInpaints() {
        QTemporaryDir tmp;
        QDir dir(tmp.path());
        auto write = [&](const QString& name, const QByteArray& header, const QByteArray& pixels) {
            QFile f(dir.filePath(name));
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(header + pixels);
        };
        write("wall.ppm", "P6\n64 64\n255\n", QByteArray(64 * 64 * 3, char(100)));
        write("door.pgm", "P5\n64 64\n255\n", QByteArray(64 * 32, char(255)) + QByteArray(64 * 32, char(0)));
        QFile f(dir.filePath("jobs.jsonl"));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QString(R"({"model": "demo:tiny-sd1", "prompt": "a door", "steps": 2, "width": 64, "height": 64, )"
                        R"("init_image": "%1", "strength": 0.8, "inpaint": {"mask": "%2", "mask_blur": 0}})" "\n")
                    .arg(dir.filePath("wall.ppm"), dir.filePath("door.pgm")).toUtf8());
        f.close();
        const QString out = dir.filePath("out");
        QVERIFY(dir.mkdir("out"));
        const Run r = cli({"batch", dir.filePath("jobs.jsonl"), "--out", out});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QStringList made = QDir(out).entryList({"*.json"}, QDir::Files);
        QCOMPARE(made.size(), 1);
        QFile sidecar(QDir(out).filePath(made.first()));
        QVERIFY(sidecar.open(QIODevice::ReadOnly));
        const auto sc = dd::settings::readSidecar(sidecar.readAll().toStdString());
        QCOMPARE(sc.settings.inpaint.maskHash.size(), size_t(64));
        QCOMPARE(sc.settings.initImageHash.size(), size_t(64));
        QVERIFY2(QString::fromStdString(sc.settings.inpaint.mask).endsWith(".mask.pgm"), sc.settings.inpaint.mask.c_str());  // kept beside
        QVERIFY(QFile::exists(QDir(out).filePath(QString::fromStdString(sc.settings.inpaint.mask))));
    }

    // Determinism mode: nothing time-dependent in the PNG, so --from gives the same bytes.
    void fromReproducesBytes() {
        QTemporaryDir tmp;
        QDir dir(tmp.path());
        dir.mkdir("a");
        dir.mkdir("b");
        dir.mkdir("c");
        const Run first = cli({"generate", "--model", "demo:tiny-sd1", "--prompt", "a red apple, studio light", "--seed", "7",
                               "--steps", "2", "--size", "64x64", "--deterministic", "--price-per-hour", "3.6",
                               "--out", dir.filePath("a"), "--name", "{seed}-{prompt:2}"});
        QVERIFY2(first.code == 0, qPrintable(first.err));
        const QString original = dir.filePath("a/7-a_red.png");
        QVERIFY2(QFile::exists(original), qPrintable(first.out));
        const auto sc = dd::settings::readSidecar(readFile(dir.filePath("a/7-a_red.json")).toStdString());
        QCOMPARE(sc.cost.pricePerHour, 3.6);
        QVERIFY(sc.cost.secondsPerImage > 0);
        QVERIFY(!sc.createdAt.empty());
        QCOMPARE(sc.appVersion, std::string(DD_VERSION_FOR_TESTS));

        const Run fromPng = cli({"generate", "--from", original, "--out", dir.filePath("b"), "--name", "{seed}-{prompt:2}"});
        QVERIFY2(fromPng.code == 0, qPrintable(fromPng.err));
        QCOMPARE(readFile(dir.filePath("b/7-a_red.png")), readFile(original));
        const Run fromSidecar = cli({"generate", "--from", dir.filePath("a/7-a_red.json"), "--out", dir.filePath("c"), "--name", "{seed}-{prompt:2}"});
        QVERIFY2(fromSidecar.code == 0, qPrintable(fromSidecar.err));
        QCOMPARE(readFile(dir.filePath("c/7-a_red.png")), readFile(original));
        // Flags after --from override; the same name is never overwritten.
        const Run over = cli({"generate", "--from", original, "--seed", "8", "--out", dir.filePath("b"), "--name", "{seed}-{prompt:2}"});
        QVERIFY2(over.code == 0 && QFile::exists(dir.filePath("b/8-a_red.png")), qPrintable(over.err));
        const Run clash = cli({"generate", "--from", original, "--out", dir.filePath("b/7-a_red.png")});
        QVERIFY(clash.code != 0 && clash.err.contains("already exists"));
    }

    void formatsAndDefaultNames() {
        QTemporaryDir tmp;
        for (const char* format : {"jpeg", "webp"}) {
            const Run r = cli({"generate", "--model", "demo:tiny-sd1", "--prompt", "a cat", "--steps", "2", "--size", "64x64",
                               "--format", format, "--out", tmp.path()});
            QVERIFY2(r.code == 0, qPrintable(r.err));
            const QString image = r.out.trimmed();
            QVERIFY2(QFileInfo(image).fileName().contains(QRegularExpression("^\\d{4}-\\d\\d-\\d\\d-\\d{5}-0-a_cat\\.(jpg|webp)$")), qPrintable(image));
            const auto restored = dd::settings::restoreFromFile(image.toStdString());
            QCOMPARE(restored.settings.prompt, std::string("a cat"));
            QCOMPARE(restored.modelName, std::string("demo:tiny-sd1"));
        }
    }
};

QTEST_GUILESS_MAIN(TestBatchCli)
#include "test_batch_cli.moc"
