// The window as a person uses it: type a prompt, press Generate on the built-in demo model, see progress and
// a picture; Cancel stops a run; the UI thread never blocks while the engine works.
#include "ui/mainwindow.h"

#include <QLabel>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QStatusBar>
#include <QtTest>

using dd::ui::MainWindow;

class TestMainWindow : public QObject {
    Q_OBJECT

    static void setSmall(MainWindow& w, int steps) {
        w.findChild<QSpinBox*>("steps")->setValue(steps);
        w.findChild<QSpinBox*>("width")->setValue(64);
        w.findChild<QSpinBox*>("height")->setValue(64);
    }

private slots:
    void demoGeneratesAnImage() {
        MainWindow w({});
        w.show();
        QVERIFY(w.findChild<QLabel*>("modelBanner")->text().contains("Demo mode"));
        setSmall(w, 3);
        w.findChild<QPlainTextEdit*>("prompt")->setPlainText("a red apple");
        auto* generate = w.findChild<QPushButton*>("generate");
        QTest::mouseClick(generate, Qt::LeftButton);
        QVERIFY(!generate->isEnabled());  // running
        QTRY_VERIFY_WITH_TIMEOUT(generate->isEnabled(), 120000);
        QVERIFY2(!w.findChild<QLabel*>("preview")->pixmap().isNull(), qPrintable(w.statusBar()->currentMessage()));
        QCOMPARE(w.findChild<QProgressBar*>("progress")->value(), 3);
        QVERIFY(w.statusBar()->currentMessage().contains("demo"));
    }

    void cancelStopsARun() {
        MainWindow w({});
        w.show();
        setSmall(w, 150);
        QTest::mouseClick(w.findChild<QPushButton*>("generate"), Qt::LeftButton);
        auto* progress = w.findChild<QProgressBar*>("progress");
        QTRY_VERIFY_WITH_TIMEOUT(progress->value() >= 1, 120000);  // the UI kept processing events meanwhile
        QTest::mouseClick(w.findChild<QPushButton*>("cancel"), Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(w.findChild<QPushButton*>("generate")->isEnabled(), 60000);
        QVERIFY(w.statusBar()->currentMessage().contains("Cancelled"));
        QVERIFY(progress->value() < 150);
    }

    void badModelIsReportedNotFatal() {
        MainWindow w(QStringLiteral("/nonexistent/model.safetensors"));
        w.show();
        QTest::mouseClick(w.findChild<QPushButton*>("generate"), Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(w.findChild<QPushButton*>("generate")->isEnabled(), 60000);
        QVERIFY2(w.statusBar()->currentMessage().contains("/nonexistent/model.safetensors: no such file or folder"),
                 qPrintable(w.statusBar()->currentMessage()));
    }
};

QTEST_MAIN(TestMainWindow)
#include "test_mainwindow.moc"
