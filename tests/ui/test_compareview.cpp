// The two viewers offscreen. The compare view: the numbers shown for known pairs, modes, heatmap, shared zoom
// and pan, the differing settings list. The canvas (PreviewView): zoom about the
// cursor, Fit / 100 %, pan, a batch as a grid, stepping, and its caption.
#include "ui/compareview.h"
#include "ui/engineworker.h"
#include "ui/previewview.h"

#include <QCheckBox>
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QSlider>
#include <QTreeWidget>
#include <QWheelEvent>
#include <QtTest>

using namespace dd;

namespace {

// A gradient with some structure; values stay ≤ 245 so +10 never clips.
api::Image gradient(int w, int h, int offset = 0) {
    api::Image img{w, h, std::vector<uint8_t>(size_t(w) * size_t(h) * 3)};
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
            for (int c = 0; c < 3; ++c)
                img.rgb[(size_t(y) * size_t(w) + size_t(x)) * 3 + size_t(c)] = uint8_t((x * 3 + y * 2 + c * 40 + (x * y) % 17) % 236 + offset);
    return img;
}

} // namespace

class TestCompareView : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        qRegisterMetaType<api::GenerationResult>();
        qRegisterMetaType<api::GenerationSettings>();
    }

    void numbersForAConstantOffset() {
        ui::CompareView view;
        view.resize(800, 500);
        view.show();
        view.setImages(gradient(40, 32), gradient(40, 32, 10));
        const QString text = view.findChild<QLabel*>("compareNumbers")->text();
        QCOMPARE(text, view.metricsText());
        // |diff| = 10 everywhere: MSE 100, PSNR 10·log10(255²/100) = 28.13 dB.
        QVERIFY2(text.contains("max |diff| 10 ") && text.contains("mean |diff| 10.00") && text.contains("PSNR 28.13 dB") &&
                     text.contains("1280 of 1280 pixels differ"),
                 qPrintable(text));
        QVERIFY(view.metrics()->ssim > 0.9 && view.metrics()->ssim < 1.0);
        QVERIFY(text.contains("SSIM " + QString::number(view.metrics()->ssim, 'f', 4)));
    }

    void identicalAndDifferentSizes() {
        ui::CompareView view;
        view.setImages(gradient(24, 24), gradient(24, 24));
        QVERIFY2(view.metricsText().startsWith("Identical pixels"), qPrintable(view.metricsText()));
        view.setImages(gradient(24, 24), gradient(32, 24));
        QVERIFY2(view.metricsText().contains("Sizes differ (24×24 vs 32×24)"), qPrintable(view.metricsText()));
        view.setHeatmap(true);
        QVERIFY(!view.heatmap());  // nothing to show for different sizes
        view.setImages(gradient(8, 8), gradient(8, 8, 1));
        QVERIFY2(view.metricsText().contains("SSIM n/a"), qPrintable(view.metricsText()));
    }

    void modesAndHeatmapChangeWhatIsDrawn() {
        ui::CompareView view;
        view.resize(600, 400);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        auto a = gradient(64, 48), b = a;
        for (int i = 0; i < 300; ++i) b.rgb[size_t(i) * 7] ^= 0x40;
        view.setImages(a, b);
        auto* canvas = view.findChild<QWidget*>("compareCanvas");
        QVERIFY(canvas);
        const QImage sideBySide = canvas->grab().toImage();

        view.setHeatmap(true);
        QVERIFY(view.heatmap());
        QVERIFY(view.findChild<QCheckBox*>()->isChecked());
        const QImage withHeat = canvas->grab().toImage();
        QVERIFY(withHeat != sideBySide);
        view.setHeatmap(false);

        QSignalSpy modes(&view, &ui::CompareView::modeChanged);
        view.findChild<QPushButton*>("modeBlink")->click();
        QCOMPARE(view.mode(), ui::CompareView::Mode::Blink);
        QCOMPARE(modes.count(), 1);
        view.setBlinkInterval(0);  // the test flips by hand
        QVERIFY(!view.blinkShowsB());
        const QImage showA = canvas->grab().toImage();
        view.toggleBlink();
        QVERIFY(view.blinkShowsB());
        QVERIFY(canvas->grab().toImage() != showA);
        QTest::mouseClick(canvas, Qt::LeftButton);  // a click flips back
        QVERIFY(!view.blinkShowsB());

        view.setMode(ui::CompareView::Mode::Swipe);
        QVERIFY(view.findChild<QPushButton*>("modeSwipe")->isChecked());
        auto* slider = view.findChild<QSlider*>();
        QVERIFY(slider->isVisible());
        view.setSwipePosition(0.25);
        QCOMPARE(view.swipePosition(), 0.25);
        const QImage quarter = canvas->grab().toImage();
        view.setSwipePosition(0.75);
        QVERIFY(canvas->grab().toImage() != quarter);
        view.setMode(ui::CompareView::Mode::SideBySide);
        QVERIFY(!slider->isVisible());
    }

    void zoomAndPanAreShared() {
        ui::CompareView view;
        view.resize(600, 400);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        view.setImages(gradient(64, 48), gradient(64, 48, 3));
        const double fitted = view.zoom();
        QVERIFY(fitted > 1.0);  // small images are enlarged to fill the panes
        view.setZoom(4.0);
        view.setPan(QPointF(10, 12));
        QCOMPARE(view.zoom(), 4.0);
        QCOMPARE(view.pan(), QPointF(10, 12));
        // Both panes draw image point (10, 12) at their centres: the pixels there are A's and B's pixel (10, 12).
        auto* canvas = view.findChild<QWidget*>("compareCanvas");
        const QImage shot = canvas->grab().toImage();
        const int half = canvas->width() / 2;
        const QPoint left(half / 2 + 1, canvas->height() / 2 + 1), right(half + 1 + (canvas->width() - half - 1) / 2 + 1, left.y());
        const auto a = gradient(64, 48), b = gradient(64, 48, 3);
        const auto px = [](const api::Image& img, int x, int y) {
            const size_t i = (size_t(y) * size_t(img.width) + size_t(x)) * 3;
            return qRgb(img.rgb[i], img.rgb[i + 1], img.rgb[i + 2]);
        };
        const qreal dpr = shot.devicePixelRatio();
        QCOMPARE(shot.pixel(int(left.x() * dpr), int(left.y() * dpr)), px(a, 10, 12));
        QCOMPARE(shot.pixel(int(right.x() * dpr), int(right.y() * dpr)), px(b, 10, 12));

        // The wheel zooms about the cursor: the image point under it stays put.
        QWheelEvent wheel(QPointF(left), canvas->mapToGlobal(QPointF(left)), QPoint(), QPoint(0, 120), Qt::NoButton,
                          Qt::NoModifier, Qt::NoScrollPhase, false);
        QApplication::sendEvent(canvas, &wheel);
        QVERIFY(view.zoom() > 4.0);
        view.fitToView();
        QCOMPARE(view.zoom(), fitted);
    }

    // The canvas shows the very pixel under the cursor after a wheel zoom, pans by a drag, and Fit / 100 % set
    // the zoom they name.
    void canvasZoomsAboutTheCursorAndPans() {
        ui::PreviewView canvas;
        canvas.resize(400, 330);
        canvas.show();
        QVERIFY(QTest::qWaitForWindowExposed(&canvas));
        const QImage img = ui::toQImage(gradient(64, 48));
        canvas.showFinal(img, "seed 42 · a gradient");
        QVERIFY(canvas.isFitted());
        QVERIFY(canvas.zoom() > 5.0);  // 64 px wide in a 400 px canvas
        QCOMPARE(canvas.caption(), QString("seed 42 · a gradient"));
        QSignalSpy zooms(&canvas, &ui::PreviewView::zoomChanged);

        const QPointF at(130, 90);
        const auto pixelAt = [&canvas](QPointF p) {
            const QImage shot = canvas.grab().toImage();
            const qreal dpr = shot.devicePixelRatio();
            return shot.pixel(int(p.x() * dpr), int(p.y() * dpr));
        };
        const QRgb before = pixelAt(at);
        QWheelEvent wheel(at, canvas.mapToGlobal(at), QPoint(), QPoint(0, 240), Qt::NoButton, Qt::NoModifier,
                          Qt::NoScrollPhase, false);
        QApplication::sendEvent(&canvas, &wheel);
        QVERIFY(canvas.zoom() > 7.0);
        QVERIFY(!canvas.isFitted());
        QCOMPARE(zooms.count(), 1);
        QCOMPARE(pixelAt(at), before);

        canvas.setZoom(1.0);
        QCOMPARE(canvas.zoom(), 1.0);
        const QPointF panBefore = canvas.pan();
        QTest::mousePress(&canvas, Qt::LeftButton, {}, QPoint(200, 150));
        QTest::mouseMove(&canvas, QPoint(230, 170));
        QTest::mouseRelease(&canvas, Qt::LeftButton, {}, QPoint(230, 170));
        QCOMPARE(canvas.pan(), panBefore - QPointF(30, 20));  // the image follows the mouse, one pixel per pixel
        canvas.fitToView();
        QVERIFY(canvas.isFitted());
        const double paneHeight = canvas.height() - (canvas.fontMetrics().height() + 8);  // less the caption strip
        QCOMPARE(canvas.zoom(), std::min(400.0 / 64, paneHeight / 48));

        // Live previews are always fitted and do not zoom.
        canvas.showPreview(img.scaled(8, 6));
        QVERIFY(!canvas.isFinal());
        const double previewZoom = canvas.zoom();
        QApplication::sendEvent(&canvas, &wheel);
        QCOMPARE(canvas.zoom(), previewZoom);
    }

    // A batch shows as a grid; a click opens one image, G goes back; the arrow keys step through the batch and,
    // past its ends, ask for the neighbouring result.
    void canvasShowsABatchAsAGridAndSteps() {
        ui::PreviewView canvas;
        canvas.resize(420, 440);
        canvas.show();
        QVERIFY(QTest::qWaitForWindowExposed(&canvas));
        QList<QImage> batch;
        QStringList captions;
        for (int i = 0; i < 4; ++i) {
            batch << ui::toQImage(gradient(32, 32, 3 * i));
            captions << QString("seed %1").arg(100 + i);
        }
        QSignalSpy current(&canvas, &ui::PreviewView::currentChanged);
        QSignalSpy steps(&canvas, &ui::PreviewView::stepRequested);
        canvas.showBatch(batch, captions);
        QVERIFY(canvas.showsGrid());
        QCOMPARE(canvas.imageCount(), 4);
        QVERIFY(canvas.caption().startsWith("4 images"));
        // A 2 × 2 grid: the lower right quarter is the fourth image.
        QCOMPARE(canvas.cellAt(QPoint(10, 10)), 0);
        QCOMPARE(canvas.cellAt(QPoint(400, 10)), 1);
        QCOMPARE(canvas.cellAt(QPoint(400, 380)), 3);
        QTest::mouseClick(&canvas, Qt::LeftButton, {}, QPoint(400, 380));
        QCOMPARE(canvas.currentIndex(), 3);
        QVERIFY(canvas.image() == batch[3]);
        QCOMPARE(canvas.caption(), QString("4 of 4 · seed 103"));
        QTest::keyClick(&canvas, Qt::Key_Left);
        QCOMPARE(canvas.currentIndex(), 2);
        QTest::keyClick(&canvas, Qt::Key_Right);
        QTest::keyClick(&canvas, Qt::Key_Right);  // past the end: the next result
        QCOMPARE(canvas.currentIndex(), 3);
        QCOMPARE(steps.count(), 1);
        QCOMPARE(steps.takeFirst().at(0).toInt(), 1);
        QTest::keyClick(&canvas, Qt::Key_G);
        QVERIFY(canvas.showsGrid());
        QCOMPARE(current.last().at(0).toInt(), -1);

        canvas.showFinal(batch[0], "seed 100");  // a single image: the arrows go to the neighbouring results
        QVERIFY(!canvas.showsGrid());
        QTest::keyClick(&canvas, Qt::Key_Left);
        QCOMPARE(steps.count(), 1);
        QCOMPARE(steps.takeFirst().at(0).toInt(), -1);
    }

    void differingSettingsAndEnvironment() {
        api::GenerationResult a, b;
        a.images = {gradient(32, 32)};
        b.images = {gradient(32, 32, 5), gradient(32, 32, 6)};
        a.settings.seed = 1;
        b.settings.seed = 1;  // image 1 of B's batch: seed 2
        b.settings.batchSize = 2;
        b.settings.cfgScale = 4.5;
        a.environment.device = "CPU";
        b.environment.device = "NVIDIA H200";
        ui::CompareView view;
        view.setResults(a, 0, b, 1);
        const QStringList lines = view.differenceLines();
        QVERIFY2(lines.contains("seed: 1 \u2192 2") && lines.contains("cfg_scale: 7.0 \u2192 4.5") &&
                     lines.contains("batch_size: 1 \u2192 2") && lines.contains("environment device: CPU \u2192 NVIDIA H200"),
                 qPrintable(lines.join(" | ")));
        auto* tree = view.findChild<QTreeWidget*>("compareDifferences");
        QCOMPARE(tree->topLevelItemCount(), lines.size());
        QCOMPARE(view.metrics()->pixels.maxAbs, 6);

        view.setImages(gradient(32, 32), gradient(32, 32));
        QCOMPARE(tree->topLevelItem(0)->text(0), QString("(settings unknown)"));
        view.setSettings(a.settings, a.settings);
        QCOMPARE(tree->topLevelItem(0)->text(0), QString("(same settings)"));
    }
};

QTEST_MAIN(TestCompareView)
#include "test_compareview.moc"
