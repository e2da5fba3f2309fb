// The main window's model loading, previews, queue and restore, as a person uses them (offscreen, tiny fixture
// models from tests/parity/fixtures_*.py): a model loads on the worker with progress and can be cancelled, a broken
// file is named and the previous model stays; previews are computed only when shown, through TAESD when set in
// the preferences or found next to the model; Generate goes through the persisted queue, which survives a
// restart; restored settings find their model by hash, or say which model is needed.
#include "core/io/model_hash.h"
#include "latencyprobe.h"
#include "ui/apppreferences.h"
#include "ui/dialoghooks.h"
#include "ui/engineworker.h"
#include "ui/mainwindow.h"
#include "ui/modelpicker.h"
#include "ui/preferencesdialog.h"
#include "ui/promptpanel.h"
#include "ui/queueview.h"
#include "ui/runcontroller.h"

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScopeGuard>
#include <QSettings>
#include <QSpinBox>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTableWidget>
#include <QTemporaryDir>
#include "tests/ui/main_thread_spy.h"

#include "tests/ui/window_test.h"

#include <QtTest>

using dd::ui::EngineWorker;
using dd::ui::MainWindow;

namespace {

const QString kFixtures = QStringLiteral(DD_FIXTURES_DIR);
// A tiny SD 1.x folder whose text encoder has CLIP's whole vocabulary, so any prompt encodes.
const QString kTinySd1 = kFixtures + "/pipeline/tiny-sd1-e2e";
const QString kDemo = QStringLiteral("demo:tiny-sd1");

void setSmall(MainWindow& w, int steps) {
    w.findChild<QSpinBox*>("steps")->setValue(steps);
    w.findChild<QSpinBox*>("width")->setValue(64);
    w.findChild<QSpinBox*>("height")->setValue(64);
    w.findChild<QSpinBox*>("batchSize")->setValue(1);
    w.findChild<QSpinBox*>("batchCount")->setValue(1);
}

bool waitIdle(MainWindow& w, int ms = 120000) {
    QElapsedTimer t;
    t.start();
    while (w.isRunning() && t.elapsed() < ms) QTest::qWait(10);
    return !w.isRunning();
}

QString stateOf(const MainWindow& w, const QString& id) {
    for (const auto& j : w.jobs())
        if (j.id == id) return j.state;
    return {};
}

// Runs one generation and counts the engine's model loads ("loaded …" log lines) during it.
int loadsDuringARun(MainWindow& w) {
    MainThreadSpy log(w.worker(), &EngineWorker::logLine);
    setSmall(w, 2);
    const int before = int(w.runController()->session().size());
    QTest::mouseClick(w.findChild<QPushButton*>("generate"), Qt::LeftButton);
    if (!waitIdle(w) || int(w.runController()->session().size()) != before + 1) return -1;
    int loads = 0;
    for (const auto& args : log) loads += args.at(0).toString().startsWith("loaded ");
    return loads;
}

// Restores the settings of an A1111 parameters text, as dropping a .txt on the window does.
bool restoreFromParameters(MainWindow& w, const QTemporaryDir& dir, const QByteArray& parameters) {
    const QString txt = dir.filePath("params.txt");
    QFile f(txt);
    if (!f.open(QIODevice::WriteOnly) || f.write(parameters) != parameters.size()) return false;
    f.close();
    return w.restoreFromFile(txt);
}

} // namespace

class TestWorkflows : public QObject {
    Q_OBJECT

    QTemporaryDir m_config;

private slots:
    void initTestCase() {
        dd::test::isolateWindowTests(m_config, "test_workflows");
        QVERIFY2(QFileInfo::exists(kTinySd1), "fixtures missing: run tests/parity/make_fixtures.py build/fixtures");
    }
    void init() {
        QSettings().clear();
        QFile::remove(MainWindow::queueFile());
        // Finished images are saved: into the test's folder, never the user's Pictures.
        QSettings().setValue("saving/outputFolder", m_config.filePath("output"));
    }

