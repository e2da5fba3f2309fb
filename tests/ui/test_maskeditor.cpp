// The mask an artist paints on the canvas: brush strokes with size and hardness, the eraser, invert, clear,
// undo and redo (MaskLayer); painting with the mouse on PreviewView over the shown image, in image pixels
// whatever the zoom; the saved file named by its content.
#include "ui/masklayer.h"
#include "ui/previewview.h"

#include <QTemporaryDir>
#include <QtTest>

using dd::ui::MaskLayer;
using dd::ui::PreviewView;

namespace {

int at(const MaskLayer& m, int x, int y) { return m.image().constScanLine(y)[x]; }

} // namespace

class TestMaskEditor : public QObject {
    Q_OBJECT
private slots:
    void strokesHaveSizeAndHardness() {
        MaskLayer m({64, 64});
        QVERIFY(m.isEmpty());
        m.beginStroke();
        m.strokeTo({10, 32}, {54, 32}, 6, 1.0, false);  // hard: full inside the radius, nothing outside
        QCOMPARE(at(m, 32, 32), 255);
        QCOMPARE(at(m, 32, 36), 255);
        QCOMPARE(at(m, 32, 40), 0);
        QCOMPARE(at(m, 2, 32), 0);  // before the stroke's start, past its radius
        MaskLayer soft({64, 64});
        soft.beginStroke();
        soft.strokeTo({32, 32}, {32, 32}, 10, 0.0, false);  // soft: falls off from the centre
        QVERIFY(at(soft, 32, 32) > 200);
        QVERIFY(at(soft, 37, 32) > 80 && at(soft, 37, 32) < 180);
        QCOMPARE(at(soft, 43, 32), 0);
        // Overlapping dabs of one stroke do not pile up past the brush's own value.
        soft.strokeTo({32, 32}, {32, 32}, 10, 0.0, false);
        QVERIFY(at(soft, 37, 32) < 180);
    }

    void eraseInvertClearUndoRedo() {
        MaskLayer m({32, 32});
        m.beginStroke();
        m.strokeTo({16, 16}, {16, 16}, 8, 1.0, false);
        const QImage painted = m.image();
        m.beginStroke();
        m.strokeTo({16, 16}, {16, 16}, 3, 1.0, true);  // the eraser
        QCOMPARE(at(m, 16, 16), 0);
        QCOMPARE(at(m, 16, 22), 255);
        m.undo();
        QCOMPARE(m.image(), painted);
        m.redo();
        QCOMPARE(at(m, 16, 16), 0);
        m.invert();
        QCOMPARE(at(m, 16, 16), 255);
        QCOMPARE(at(m, 0, 0), 255);
        m.clear();
        QVERIFY(m.isEmpty());
        m.undo();
        QCOMPARE(at(m, 0, 0), 255);
        QVERIFY(m.canRedo());
        m.beginStroke();  // a new edit forgets what could be redone
        QVERIFY(!m.canRedo());
    }

    void savedByContent() {
        QTemporaryDir dir;
        MaskLayer m({16, 8});
        m.beginStroke();
        m.strokeTo({4, 4}, {12, 4}, 2, 1.0, false);
        const QString first = m.save(dir.path());
        QVERIFY(QFile::exists(first));
        QCOMPARE(m.save(dir.path()), first);  // the same mask, the same file
        QImage back(first);
        QCOMPARE(back.size(), QSize(16, 8));
        QCOMPARE(back.convertToFormat(QImage::Format_Grayscale8), m.image());
        m.invert();
        QVERIFY(m.save(dir.path()) != first);  // another mask never replaces a file a queued run names
        QString error;
        QVERIFY(m.save("/proc/no-such-folder", &error).isEmpty());
        QVERIFY(!error.isEmpty());
    }

    // The mouse paints in image pixels: at 200 % a 10-pixel drag on screen is 5 image pixels.
    void paintingWithTheMouse() {
        PreviewView view;
        view.resize(300, 300);
        QImage image(64, 64, QImage::Format_RGB888);
        image.fill(Qt::gray);
        view.showFinal(image, "x");
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        view.setZoom(2.0);
        MaskLayer m(image.size());
        view.setMaskLayer(&m);
        view.setBrush(2, 1.0, false);
        QSignalSpy edited(&view, &PreviewView::maskEdited);
        const QPoint centre = view.rect().center() - QPoint(0, 10);  // the caption strip takes the bottom
        QTest::mousePress(&view, Qt::LeftButton, {}, centre);
        QTest::mouseMove(&view, centre + QPoint(20, 0));
        QTest::mouseRelease(&view, Qt::LeftButton, {}, centre + QPoint(20, 0));
        QCOMPARE(edited.count(), 1);
        QVERIFY(!m.isEmpty());
        int painted = 0, minX = 64, maxX = 0;
        for (int y = 0; y < 64; ++y)
            for (int x = 0; x < 64; ++x)
                if (at(m, x, y) > 128) ++painted, minX = std::min(minX, x), maxX = std::max(maxX, x);
        QVERIFY2(maxX - minX >= 12 && maxX - minX <= 16, qPrintable(QString("%1..%2").arg(minX).arg(maxX)));  // 10 + brush
        // The right button erases; without a layer the mouse pans again and paints nothing.
        QTest::mousePress(&view, Qt::RightButton, {}, centre);
        QTest::mouseRelease(&view, Qt::RightButton, {}, centre);
        int left = 0;
        for (int y = 0; y < 64; ++y)
            for (int x = 0; x < 64; ++x) left += at(m, x, y) > 128;
        QVERIFY2(left < painted && left > painted / 2, qPrintable(QString("%1 of %2").arg(left).arg(painted)));
        view.setMaskLayer(nullptr);
        const QImage before = m.image();
        QTest::mousePress(&view, Qt::LeftButton, {}, centre + QPoint(0, 30));
        QTest::mouseRelease(&view, Qt::LeftButton, {}, centre + QPoint(0, 30));
        QCOMPARE(m.image(), before);
    }
};

QTEST_MAIN(TestMaskEditor)
#include "test_maskeditor.moc"
