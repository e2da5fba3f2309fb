// Live mode as an artist feels it: the window on the built-in shapes model with Live on, keystrokes typed into
// the prompt, and the time from a keystroke to the picture of the text it made (the 120 ms typing pause
// included). Then bursts typed faster than a run: the runs cancelled on the way, how long a cancelled run kept
// the engine after its cancel (the overhead a stale run costs), and the time from the burst's last key to its
// picture. Timings are printed, never asserted.
//
//   QT_QPA_PLATFORM=offscreen live_bench [--model PATH] [--steps N] [--edits N] [--bursts N] [--gap MS]
#include "core/resources.h"
#include "ui/engineworker.h"
#include "ui/mainwindow.h"
#include "ui/modelpicker.h"
#include "ui/runcontroller.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <QTextCursor>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

using namespace dd;

namespace {

struct Stats {
    std::vector<double> values;
    void add(double v) { values.push_back(v); }
    double quantile(double q) const {
        if (values.empty()) return 0;
        std::vector<double> v = values;
        std::sort(v.begin(), v.end());
        return v[size_t(q * double(v.size() - 1) + 0.5)];
    }
    void print(const char* what) const {
        std::printf("%-44s n=%-3zu median %7.1f ms   p90 %7.1f ms   max %7.1f ms\n", what, values.size(), quantile(0.5),
                    quantile(0.9), values.empty() ? 0.0 : *std::max_element(values.begin(), values.end()));
    }
};

// Polls every millisecond, sleeping in between: a spinning wait would take a core from the engine.
bool waitUntil(const std::function<bool()>& done, int ms) {
    QElapsedTimer t;
    t.start();
    while (!done() && t.elapsed() < ms) QTest::qWait(1);
    return done();
}

} // namespace

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    QCoreApplication::setOrganizationName("DiffusionDeskBench");
    QCoreApplication::setApplicationName("live_bench");
    QStandardPaths::setTestModeEnabled(true);  // the bench's settings and queue are never the user's
    QTemporaryDir config;
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, config.path());
    QString model = QString::fromStdString(installedEmbeddedModel().string());
    int edits = 20, bursts = 5, gapMs = 40, steps = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i];
        if (flag == "--model") model = argv[i + 1];
        else if (flag == "--edits") edits = std::atoi(argv[i + 1]);
        else if (flag == "--bursts") bursts = std::atoi(argv[i + 1]);
        else if (flag == "--gap") gapMs = std::atoi(argv[i + 1]);
        else if (flag == "--steps") steps = std::atoi(argv[i + 1]);
        else {
            std::fprintf(stderr, "usage: live_bench [--model PATH] [--steps N] [--edits N] [--bursts N] [--gap MS]\n");
            return 2;
        }
    }
    ui::MainWindow w(model);
    w.show();
    if (!waitUntil([&] { return !w.modelPicker()->loading() && w.modelPicker()->info().loaded; }, 120000)) {
        std::fprintf(stderr, "live_bench: %s did not load\n", qPrintable(model));
        return 1;
    }
    auto* run = w.runController();
    auto* prompt = w.findChild<QPlainTextEdit*>("prompt");
    prompt->setPlainText("a large red star on a blue background");
    if (steps > 0) w.findChild<QSpinBox*>("steps")->setValue(steps);

    QElapsedTimer clock;
    clock.start();
    int started = 0, cancelled = 0;
    qint64 cancelAt = -1;
    Stats cancelOverhead;
    QObject::connect(run, &ui::RunController::runStarted, [&] { ++started; });
    QObject::connect(run, &ui::RunController::cancelRequested, [&] { cancelAt = clock.nsecsElapsed(); });
    QObject::connect(w.worker(), &ui::EngineWorker::failed, [&] {
        ++cancelled;
        if (cancelAt >= 0) cancelOverhead.add(double(clock.nsecsElapsed() - cancelAt) / 1e6);
        cancelAt = -1;
    });
    const auto shows = [&](const QString& text) {
        return !run->running() && run->lastLive() && run->lastLive()->settings.prompt == text.toStdString();
    };

    w.findChild<QPushButton*>("live")->click();
    if (!waitUntil([&] { return shows(prompt->toPlainText()); }, 60000)) return 1;
    prompt->setFocus();
    prompt->moveCursor(QTextCursor::End);

    // One key at a time, each after the previous picture has come.
    Stats keyToPicture;
    const QString letters = QStringLiteral(" bright shining star");
    for (int i = 0; i < edits; ++i) {
        QTest::qWait(300);
        const qint64 t0 = clock.nsecsElapsed();
        QTest::keyClick(prompt, letters[i % letters.size()].toLatin1());
        if (!waitUntil([&] { return shows(prompt->toPlainText()); }, 60000)) return 1;
        keyToPicture.add(double(clock.nsecsElapsed() - t0) / 1e6);
    }

    // Words typed faster than a run, each burst's picture awaited.
    Stats burstToPicture;
    const int startedBefore = started, cancelledBefore = cancelled;
    for (int b = 0; b < bursts; ++b) {
        QTest::qWait(300);
        const std::string words = " and a green circle";
        for (size_t k = 0; k < words.size(); ++k) {
            if (k) QTest::qWait(gapMs);
            QTest::keyClick(prompt, words[k]);
        }
        const qint64 t0 = clock.nsecsElapsed();
        if (!waitUntil([&] { return shows(prompt->toPlainText()); }, 60000)) return 1;
        burstToPicture.add(double(clock.nsecsElapsed() - t0) / 1e6);
    }
    const auto& timings = run->lastLive()->timings;
    double stepSeconds = 0;
    for (double s : timings.stepSeconds) stepSeconds += s;
    std::printf("model %s, %d steps, %dx%d; typing pause %d ms, burst keys every %d ms\n", qPrintable(model),
                run->lastLive()->settings.steps, run->lastLive()->settings.width, run->lastLive()->settings.height, 120,
                gapMs);
    std::printf("last live run: encode %.1f ms, steps %.1f ms, decode %.1f ms\n", timings.encodeSeconds * 1e3,
                stepSeconds * 1e3, timings.decodeSeconds * 1e3);
    keyToPicture.print("keystroke -> its picture (idle engine)");
    burstToPicture.print("burst's last key -> its picture");
    cancelOverhead.print("cancel -> stale run stopped");
    std::printf("bursts: %d keys, %d runs started, %d cancelled on the way\n", bursts * 19, started - startedBefore,
                cancelled - cancelledBefore);
    w.findChild<QPushButton*>("live")->click();
    return 0;
}
