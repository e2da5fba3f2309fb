// The window's run logic without a window, a worker or a thread: RunController fed with snapshots of the queue
// and with the engine's answers, as MainWindow feeds it. What it asks for (a job's launch, a journal event, a
// save) is read from its signals.
#include "ui/runcontroller.h"

#include <nlohmann/json.hpp>

#include <QSignalSpy>
#include <QtTest>

using namespace dd;
using ui::JobRow;
using ui::RunController;

namespace {

api::GenerationSettings settingsWithSeed(int64_t seed) {
    api::GenerationSettings s;
    s.prompt = "a red cube";
    s.seed = seed;
    return s;
}

JobRow job(const QString& id, const QString& state, int64_t seed) {
    return JobRow{id, state, QString::fromStdString(nlohmann::json(settingsWithSeed(seed)).dump()), {}, 0};
}

api::GenerationResult resultOf(const api::GenerationSettings& s) {
    api::GenerationResult r;
    r.settings = s;
    r.images.resize(1);
    return r;
}

int64_t seedOf(const QSignalSpy& spy, int i) { return spy.at(i).at(0).value<api::GenerationSettings>().seed; }

} // namespace

class TestRunController : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        qRegisterMetaType<api::GenerationResult>();
        qRegisterMetaType<api::GenerationSettings>();
        qRegisterMetaType<ui::VerifyOutcome>();
    }

    // Leftovers of the last session wait; a Generate runs only its own jobs, one at a time, each once however
    // many snapshots arrive; each result is shown, then kept, and its job is done when the files are on disk.
    void leftoversWaitAndJobsRunOneAtATime() {
        RunController run;
        QSignalSpy launched(&run, &RunController::generateRequested);
        QSignalSpy started(&run, &RunController::jobStarted);
        QSignalSpy leftovers(&run, &RunController::leftoversFound);
        QSignalSpy enqueued(&run, &RunController::enqueueRequested);
        QSignalSpy saves(&run, &RunController::saveRequested);
        QSignalSpy done(&run, &RunController::jobDone);
        QSignalSpy finished(&run, &RunController::finished);
        QSignalSpy shown(&run, &RunController::resultReady);

        run.onJobsChanged({job("job-1", "pending", 1)});
        QCOMPARE(leftovers.count(), 1);
        QCOMPARE(launched.count(), 0);
        QVERIFY(!run.busy());

        run.generate(settingsWithSeed(10), 2);
        QCOMPARE(enqueued.count(), 2);
        const auto second = nlohmann::json::parse(enqueued.at(1).at(0).toString().toStdString()).get<api::GenerationSettings>();
        QCOMPARE(second.seed, int64_t(11));  // seed + i · batch size (1)
        QVERIFY(run.busy());
        QVERIFY(!run.running());
        const QList<JobRow> snapshot{job("job-1", "pending", 1), job("job-2", "pending", 10), job("job-3", "pending", 11)};
        run.onJobsChanged(snapshot);
        QCOMPARE(launched.count(), 1);
        QCOMPARE(seedOf(launched, 0), int64_t(10));
        QCOMPARE(started.at(0).at(0).toString(), QString("job-2"));
        QCOMPARE(run.currentJob(), QString("job-2"));
        QCOMPARE(run.queuedCount(), 2);   // job-1 (a leftover) and job-3
        QCOMPARE(run.waitingCount(), 1);  // what a quit would leave: job-3
        run.onEnqueued();
        run.onEnqueued();
        run.onJobsChanged(snapshot);      // a stale snapshot: nothing launched twice
        QCOMPARE(launched.count(), 1);

        run.onFinished(resultOf(settingsWithSeed(10)));
        QCOMPARE(shown.count(), 1);
        QCOMPARE(shown.at(0).at(1).toString(), QString("job-2"));
        QCOMPARE(saves.count(), 1);
        QCOMPARE(saves.at(0).at(0).toString(), QString("job-2"));
        QCOMPARE(done.count(), 0);  // not before its files are on disk
        run.onSaved("job-2", {"/out/a.png", "/out/a.json"});
        QCOMPARE(done.count(), 1);
        QCOMPARE(done.at(0).at(1).toStringList().size(), 2);
        QCOMPARE(launched.count(), 2);
        QCOMPARE(seedOf(launched, 1), int64_t(11));

        run.onFinished(resultOf(settingsWithSeed(11)));
        run.onJobsChanged({job("job-1", "pending", 1), job("job-2", "done", 10), job("job-3", "done", 11)});
        QCOMPARE(launched.count(), 2);  // job-1 still waits
        QVERIFY(!run.busy());
        QCOMPARE(run.session().size(), size_t(2));  // this session's images, in the order they were made
        QCOMPARE(run.session()[1].settings.seed, int64_t(11));
        QCOMPARE(finished.count(), 1);

        run.runQueue();  // now the leftover runs
        QCOMPARE(launched.count(), 3);
        QCOMPARE(seedOf(launched, 2), int64_t(1));
    }

    // A cancel stops the queue: the job is cancelled (not failed) and the next one does not start. A failure is
    // the job's alone: the next one runs. Retry runs a finished job again.
    void cancelFailureAndRetry() {
        RunController run;
        QSignalSpy launched(&run, &RunController::generateRequested);
        QSignalSpy cancelled(&run, &RunController::jobCancelled);
        QSignalSpy failed(&run, &RunController::jobFailed);
        QSignalSpy cancelAsked(&run, &RunController::cancelRequested);
        QSignalSpy retried(&run, &RunController::retryRequested);
        run.onJobsChanged({});
        run.generate(settingsWithSeed(1), 3);
        // As the queue's thread answers: the snapshot with the jobs, then "enqueued" for each.
        run.onJobsChanged({job("a", "pending", 1), job("b", "pending", 2), job("c", "pending", 3)});
        for (int i = 0; i < 3; ++i) run.onEnqueued();
        QCOMPARE(launched.count(), 1);
        run.onFailed("CFG scale must be positive");
        QCOMPARE(failed.count(), 1);
        QCOMPARE(failed.at(0).at(0).toString(), QString("a"));
        QCOMPARE(launched.count(), 2);  // b runs
        run.cancel();
        QCOMPARE(cancelAsked.count(), 1);
        QVERIFY(run.running());  // until the engine stops at its next step
        run.onFailed("cancelled");
        QCOMPARE(cancelled.count(), 1);
        QCOMPARE(cancelled.at(0).at(0).toString(), QString("b"));
        QCOMPARE(failed.count(), 1);
        QCOMPARE(launched.count(), 2);  // c waits
        QVERIFY(!run.busy());

        run.retry("a");
        QCOMPARE(retried.count(), 1);
        run.onJobsChanged({job("a", "pending", 1), job("b", "cancelled", 2), job("c", "pending", 3)});
        QCOMPARE(launched.count(), 3);
        QCOMPARE(seedOf(launched, 2), int64_t(1));
    }

    // No job launches while the gate is closed (a model loads); autosave off: a job is done at once, no save.
    void theGateHoldsJobsAndAutosaveOffFinishesAtOnce() {
        RunController run;
        bool loading = true;
        run.setLaunchGate([&loading] { return loading; });
        run.setAutosave(false);
        QSignalSpy launched(&run, &RunController::generateRequested);
        QSignalSpy saves(&run, &RunController::saveRequested);
        QSignalSpy done(&run, &RunController::jobDone);
        run.onJobsChanged({});
        run.generate(settingsWithSeed(5), 1);
        run.onJobsChanged({job("x", "pending", 5)});
        run.onEnqueued();
        QCOMPARE(launched.count(), 0);
        loading = false;
        run.resume();
        QCOMPARE(launched.count(), 1);
        run.onFinished(resultOf(settingsWithSeed(5)));
        QCOMPARE(saves.count(), 0);
        QCOMPARE(done.count(), 1);
        QVERIFY(done.at(0).at(1).toStringList().isEmpty());
    }

    // Verify holds the worker: a Generate meanwhile waits for its verdict, then runs.
    void verifyHoldsTheQueue() {
        RunController run;
        QSignalSpy launched(&run, &RunController::generateRequested);
        QSignalSpy verifyAsked(&run, &RunController::verifyRequested);
        QSignalSpy verified(&run, &RunController::verified);
        QSignalSpy finished(&run, &RunController::finished);
        run.onJobsChanged({});
        QVERIFY(run.verify("/out/a.png", {"/models"}));
        QCOMPARE(verifyAsked.count(), 1);
        QVERIFY(run.verifying());
        QVERIFY(!run.verify("/out/b.png", {}));  // one at a time
        run.generate(settingsWithSeed(9), 1);
        run.onJobsChanged({job("g", "pending", 9)});
        run.onEnqueued();
        QCOMPARE(launched.count(), 0);
        ui::VerifyOutcome outcome;
        outcome.file = "/out/a.png";
        outcome.identical = true;
        run.onVerified(outcome);
        QCOMPARE(verified.count(), 1);
        QVERIFY(!run.verifying());
        QCOMPARE(finished.count(), 1);
        QCOMPARE(launched.count(), 1);
    }

    // An A/B pair runs A then B through the controller and ends as one comparison.
    void anAbPairRunsThroughTheController() {
        RunController run;
        QSignalSpy launched(&run, &RunController::generateRequested);
        QSignalSpy pairs(&run, &RunController::abFinished);
        QSignalSpy finished(&run, &RunController::finished);
        run.onJobsChanged({});
        run.startAb(compare::abSeeds(settingsWithSeed(42), 43));
        QCOMPARE(launched.count(), 1);
        QCOMPARE(run.runCount(), 2);
        QCOMPARE(run.runIndex(), 1);
        run.onFinished(resultOf(launched.at(0).at(0).value<api::GenerationSettings>()));
        QCOMPARE(launched.count(), 2);
        QCOMPARE(seedOf(launched, 1), int64_t(43));
        QVERIFY(run.running());
        QCOMPARE(finished.count(), 0);
        run.onFinished(resultOf(launched.at(1).at(0).value<api::GenerationSettings>()));
        QCOMPARE(pairs.count(), 1);
        QCOMPARE(finished.count(), 1);
        QVERIFY(!run.busy());
    }

    void abRunnerRunsAThenB() {
        api::GenerationSettings base;
        base.seed = 42;
        ui::ABRunner runner;
        QSignalSpy generate(&runner, &ui::ABRunner::generate);
        QSignalSpy finished(&runner, &ui::ABRunner::finished);
        runner.start(compare::abSeeds(base, 43));
        QCOMPARE(runner.current(), 'A');
        QCOMPARE(generate.count(), 1);
        QCOMPARE(generate[0][0].value<api::GenerationSettings>().seed, int64_t(42));

        api::GenerationResult other;
        other.settings.seed = 7;
        runner.onFinished(other);  // another run of the window: ignored
        QCOMPARE(runner.current(), 'A');

        api::GenerationResult ra;
        ra.settings = runner.pair().a;
        runner.onFinished(ra);
        QCOMPARE(runner.current(), 'B');
        QCOMPARE(generate.count(), 2);
        QCOMPARE(generate[1][0].value<api::GenerationSettings>().seed, int64_t(43));

        api::GenerationResult rb;
        rb.settings = runner.pair().b;
        runner.onFinished(rb);
        QVERIFY(!runner.running());
        QCOMPARE(finished.count(), 1);
        QCOMPARE(finished[0][0].value<api::GenerationResult>().settings.seed, int64_t(42));
        QCOMPARE(finished[0][1].value<api::GenerationResult>().settings.seed, int64_t(43));
        QCOMPARE(finished[0][2].toString(), QString("seed 42 vs 43"));

        QSignalSpy failed(&runner, &ui::ABRunner::failed);
        runner.start(compare::abSeeds(base, 44));
        runner.onFailed("out of memory");
        QCOMPARE(failed.count(), 1);
        QVERIFY(failed[0][0].toString().contains("A/B run A failed: out of memory"));
        QVERIFY(!runner.running());
    }

    // Live mode: a run at once outside the queue; edits while it runs cancel it and only the newest settings run
    // next (the stale result is not shown); nothing is saved until Keep, which saves the shown result once.
    void liveFollowsTheNewestSettingsAndSavesOnlyWhenKept() {
        RunController run;
        QSignalSpy launched(&run, &RunController::generateRequested);
        QSignalSpy cancels(&run, &RunController::cancelRequested);
        QSignalSpy enqueued(&run, &RunController::enqueueRequested);
        QSignalSpy shown(&run, &RunController::resultReady);
        QSignalSpy saves(&run, &RunController::saveRequested);
        QSignalSpy failures(&run, &RunController::runFailed);
        QSignalSpy done(&run, &RunController::jobDone);
        run.onJobsChanged({});

        run.live(settingsWithSeed(1));
        QCOMPARE(launched.count(), 1);
        QCOMPARE(enqueued.count(), 0);
        QVERIFY(run.liveRunning());
        run.live(settingsWithSeed(2));
        run.live(settingsWithSeed(3));
        QCOMPARE(cancels.count(), 2);
        QCOMPARE(launched.count(), 1);  // one run at a time

        run.onFailed("cancelled");  // the engine stopped the stale run at its next step
        QCOMPARE(failures.count(), 0);
        QCOMPARE(launched.count(), 2);
        QCOMPARE(seedOf(launched, 1), int64_t(3));  // seed 2 was superseded before it ran

        run.live(settingsWithSeed(4));
        run.onFinished(resultOf(settingsWithSeed(3)));  // finished before the cancel took effect: stale
        QCOMPARE(shown.count(), 0);
        QCOMPARE(seedOf(launched, 2), int64_t(4));
        run.onFinished(resultOf(settingsWithSeed(4)));
        QCOMPARE(shown.count(), 1);
        QCOMPARE(shown.at(0).at(1).toString(), ui::kLiveJob);
        QCOMPARE(saves.count(), 0);
        QVERIFY(!run.running());
        QVERIFY(run.session().empty());

        QVERIFY(run.canKeepLive());
        QVERIFY(run.keepLive());
        QCOMPARE(saves.count(), 1);
        QCOMPARE(saves.at(0).at(0).toString(), ui::kLiveJob);
        QCOMPARE(saves.at(0).at(1).value<api::GenerationResult>().settings.seed, int64_t(4));
        QCOMPARE(run.session().size(), std::size_t(1));
        QVERIFY(!run.keepLive());  // once
        run.onSaved(ui::kLiveJob, {"/tmp/kept.png"});
        QCOMPARE(done.count(), 0);  // not a queue job

        // A Generate while a live run is under way waits for it; the live settings typed meanwhile run after it.
        run.live(settingsWithSeed(5));
        run.generate(settingsWithSeed(100), 1);
        run.onEnqueued();
        run.onJobsChanged({job("job-1", "pending", 100)});
        QCOMPARE(launched.count(), 4);
        run.live(settingsWithSeed(6));
        run.onFinished(resultOf(settingsWithSeed(5)));  // stale: seed 6 waits
        QCOMPARE(seedOf(launched, 4), int64_t(100));     // the queue first
        QCOMPARE(run.currentJob(), QString("job-1"));
        run.onFinished(resultOf(settingsWithSeed(100)));
        run.onJobsChanged({job("job-1", "done", 100)});
        QCOMPARE(seedOf(launched, 5), int64_t(6));
        run.stopLive();
        QCOMPARE(cancels.count(), 5);  // seeds 2, 3, 4 and 6 each cancelled a run, and the stop
        run.onFailed("cancelled");
        QCOMPARE(failures.count(), 0);
        QVERIFY(!run.running());
        QCOMPARE(launched.count(), 6);

        // A live run that fails on its own says so.
        run.live(settingsWithSeed(7));
        run.onFailed("out of memory");
        QCOMPARE(failures.count(), 1);
    }
};

QTEST_GUILESS_MAIN(TestRunController)
#include "test_runcontroller.moc"