    void loadsAModelWithProgress() {
        MainWindow w({});
        w.show();
        QTRY_COMPARE(w.modelPicker()->loadedModel(), kDemo);
        MainThreadSpy loading(w.worker(), &EngineWorker::modelLoading);
        MainThreadSpy loaded(w.worker(), &EngineWorker::modelLoaded);
        LatencyProbe probe;  // the window stays responsive while the worker loads
        probe.start();
        w.modelPicker()->choose(kTinySd1);
        QVERIFY(w.modelPicker()->loading());
        QVERIFY(loaded.wait(60000));
        probe.stop();
        qInfo("UI during the load: %d ticks, largest app stall %.1f ms, largest raw gap %.1f ms", probe.ticks(),
              probe.maxAppStallMs(), probe.maxGapMs());
        DD_VERIFY_UI_STALL(probe);
        QTRY_COMPARE(w.modelPicker()->loadedModel(), kTinySd1);
        QStringList parts;
        for (const auto& args : loading) {
            parts << args.at(1).toString();
            if (args.at(3).toInt() > 0) QVERIFY(args.at(2).toInt() <= args.at(3).toInt());
        }
        for (const char* part : {"unet", "vae", "text_encoder"}) QVERIFY2(parts.contains(part), qPrintable(parts.join(',')));
        QVERIFY(!w.findChild<QProgressBar*>("modelLoadProgress")->isVisible());
        QVERIFY(w.findChild<QLabel*>("modelDetails")->text().contains("loaded in"));
        QCOMPARE(w.modelPicker()->info().family, QString("SD 1.x"));
        QCOMPARE(loadsDuringARun(w), 0);  // Generate found the networks loaded
        QCOMPARE(w.runController()->session()[0].settings.model, kTinySd1.toStdString());
    }

    void cancellingALoadKeepsThePreviousModel() {
        MainWindow w({});
        w.show();
        QTRY_COMPARE(w.modelPicker()->loadedModel(), kDemo);
        // Cancel as the UNet starts loading (on the worker thread, like a click arriving then).
        auto* worker = w.worker();
        const auto hook = connect(worker, &EngineWorker::modelLoading, worker, [worker](const QString&, const QString& part) {
            if (part == "unet") worker->cancel();
        }, Qt::DirectConnection);
        MainThreadSpy failed(worker, &EngineWorker::modelFailed);
        w.modelPicker()->choose(kTinySd1);
        QVERIFY(failed.wait(60000));
        disconnect(hook);
        QVERIFY(failed.at(0).at(1).toString().contains("cancelled"));
        QVERIFY(!w.modelPicker()->loading());
        QCOMPARE(w.modelPicker()->currentModel(), kDemo);
        QCOMPARE(w.modelPicker()->loadedModel(), kDemo);
        QVERIFY(w.findChild<QLabel*>("modelDetails")->text().contains("Still using"));
        QCOMPARE(loadsDuringARun(w), 0);  // the demo was still loaded
    }

    void aBrokenModelIsNamedAndThePreviousStays() {
        MainWindow w({});
        QTRY_COMPARE(w.modelPicker()->loadedModel(), kDemo);
        QTemporaryDir dir;
        const QString broken = dir.filePath("broken.safetensors");
        QFile f(broken);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("this is not a safetensors file");
        f.close();
        MainThreadSpy failed(w.worker(), &EngineWorker::modelFailed);
        w.modelPicker()->choose(broken);
        QVERIFY(failed.wait(60000));
        QVERIFY2(failed.at(0).at(1).toString().contains(broken), qPrintable(failed.at(0).at(1).toString()));
        QVERIFY(w.findChild<QLabel*>("modelDetails")->text().contains("broken.safetensors"));
        QCOMPARE(w.modelPicker()->currentModel(), kDemo);
        QVERIFY(!w.modelPicker()->recentModels().contains(broken));
        QCOMPARE(loadsDuringARun(w), 0);
    }

