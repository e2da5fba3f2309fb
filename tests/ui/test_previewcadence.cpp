// The adaptive preview cadence: previews stay within 5 % of the step time whatever the costs.
#include "ui/previewcadence.h"

#include <QtTest>

using dd::ui::PreviewCadence;

class TestPreviewCadence : public QObject {
    Q_OBJECT

    // Simulates a run: each step costs `step` s, each preview `preview` s; returns previews sent.
    static int run(PreviewCadence& c, int steps, double step, double preview) {
        c.reset();
        for (int i = 1; i <= steps; ++i) {
            if (i > 1) c.addStepSeconds(step);  // the worker skips the first interval (it holds loading)
            if (c.wantPreview(i, steps)) c.addPreviewSeconds(preview);
        }
        return c.previews();
    }

private slots:
    void cheapPreviewsEveryStep() {
        PreviewCadence c;
        QCOMPARE(run(c, 30, 1.0, 0.01), 30);
        QCOMPARE(c.interval(), 1);
    }

    void expensivePreviewsAreSkippedToStayInBudget() {
        PreviewCadence c;
        const int previews = run(c, 100, 0.1, 0.02);  // a preview costs 20 % of a step
        QVERIFY2(previews >= 20 && previews <= 30, qPrintable(QString::number(previews)));
        QVERIFY2(c.costFraction() <= 0.05 + 0.02 / (99 * 0.1), qPrintable(QString::number(c.costFraction())));
        QVERIFY(c.interval() >= 4 && c.interval() <= 5);  // 0.02 / (5 % of 0.1), give or take rounding
    }

    void firstStepAlwaysPreviews() {
        PreviewCadence c;
        QCOMPARE(run(c, 1, 1.0, 100.0), 1);
        QVERIFY(!c.wantPreview(2, 10));  // the first preview blew the budget: none until the steps pay it back
    }

    void hugeBudgetMeansEveryStep() {
        PreviewCadence c(1e9);
        QCOMPARE(run(c, 10, 0.001, 1.0), 10);
    }
};

QTEST_APPLESS_MAIN(TestPreviewCadence)
#include "test_previewcadence.moc"
