// The persisted queue: every change survives a restart; the job that was running when the process died is
// interrupted, not re-run; a torn last line (kill during append) is skipped.
#include "core/queue/durable_file.h"
#include "core/queue/job_queue.h"

#include <QDir>
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

using namespace dd::queue;

class TestJobQueue : public QObject {
    Q_OBJECT
private slots:
    void survivesRestart() {
        QTemporaryDir dir;
        const std::string path = dir.filePath("queue.jsonl").toStdString();
        {
            JobQueue q(path);
            const auto a = q.enqueue("", {{"prompt", "a"}}, "a");
            const auto b = q.enqueue("", {{"prompt", "b"}}, "b");
            q.enqueue("c", {{"prompt", "c"}}, "c");
            QCOMPARE(a, std::string("job-1"));
            q.start(a);
            q.done(a, {"a.png"});
            q.start(b);  // the process "dies" here
        }
        JobQueue q(path);
        QCOMPARE(q.jobs().size(), std::size_t(3));
        QCOMPARE(q.find("job-1")->state, JobState::Done);
        QCOMPARE(q.find("job-1")->files, std::vector<std::string>{"a.png"});
        QCOMPARE(q.find("job-2")->state, JobState::Interrupted);  // not pending: never re-run by itself
        QCOMPARE(q.find("job-2")->interruptions, 1);
        QCOMPARE(q.next()->id, std::string("c"));
        QCOMPARE(q.find("c")->spec["prompt"], nlohmann::json("c"));
        q.retry("job-2");  // an explicit decision
        QCOMPARE(q.find("job-2")->state, JobState::Pending);
        q.fail("c", "bad settings");
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, q.enqueue("c", {}, "c"));
        JobQueue again(path);
        QCOMPARE(again.find("job-2")->state, JobState::Pending);
        QCOMPARE(again.find("c")->error, std::string("bad settings"));
        QCOMPARE(again.find("job-1")->state, JobState::Done);
    }

    // A cancelled job is neither failed nor picked again; Retry runs any finished job again, done ones too,
    // and clears the old error.
    void cancelAndRetry() {
        QTemporaryDir dir;
        const std::string path = dir.filePath("queue.jsonl").toStdString();
        {
            JobQueue q(path);
            q.enqueue("a", {}, "a");
            q.enqueue("b", {}, "b");
            q.enqueue("c", {}, "c");
            q.start("a");
            q.cancel("a");
            q.start("b");
            q.fail("b", "out of memory");
            q.start("c");
            q.done("c", {"c.png"});
        }
        JobQueue q(path);
        QCOMPARE(q.find("a")->state, JobState::Cancelled);
        QCOMPARE(std::string(jobStateName(q.find("a")->state)), std::string("cancelled"));
        QVERIFY(q.find("a")->error.empty());
        QVERIFY(!q.next());
        q.retry("b");
        QCOMPARE(q.find("b")->state, JobState::Pending);
        QVERIFY(q.find("b")->error.empty());
        q.retry("c");
        QCOMPARE(q.find("c")->state, JobState::Pending);
        q.start("a");
        q.retry("a");  // running: Retry means nothing until it ends
        QCOMPARE(q.find("a")->state, JobState::Running);
        JobQueue again(path);
        QVERIFY(again.find("b")->error.empty());
        QCOMPARE(again.find("c")->state, JobState::Pending);
    }

    void removedJobsStayRemoved() {
        QTemporaryDir dir;
        const std::string path = dir.filePath("queue.jsonl").toStdString();
        {
            JobQueue q(path);
            q.enqueue("a", {}, "a");
            q.enqueue("b", {}, "b");
            q.enqueue("c", {}, "c");
            q.start("a");
            QVERIFY_THROWS_EXCEPTION(std::invalid_argument, q.remove("a"));  // running: cancel first
            q.remove("b");
            QVERIFY(!q.find("b"));
            QCOMPARE(q.jobs().size(), std::size_t(2));
        }
        JobQueue q(path);
        QCOMPARE(q.jobs().size(), std::size_t(2));
        QVERIFY(!q.find("b"));
        QCOMPARE(q.find("a")->state, JobState::Interrupted);
        q.remove("a");  // an interrupted job can go
        QCOMPARE(q.next()->id, std::string("c"));
        q.enqueue("b", {}, "b");  // the id is free again
        QCOMPARE(JobQueue(path).jobs().size(), std::size_t(2));
    }

    void tornLastLineIsSkipped() {
        QTemporaryDir dir;
        const std::string path = dir.filePath("queue.jsonl").toStdString();
        {
            JobQueue q(path);
            q.enqueue("x", {}, "x");
        }
        std::ofstream(path, std::ios::app) << "{\"event\": \"start\", \"id\": \"x";  // kill -9 mid-append
        JobQueue q(path);
        QCOMPARE(q.warnings().size(), std::size_t(1));
        QCOMPARE(q.find("x")->state, JobState::Pending);
        q.start("x");  // appends after the torn line on a fresh line? It must still replay.
        JobQueue r(path);
        QCOMPARE(r.find("x")->state, JobState::Interrupted);
    }

    void badLinesAreNamed() {
        std::vector<Job> jobs;
        QVERIFY(!JobQueue::applyLine(jobs, "[1]").empty());
        QVERIFY(!JobQueue::applyLine(jobs, R"({"event": "done", "id": "nope"})").empty());
        QVERIFY(!JobQueue::applyLine(jobs, R"({"event": "enqueue"})").empty());
        QVERIFY(JobQueue::applyLine(jobs, R"({"event": "enqueue", "id": "a"})").empty());
        QVERIFY(!JobQueue::applyLine(jobs, R"({"event": "explode", "id": "a"})").empty());
    }

    void durableWritesNeverClobber() {
        QTemporaryDir dir;
        const std::string p = dir.filePath("a.txt").toStdString();
        writeFileDurably(p, "one");
        QVERIFY_THROWS_EXCEPTION(FileExistsError, writeFileDurably(p, "two"));
        writeFileDurably(p, "three", Replace::Allowed);
        std::ifstream in(p);
        std::string s;
        std::getline(in, s);
        QCOMPARE(s, std::string("three"));
        QVERIFY_THROWS_EXCEPTION(FileWriteError, writeFileDurably(dir.filePath("missing/a.txt").toStdString(), "x"));
        std::ofstream(dir.filePath(".a.png.123-0.ddtmp").toStdString()) << "partial";
        std::ofstream(dir.filePath(".b.png.123-0.ddtmp").toStdString()) << "partial";
        QCOMPARE(removeStaleTemporaries(dir.path().toStdString(), "a.png"), 1);
        QCOMPARE(removeStaleTemporaries(dir.path().toStdString()), 1);
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden), QStringList{"a.txt"});
    }
};

QTEST_GUILESS_MAIN(TestJobQueue)
#include "test_job_queue.moc"
