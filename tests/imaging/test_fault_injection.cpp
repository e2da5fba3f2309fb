// Fault injection: disk full, permission denied and a vanished folder at each step of a durable
// write, through the exporter and the queue journal. Each must give a message naming the file and the cause,
// leave no partial or temporary file, keep an existing file intact and keep the queue readable.
#include "core/queue/durable_file.h"
#include "core/queue/job_queue.h"
#include "imaging/export.h"

#include <QTemporaryDir>
#include <QtTest>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using dd::queue::FaultPoint;

namespace {

struct FaultGuard {  // clears every injected fault when a check fails half-way
    ~FaultGuard() {
        for (auto p : {FaultPoint::Create, FaultPoint::Write, FaultPoint::Sync, FaultPoint::Publish}) dd::queue::injectFault(p, 0);
    }
};

std::vector<std::string> entries(const fs::path& dir) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

dd::api::Image gradient() {
    dd::api::Image img{16, 16, std::vector<uint8_t>(16 * 16 * 3)};
    for (size_t i = 0; i < img.rgb.size(); ++i) img.rgb[i] = uint8_t(i * 7);
    return img;
}

} // namespace

class TestFaultInjection : public QObject {
    Q_OBJECT
private slots:
    void durableWriteFailsCleanlyAtEveryPoint_data() {
        QTest::addColumn<int>("point");
        QTest::addColumn<int>("error");
        QTest::newRow("create: permission denied") << int(FaultPoint::Create) << EACCES;
        QTest::newRow("create: folder vanished") << int(FaultPoint::Create) << ENOENT;
        QTest::newRow("write: disk full") << int(FaultPoint::Write) << ENOSPC;
        QTest::newRow("sync: I/O error") << int(FaultPoint::Sync) << EIO;
        QTest::newRow("publish: disk full") << int(FaultPoint::Publish) << ENOSPC;
    }
    void durableWriteFailsCleanlyAtEveryPoint() {
        QFETCH(int, point);
        QFETCH(int, error);
        FaultGuard guard;
        QTemporaryDir dir;
        const fs::path existing = fs::path(dir.path().toStdString()) / "kept.json";
        dd::queue::writeFileDurably(existing.string(), "old contents");
        const auto before = entries(dir.path().toStdString());

        dd::queue::injectFault(FaultPoint(point), error);
        for (auto replace : {dd::queue::Replace::Never, dd::queue::Replace::Allowed}) {
            const fs::path target = replace == dd::queue::Replace::Never ? existing.parent_path() / "new.png" : existing;
            try {
                dd::queue::writeFileDurably(target.string(), std::string(4096, 'x'), replace);
                QFAIL("the injected fault did not surface");
            } catch (const dd::queue::FileWriteError& e) {
                const QString message = e.what();
                QVERIFY2(message.contains(QString::fromStdString(target.string())), qPrintable(message));
                QVERIFY2(message.contains(std::strerror(error)), qPrintable(message));
            }
        }
        QCOMPARE(entries(dir.path().toStdString()), before);  // no partial file, no temporary left behind
        QCOMPARE(slurp(existing), std::string("old contents"));

        dd::queue::injectFault(FaultPoint(point), 0);  // the same write succeeds once the disk is back
        dd::queue::writeFileDurably(existing.string(), "new contents", dd::queue::Replace::Allowed);
        QCOMPARE(slurp(existing), std::string("new contents"));
    }

    void exportOnFullDiskLeavesNoImage() {
        FaultGuard guard;
        QTemporaryDir dir;
        const std::string path = dir.path().toStdString() + "/00001-42.png";
        dd::settings::Sidecar sc;
        sc.settings.prompt = "a red circle";
        sc.settings.seed = 42;
        dd::queue::injectFault(FaultPoint::Write, ENOSPC);
        QVERIFY_THROWS_EXCEPTION(dd::queue::FileWriteError,
                                 dd::imaging::exportImageAs(path, dd::imaging::ExportFormat::Png, 95, gradient(), sc, "m", true));
        QVERIFY(!fs::exists(path));
        for (const auto& name : entries(dir.path().toStdString())) QVERIFY2(name.find(".ddtmp") == std::string::npos, name.c_str());
        dd::queue::injectFault(FaultPoint::Write, 0);
        const auto out = dd::imaging::exportImageAs(path, dd::imaging::ExportFormat::Png, 95, gradient(), sc, "m", true);
        QVERIFY(fs::exists(out.image) && fs::exists(out.sidecar));
    }

    void queueSurvivesAFullDisk() {
        FaultGuard guard;
        QTemporaryDir dir;
        const std::string journal = dir.path().toStdString() + "/queue.jsonl";
        {
            dd::queue::JobQueue q(journal);
            q.enqueue("a", {{"prompt", "one"}}, "a");
            q.enqueue("b", {{"prompt", "two"}}, "b");
            dd::queue::injectFault(FaultPoint::Write, ENOSPC);  // half a line reaches the disk, then it is full
            QVERIFY_THROWS_EXCEPTION(dd::queue::FileWriteError, q.enqueue("c", {{"prompt", "three"}}, "c"));
            QVERIFY_THROWS_EXCEPTION(dd::queue::FileWriteError, q.start("a"));
            QCOMPARE(int(q.jobs().size()), 2);  // memory follows the journal: the failed events did not happen
            QCOMPARE(int(q.find("a")->state), int(dd::queue::JobState::Pending));
            dd::queue::injectFault(FaultPoint::Write, 0);
            q.enqueue("d", {{"prompt", "four"}}, "d");  // appended after the cut-off torn line, so it survives
        }
        dd::queue::JobQueue reopened(journal);
        QVERIFY2(reopened.warnings().empty(), reopened.warnings().empty() ? "" : reopened.warnings()[0].c_str());
        QCOMPARE(int(reopened.jobs().size()), 3);
        QVERIFY(reopened.find("a") && reopened.find("b") && reopened.find("d") && !reopened.find("c"));
    }
};

QTEST_GUILESS_MAIN(TestFaultInjection)
#include "test_fault_injection.moc"