    void previewsAreComputedOnlyWhenShown() {
        dd::ui::AppPreferences fixed = dd::ui::AppPreferences::load();
        // The two runs are compared bit for bit: one fixed count, not one that follows the load; one thread, as
        // the ThreadSanitizer run has (libgomp's team synchronises through futexes it cannot see).
        fixed.threads = 1;
        fixed.save();
        auto unpin = qScopeGuard([fixed]() mutable {
            fixed.threads = 0;
            fixed.save();
        });
        MainWindow w({});
        QTRY_VERIFY(!w.modelPicker()->loading());
        setSmall(w, 8);
        w.promptPanel()->setRandomSeed(false);
        w.findChild<QDoubleSpinBox*>("seed")->setValue(42);
        w.worker()->setPreviewBudget(1e-9);  // a budget nothing fits: only the first step previews
        MainThreadSpy progress(w.worker(), &EngineWorker::progress);
        QTest::mouseClick(w.findChild<QPushButton*>("generate"), Qt::LeftButton);
        QVERIFY(waitIdle(w));
        const auto stats = w.lastPreviewStats();
        QCOMPARE(stats.steps, 8);
        QCOMPARE(stats.computed, 1);
        QCOMPARE(stats.previews, 1);
        int shown = 0;
        for (const auto& args : progress) shown += !args.at(2).value<QImage>().isNull();
        QCOMPARE(shown, 1);
        const auto pixels = [&w](size_t i) {
            const auto& image = w.runController()->session()[i];
            return image.run->images[size_t(image.index)].rgb;
        };
        const auto sparse = pixels(0);
        // The same seed with every preview computed: the same picture.
        w.worker()->setPreviewBudget(1e9);
        w.findChild<QDoubleSpinBox*>("seed")->setValue(42);
        QTest::mouseClick(w.findChild<QPushButton*>("generate"), Qt::LeftButton);
        QVERIFY(waitIdle(w));
        QCOMPARE(w.lastPreviewStats().computed, 8);
        QCOMPARE(w.runController()->session()[0].settings.seed, w.runController()->session()[1].settings.seed);
        QVERIFY(pixels(1) == sparse);  // the second run's picture
    }

    // Preferences' CPU threads reach a run whose plan names none (its environment says how many ran), and
    // survive a restart; "Automatic" is 0 (the engine follows the load).
    void threadsFromThePreferences() {
        MainWindow w({});
        QTRY_VERIFY(!w.modelPicker()->loading());
        QCOMPARE(w.currentSettings().plan.threads, 0);
        dd::ui::setDialogHandler([](QDialog* d) {
            auto* threads = d->findChild<QSpinBox*>("threads");
            if (!threads || threads->value() != 0 || threads->text() != threads->specialValueText()) return int(QDialog::Rejected);
            threads->setValue(1);
            return int(QDialog::Accepted);
        });
        w.openPreferences();
        dd::ui::setDialogHandler([](QDialog*) { return int(QDialog::Rejected); });
        QCOMPARE(dd::ui::AppPreferences::load().threads, 1);
        QCOMPARE(w.currentSettings().plan.threads, 1);
        setSmall(w, 1);
        QTest::mouseClick(w.findChild<QPushButton*>("generate"), Qt::LeftButton);
        QVERIFY(waitIdle(w));
        QCOMPARE(w.runController()->session()[0].settings.plan.threads, 1);
        QCOMPARE(w.runController()->session()[0].run->environment.threads, 1);
        dd::ui::AppPreferences prefs = dd::ui::AppPreferences::load();
        prefs.threads = 0;
        prefs.save();
    }

    void taesdPreviewsFromThePreferences() {
        MainWindow w({});
        QTRY_VERIFY(!w.modelPicker()->loading());
        QTRY_COMPARE(w.previewSource(), QString("latent approximation"));
        const QString taesd = kFixtures + "/taesd/tiny";
        dd::ui::setDialogHandler([&](QDialog* d) {
            d->findChild<QCheckBox*>("taesdPreviews")->setChecked(true);
            d->findChild<QLineEdit*>("taesdFolder")->setText(taesd);
            return int(QDialog::Accepted);
        });
        w.openPreferences();
        dd::ui::setDialogHandler([](QDialog*) { return int(QDialog::Rejected); });
        QCOMPARE(dd::ui::AppPreferences::load().taesdFolder, taesd);
        QTRY_VERIFY(w.previewSource().contains("TAESD"));
        setSmall(w, 2);
        w.worker()->setPreviewBudget(1e9);
        MainThreadSpy progress(w.worker(), &EngineWorker::progress);
        QTest::mouseClick(w.findChild<QPushButton*>("generate"), Qt::LeftButton);
        QVERIFY(waitIdle(w));
        QCOMPARE(progress.count(), 2);
        // The demo's 64×64 makes 32×32 latents (its VAE downsamples 2×): the linear approximation stays at 32×32,
        // the tiny TAESD upsamples 4×.
        QCOMPARE(progress.at(1).at(2).value<QImage>().size(), QSize(128, 128));
        // Off again: the approximation.
        dd::ui::setDialogHandler([&](QDialog* d) {
            d->findChild<QCheckBox*>("taesdPreviews")->setChecked(false);
            return int(QDialog::Accepted);
        });
        w.openPreferences();
        dd::ui::setDialogHandler([](QDialog*) { return int(QDialog::Rejected); });
        QTRY_COMPARE(w.previewSource(), QString("latent approximation"));
        progress.clear();
        QTest::mouseClick(w.findChild<QPushButton*>("generate"), Qt::LeftButton);
        QVERIFY(waitIdle(w));
        QCOMPARE(progress.at(1).at(2).value<QImage>().size(), QSize(32, 32));
    }

    void taesdFoundNextToTheModel() {
        QTemporaryDir dir;
        QVERIFY(QFile::link(kTinySd1, dir.filePath("tiny-sd1")));  // a model folder with a taesd/ beside it
        QVERIFY(QFile::link(kFixtures + "/taesd/tiny", dir.filePath("taesd")));
        MainWindow w(dir.filePath("tiny-sd1"));
        QTRY_COMPARE_WITH_TIMEOUT(w.modelPicker()->loadedModel(), dir.filePath("tiny-sd1"), 60000);
        QTRY_COMPARE(w.previewSource(), QString("TAESD (%1)").arg(dir.filePath("taesd")));
    }

    // Generate enqueues; the app "dies" during the first job; at restart that job is interrupted and not re-run,
    // the others are still pending and wait for Run queue (a new Generate runs only its own job); Remove takes one
    // out, for good.
    void queueSurvivesARestart() {
        auto* first = new MainWindow({});
        QTRY_VERIFY(!first->modelPicker()->loading());
        setSmall(*first, 30);
        first->findChild<QSpinBox*>("batchCount")->setValue(3);
        MainThreadSpy progress(first->worker(), &EngineWorker::progress);
        QTest::mouseClick(first->findChild<QPushButton*>("generate"), Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(progress.count() >= 1, 60000);
        QTRY_COMPARE(first->jobs().size(), qsizetype(3));
        QTRY_COMPARE(stateOf(*first, "job-1"), QString("running"));
        delete first;  // no close, no cancel recorded: like a crash

        {
            MainWindow second({});
            QTRY_COMPARE_WITH_TIMEOUT(second.jobs().size(), qsizetype(3), 60000);  // the journal is read on its thread
            QCOMPARE(stateOf(second, "job-1"), QString("interrupted"));
            QCOMPARE(stateOf(second, "job-2"), QString("pending"));
            QCOMPARE(stateOf(second, "job-3"), QString("pending"));
            QCOMPARE(second.queueView()->count(), 3);
            QCOMPARE(second.queueView()->stateOf("job-1"), QString("interrupted"));
            QTest::qWait(300);
            QVERIFY(!second.isRunning());  // nothing runs by itself
            QCOMPARE(int(second.runController()->session().size()), 0);
            // A new Generate runs its own job; the leftovers still wait.
            setSmall(second, 2);
            QTest::mouseClick(second.findChild<QPushButton*>("generate"), Qt::LeftButton);
            QVERIFY(waitIdle(second));
            QTRY_COMPARE(stateOf(second, "job-4"), QString("done"));
            QCOMPARE(stateOf(second, "job-2"), QString("pending"));
            QCOMPARE(stateOf(second, "job-3"), QString("pending"));
            QCOMPARE(int(second.runController()->session().size()), 1);
            second.queueView()->select("job-3");
            QTest::mouseClick(second.findChild<QPushButton*>("removeJob"), Qt::LeftButton);
            QTRY_COMPARE(second.jobs().size(), qsizetype(3));
            QTest::mouseClick(second.findChild<QPushButton*>("runQueue"), Qt::LeftButton);
            QVERIFY(second.isRunning());
            QVERIFY(waitIdle(second));
            QTRY_COMPARE(stateOf(second, "job-2"), QString("done"));
            QCOMPARE(stateOf(second, "job-1"), QString("interrupted"));  // only Retry runs it again
            QCOMPARE(int(second.runController()->session().size()), 2);
            QCOMPARE(second.runController()->session()[1].settings.steps, 30);  // entries in the order they were made
        }
        MainWindow third({});
        QTRY_COMPARE_WITH_TIMEOUT(third.jobs().size(), qsizetype(3), 60000);
        QCOMPARE(stateOf(third, "job-1"), QString("interrupted"));
        QCOMPARE(stateOf(third, "job-2"), QString("done"));
    }

    void restoreFindsTheModelByHash() {
        QTemporaryDir models;
        const QString copy = models.filePath("renamed-checkpoint.safetensors");
        QVERIFY(QFile::copy(kFixtures + "/models/tiny-sd1.safetensors", copy));
        const QString hash = QString::fromStdString(dd::io::hashModelFile(copy.toStdString()).shortHash);
        dd::ui::AppPreferences prefs;
        prefs.modelFolders = {models.path()};
        prefs.save();
        MainWindow w({});
        QTRY_COMPARE(w.modelPicker()->loadedModel(), kDemo);
        QTemporaryDir dir;
        QVERIFY(restoreFromParameters(w, dir, QString("a cat\nSteps: 3, Sampler: Euler, CFG scale: 6, Seed: 77, Size: "
                                                      "64x64, Model hash: %1, Model: its-old-name\n").arg(hash).toUtf8()));
        QTRY_COMPARE_WITH_TIMEOUT(w.modelPicker()->loadedModel(), copy, 60000);
        QVERIFY(w.findChild<QLabel*>("restoreNotice")->text().contains(hash));
        QCOMPARE(w.currentSettings().model, copy.toStdString());
        QCOMPARE(w.currentSettings().seed, int64_t(77));
    }

    // A1111's "Refiner: name [hash]": the refiner field gets the file found by hash, the switch its value.
    void restoreFindsTheRefinerByHash() {
        QTemporaryDir models;
        const QString copy = models.filePath("renamed-refiner.safetensors");
        QVERIFY(QFile::copy(kFixtures + "/refiner/tiny-sdxl-refiner-e2e.safetensors", copy));
        const QString hash = QString::fromStdString(dd::io::hashModelFile(copy.toStdString()).shortHash);
        dd::ui::AppPreferences prefs;
        prefs.modelFolders = {models.path()};
        prefs.save();
        MainWindow w({});
        QTRY_COMPARE(w.modelPicker()->loadedModel(), kDemo);
        QTemporaryDir dir;
        QVERIFY(restoreFromParameters(w, dir, QString("a cat\nSteps: 3, Sampler: Euler, CFG scale: 6, Seed: 7, Size: 64x64, "
                                                      "Refiner: sd_xl_refiner_1.0 [%1], Refiner switch at: 0.7\n").arg(hash).toUtf8()));
        QTRY_COMPARE_WITH_TIMEOUT(w.currentSettings().refiner.model, copy.toStdString(), 60000);
        QCOMPARE(w.currentSettings().refiner.switchAt, 0.7);
    }

    void restoreSaysWhichModelIsNeeded() {
        QTemporaryDir models;
        dd::ui::AppPreferences prefs;
        prefs.modelFolders = {models.path()};
        prefs.save();
        MainWindow w({});
        QTRY_COMPARE(w.modelPicker()->loadedModel(), kDemo);
        QTemporaryDir dir;
        QVERIFY(restoreFromParameters(w, dir, "a dog\nSteps: 3, Sampler: Euler, CFG scale: 6, Seed: 5, Size: 64x64, "
                                              "Model hash: 0123456789, Model: missing-model\n"));
        auto* notice = w.findChild<QLabel*>("restoreNotice");
        QTRY_VERIFY_WITH_TIMEOUT(notice->text().contains("need model"), 60000);
        QVERIFY(notice->text().contains("missing-model"));
        QVERIFY(notice->text().contains("0123456789"));
        QVERIFY(notice->text().contains(models.path()));
        QCOMPARE(w.modelPicker()->currentModel(), kDemo);  // nothing else was chosen
    }
};

QTEST_MAIN(TestWorkflows)
#include "test_workflows.moc"
