// Keeping, finding and reusing images, end to end in the window (offscreen, built-in demo model): Generate saves
// the PNG with its A1111 text and its sidecar into today's folder; after a restart the library holds it and finds
// it by a word of its prompt; "Use settings" on it makes the same picture again, byte for byte; Delete moves it
// to the trash and out of the library; a damaged index is rebuilt from the folder on the next start. A batch
// shows as a grid whose images each have their file; Verify reruns one and finds it identical. Favourites,
// ratings and typed filters narrow the library; an image another program drops into a watched folder joins it.
#include "core/library/library.h"
#include "core/resources.h"
#include "core/settings/restore.h"
#include "core/settings/sidecar.h"
#include "ui/apppreferences.h"
#include "ui/dialoghooks.h"
#include "ui/hirespanel.h"
#include "ui/imageinputpanel.h"
#include "ui/librarypanel.h"
#include "ui/libraryservice.h"
#include "ui/mainwindow.h"
#include "ui/modelpicker.h"
#include "ui/previewview.h"
#include "ui/promptpanel.h"
#include "imaging/png.h"

#include <QAction>
#include <QDialog>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QListView>
#include <QMenu>
#include <QStatusBar>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QComboBox>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTextEdit>
#include <QToolButton>

#include "tests/ui/window_test.h"

#include <QCheckBox>
#include <QtTest>

#include <fstream>
#include <sstream>

using dd::ui::MainWindow;

namespace {

const QString kDemo = QStringLiteral("demo:tiny-sd1");
constexpr const char* kPrompt = "a lighthouse keeper reading by candlelight";

QByteArray fileBytes(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// Generate with the window's settings; returns the saved files (image, sidecar) once they are written. Read
// them with at(): the list was made on the library thread, and a detach would copy it (ThreadSanitizer cannot
// see the event queue's ordering of that buffer).
QStringList generateAndSave(MainWindow& w) {
    QSignalSpy saved(&w, &MainWindow::imagesSaved);
    QTest::mouseClick(w.findChild<QPushButton*>("generate"), Qt::LeftButton);
    if (!saved.wait(120000)) return {};
    return saved.at(0).at(0).toStringList();
}

void setUp(MainWindow& w);

// A first picture made and sent to img2img (the canvas bar's action): its file, "" when it could not be made.
QString generateAndSendToImg2Img(MainWindow& w) {
    if (!QTest::qWaitFor([&] { return w.modelPicker()->loadedModel() == kDemo; }, 60000)) return {};
    setUp(w);
    const QString source = generateAndSave(w).value(0);
    if (!source.isEmpty()) w.findChild<QAction*>("canvasSendToImg2Img")->trigger();
    return source;
}

// The window shown at 1280 × 800 with one saved image of its own on the canvas: that image's file ("" when not).
QString showAnImage(MainWindow& w) {
    w.resize(1280, 800);
    w.show();
    if (!QTest::qWaitForWindowExposed(&w)) return {};
    if (!QTest::qWaitFor([&] { return w.modelPicker()->loadedModel() == kDemo; }, 60000)) return {};
    setUp(w);
    return generateAndSave(w).value(0);
}

void setUp(MainWindow& w) {
    w.findChild<QSpinBox*>("steps")->setValue(2);
    w.findChild<QSpinBox*>("width")->setValue(64);
    w.findChild<QSpinBox*>("height")->setValue(64);
    w.findChild<QSpinBox*>("batchSize")->setValue(1);
    w.findChild<QSpinBox*>("batchCount")->setValue(1);
    auto s = w.promptPanel()->settings();
    s.prompt = kPrompt;
    s.seed = 4242;
    w.promptPanel()->setSettings(s);
    w.promptPanel()->setRandomSeed(false);
}

} // namespace

class TestStudio : public QObject {
    Q_OBJECT

    QTemporaryDir m_config;
    QString outputFolder() const { return m_config.filePath("output"); }

private slots:
    void initTestCase() {
        dd::test::isolateWindowTests(m_config, "test_studio");
    }
    void init() {
        QSettings().clear();
        QFile::remove(MainWindow::queueFile());
        for (const char* suffix : {"", "-wal", "-shm", ".thumbnails", ".thumbnails-wal", ".thumbnails-shm"})
            QFile::remove(dd::ui::LibraryService::defaultIndexFile() + suffix);
        QDir(outputFolder()).removeRecursively();
        QSettings().setValue("saving/outputFolder", outputFolder());
        QSettings().setValue("engine/threads", 1);  // one fixed count: the rerun below is compared bit for bit
    }

    void savesFindsAfterARestartAndReproduces() {
        QStringList files;
        {
            MainWindow w({});
            QTRY_COMPARE_WITH_TIMEOUT(w.modelPicker()->loadedModel(), kDemo, 60000);
            setUp(w);
            files = generateAndSave(w);
            QCOMPARE(files.size(), 2);
            QCOMPARE(w.shownImageFile(), files.at(0));
        }
        // In today's folder, with its metadata and sidecar, read back by the project's readers.
        const QString image = files.at(0);
        QCOMPARE(QFileInfo(image).absolutePath(), QFileInfo(dd::ui::AppPreferences::load().todaysFolder()).absoluteFilePath());
        QVERIFY(image.endsWith(".png"));
        const auto restored = dd::settings::restoreFromFile(image.toStdString());
        QCOMPARE(restored.source, std::string("png"));
        QCOMPARE(restored.settings.prompt, std::string(kPrompt));
        QCOMPARE(restored.settings.seed, int64_t(4242));
        QVERIFY(dd::ui::parametersOfFile(image).startsWith(QString(kPrompt) + "\n"));
        QCOMPARE(files.at(1), QString::fromStdString(dd::settings::sidecarPathFor(image.toStdString())));
        const auto sidecar = dd::settings::readSidecar(fileBytes(files.at(1)).toStdString());
        QCOMPARE(sidecar.settings.seed, int64_t(4242));
        QVERIFY(!sidecar.createdAt.empty());

        // A new start: the library has it, and finds it by a word of its prompt.
        MainWindow w({});
        QTRY_COMPARE_WITH_TIMEOUT(w.modelPicker()->loadedModel(), kDemo, 60000);
        auto* model = w.libraryPanel()->model();
        QTRY_VERIFY(model->isOpen());
        QTRY_COMPARE(model->rowCount(), 1);
        w.libraryPanel()->searchBox()->setText("candle");  // a prefix of "candlelight"
        QTRY_COMPARE(model->rowCount(), 1);
        w.libraryPanel()->searchBox()->setText("submarine");
        QTRY_COMPARE(model->rowCount(), 0);
        w.libraryPanel()->searchBox()->setText("keeper");
        QTRY_COMPARE(model->rowCount(), 1);
        QCOMPARE(model->item(0)->path, QFileInfo(image).canonicalFilePath());

        // A click shows it; "Use settings" restores them; the rerun is the same file, byte for byte.
        auto* view = w.libraryPanel()->view();
        view->setCurrentIndex(model->index(0));
        QTRY_COMPARE(w.shownImageFile(), model->item(0)->path);
        w.promptPanel()->setSettings({});  // what the artist had typed meanwhile
        QVERIFY(w.restoreFromFile(model->item(0)->path));
        QCOMPARE(w.promptPanel()->settings().prompt, std::string(kPrompt));
        const QStringList again = generateAndSave(w);
        QCOMPARE(again.size(), 2);
        QVERIFY(again.at(0) != image);  // never overwritten
        QCOMPARE(fileBytes(again.at(0)), fileBytes(image));
        QTRY_COMPARE(model->rowCount(), 2);

        // Delete: to the trash and out of the index; the other stays.
        emit w.libraryPanel()->trashRequested({model->idAt(0)});
        QTRY_COMPARE(model->rowCount(), 1);
        QCOMPARE(QFile::exists(again.at(0)) + QFile::exists(image), 1);
    }

    // Restoring is undoable; a pasted A1111 block offers to become settings, and that is undoable too.
    void restoreIsUndoneAndPastedParametersApply() {
        MainWindow w({});
        QTRY_VERIFY_WITH_TIMEOUT(!w.modelPicker()->loading(), 60000);
        auto typed = w.promptPanel()->settings();
        typed.prompt = "my own words";
        typed.steps = 9;
        w.promptPanel()->setSettings(typed);
        QTemporaryDir dir;
        const QString txt = dir.filePath("params.txt");
        const QByteArray block = "a castle in fog\nSteps: 17, Sampler: Euler, CFG scale: 6, Seed: 99, Size: 64x64";
        QFile f(txt);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(block);
        f.close();
        QVERIFY(w.restoreFromFile(txt));
        QCOMPARE(w.promptPanel()->settings().steps, 17);
        w.undoRestore();
        QCOMPARE(w.promptPanel()->settings().prompt, std::string("my own words"));
        QCOMPARE(w.promptPanel()->settings().steps, 9);

        auto* notice = w.findChild<QLabel*>("pasteNotice");
        QVERIFY(notice->isHidden());
        w.promptPanel()->promptEdit()->setPlainText(QString::fromUtf8(block));
        QVERIFY(!notice->isHidden());
        w.applyPastedParameters();
        QCOMPARE(w.promptPanel()->settings().prompt, std::string("a castle in fog"));
        QCOMPARE(w.promptPanel()->settings().seed, int64_t(99));
        QCOMPARE(w.promptPanel()->settings().steps, 17);
        QVERIFY(notice->isHidden());
        w.undoRestore();
        QCOMPARE(w.promptPanel()->settings().steps, 9);
        w.promptPanel()->promptEdit()->setPlainText("just a prompt\nover two lines");
        QVERIFY(notice->isHidden());  // an ordinary prompt is left alone
    }

    // What every run needs is on screen at 1280 x 800, whole, without scrolling; the token counters are not cut.
    void theRunControlsFitA1280x800Window() {
        MainWindow w({});
        w.resize(1280, 800);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QTRY_VERIFY_WITH_TIMEOUT(!w.modelPicker()->loading(), 60000);
        QTest::qWait(200);
        QCOMPARE(w.size(), QSize(1280, 800));
        for (const char* name : {"generate", "cancel", "progress", "eta", "vramGauge", "promptTokens", "negativeTokens"}) {
            auto* widget = w.findChild<QWidget*>(name);
            QVERIFY2(widget, name);
            if (QLatin1String(name) == QLatin1String("eta") && widget->size().isEmpty()) continue;  // empty until a run
            QVERIFY2(widget->isVisible(), name);
            const QRect whole(QPoint(0, 0), widget->size());
            QVERIFY2(widget->visibleRegion().boundingRect() == whole,
                     qPrintable(QStringLiteral("%1: %2 of %3x%4 visible").arg(name)
                                    .arg(widget->visibleRegion().boundingRect().height())
                                    .arg(whole.width()).arg(whole.height())));
            const QRect inWindow(widget->mapTo(&w, QPoint(0, 0)), widget->size());
            QVERIFY2(w.rect().contains(inWindow), name);
        }
    }

    // An image made with the open model (the built-in shapes model: a folder, no hash) restores without a search
    // for its model and without a "needs model" notice.
    void restoringAnImageOfTheOpenModelLooksForNothing() {
        const QString shapes = QString::fromStdString(dd::installedEmbeddedModel().string());
        MainWindow w(shapes);
        QTRY_COMPARE_WITH_TIMEOUT(w.modelPicker()->loadedModel(), shapes, 60000);
        w.findChild<QSpinBox*>("steps")->setValue(2);
        w.findChild<QSpinBox*>("batchCount")->setValue(1);
        const auto files = generateAndSave(w);
        QCOMPARE(files.size(), 2);
        QSignalSpy locate(&w, &MainWindow::locateRequested);
        QVERIFY(w.restoreFromFile(files.at(0)));
        QCOMPARE(locate.count(), 0);
        QVERIFY(w.findChild<QLabel*>("restoreNotice") == nullptr || w.findChild<QLabel*>("restoreNotice")->isHidden());
    }

    // A batch of two: a grid, each image with its own file; Verify on the second reruns it and finds the pixels
    // identical (the CLI's verify, from the window).
    void aBatchIsAGridAndVerifyFindsItsImageIdentical() {
        MainWindow w({});
        QTRY_COMPARE_WITH_TIMEOUT(w.modelPicker()->loadedModel(), kDemo, 60000);
        setUp(w);
        w.findChild<QSpinBox*>("batchSize")->setValue(2);
        const auto files = generateAndSave(w);
        QCOMPARE(files.size(), 4);  // two images, two sidecars
        auto* canvas = w.previewView();
        QVERIFY(canvas->showsGrid());
        QCOMPARE(canvas->imageCount(), 2);
        QCOMPARE(w.shownImageFile(), files.at(0));
        canvas->setCurrentIndex(1);
        QCOMPARE(w.shownImageFile(), files.at(2));
        QVERIFY(canvas->caption().contains("seed 4243"));
        // Use seed on the canvas's image: only the seed changes.
        auto before = w.promptPanel()->settings();
        before.prompt = "something else";
        w.promptPanel()->setSettings(before);
        w.findChild<QAction*>("canvasUseSeed")->trigger();
        QCOMPARE(w.promptPanel()->settings().seed, int64_t(4243));
        QCOMPARE(w.promptPanel()->settings().prompt, std::string("something else"));
        w.findChild<QAction*>("canvasUsePrompt")->trigger();
        QCOMPARE(w.promptPanel()->settings().prompt, std::string(kPrompt));
        auto* verify = w.findChild<QAction*>("canvasVerify");
        QVERIFY(verify->isEnabled());
        QSignalSpy finished(&w, &MainWindow::runFinished);
        verify->trigger();
        QVERIFY(finished.wait(120000));
        QVERIFY(w.lastVerify().has_value());
        QVERIFY2(w.lastVerify()->error.isEmpty(), qPrintable(w.lastVerify()->error));
        QVERIFY2(w.lastVerify()->identical, qPrintable(w.lastVerify()->report));
        QCOMPARE(w.lastVerify()->recorded.settings.seed, int64_t(4243));  // the second image's own seed
        QVERIFY(w.compareView() != nullptr);
        QVERIFY(!w.isRunning());
        QCOMPARE(w.shownImageFile(), files.at(2));  // the canvas still shows the verified image, not the rerun's previews
        QVERIFY(canvas->isFinal());

        // Delete on the canvas: that image and its sidecar to the trash, and out of the library; the other stays.
        auto* model = w.libraryPanel()->model();
        QTRY_COMPARE(model->rowCount(), 2);
        w.findChild<QAction*>("canvasDelete")->trigger();
        QTRY_COMPARE(model->rowCount(), 1);
        QVERIFY2(!QFile::exists(files.at(2)), qPrintable(files.at(2)));
        QVERIFY2(!QFile::exists(files.at(3)), qPrintable(files.join(" ")));
        QVERIFY(QFile::exists(files.at(0)));
    }

    // A prompt's <lora:name:w> is found in the LoRA folders of Preferences; without them the run says which LoRA
    // it could not find.
    void loraFromThePreferencesFolder() {
        const QString model = QString(DD_FIXTURES_DIR) + "/pipeline/tiny-sd1-e2e";
        for (const bool withFolder : {false, true}) {
            QSettings().remove("models/loraFolders");
            if (withFolder) QSettings().setValue("models/loraFolders", QStringList{QString(DD_FIXTURES_DIR) + "/lora"});
            MainWindow w(model);
            QTRY_COMPARE_WITH_TIMEOUT(w.modelPicker()->loadedModel(), model, 60000);
            setUp(w);
            auto s = w.promptPanel()->settings();
            s.prompt = "a photo of an astronaut <lora:peft_sd1:0.5> riding a horse";
            w.promptPanel()->setSettings(s);
            if (!withFolder) {
                QSignalSpy finished(&w, &MainWindow::runFinished);
                QTest::mouseClick(w.findChild<QPushButton*>("generate"), Qt::LeftButton);
                QVERIFY(finished.wait(60000));
                QVERIFY2(w.statusBar()->currentMessage().contains("peft_sd1"), qPrintable(w.statusBar()->currentMessage()));
                continue;
            }
            const QStringList files = generateAndSave(w);
            QVERIFY(!files.isEmpty());
            const QString parameters = dd::ui::parametersOfFile(files.at(0));
            QVERIFY2(parameters.contains("Lora hashes: \"peft_sd1:"), qPrintable(parameters));
        }
        QSettings().remove("models/loraFolders");
    }

    // Upscale on the canvas: its menu lists the networks of the upscaler folders in Preferences (the hires fix's
    // list too); the bigger copy is saved beside the image with the source's parameters and A1111's extras record,
    // shown, and joins the library. A file that is not an upscaler is one message, and nothing is written.
    void upscalesTheShownImage() {
        QSettings().setValue("models/upscalerFolders", QStringList{QString(DD_FIXTURES_DIR) + "/upscalers"});
        MainWindow w({});
        QVERIFY(w.findChild<QComboBox*>("hiresUpscaler")->findText("compact-2x") >= 0);
        QTRY_COMPARE_WITH_TIMEOUT(w.modelPicker()->loadedModel(), kDemo, 60000);
        setUp(w);
        const QString source = generateAndSave(w).value(0);
        QVERIFY(!source.isEmpty());
        auto* menu = w.findChild<QMenu*>("canvasUpscaleMenu");
        emit menu->aboutToShow();
        QAction* compact = nullptr;
        for (QAction* a : menu->actions()) if (a->text() == "compact-2x") compact = a;
        QVERIFY(compact);
        QSignalSpy done(&w, &MainWindow::upscaleDone);
        compact->trigger();
        QVERIFY(done.wait(60000));
        const QString written = done.at(0).at(0).toString();
        const QFileInfo in(source);
        QCOMPARE(written, in.absolutePath() + "/" + in.completeBaseName() + "-2x-compact-2x.png");
        QCOMPARE(w.shownImageFile(), written);
        QCOMPARE(dd::imaging::readImage(written.toStdString()).width, 128);
        const auto text = dd::imaging::readPngText(written.toStdString());
        QCOMPARE(text.at("extras"), std::string("Postprocess upscale by: 2, Postprocess upscaler: compact-2x"));
        QCOMPARE(text.at("parameters"), dd::imaging::readPngText(source.toStdString()).at("parameters"));
        auto* model = w.libraryPanel()->model();
        QTRY_COMPARE_WITH_TIMEOUT(model->rowCount(), 2, 10000);

        const QString notAnUpscaler = QString(DD_FIXTURES_DIR) + "/upscalers/unknown-architecture.safetensors";
        dd::ui::setNextChosenPath(notAnUpscaler);
        emit menu->aboutToShow();
        menu->actions().last()->trigger();  // "Upscaler file…"
        QVERIFY(done.wait(60000));
        QCOMPARE(done.at(1).at(0).toString(), QString());
        QVERIFY2(w.statusBar()->currentMessage().contains("unknown-architecture.safetensors"), qPrintable(w.statusBar()->currentMessage()));
        QCOMPARE(QDir(in.absolutePath()).entryList({"*-2x-*.png"}).size(), 1);
        QSettings().remove("models/upscalerFolders");
    }

    // Rework an image from the window: Send to img2img, a mask from elsewhere, Generate. The result keeps the
    // init image's pixels where the mask is black, a copy of the mask beside it (not a library image), and
    // Verify reruns it identically from those files.
    void sendToImg2ImgAndInpaint() {
        MainWindow w({});
        const QString source = generateAndSendToImg2Img(w);
        QVERIFY(!source.isEmpty());
        auto* panel = w.findChild<QGroupBox*>("imageInputPanel");
        QVERIFY(panel->isChecked());
        QCOMPARE(w.findChild<QLineEdit*>("initImage")->text(), source);
        QVERIFY(w.currentSettings().initImage == source.toStdString());

        QTemporaryDir elsewhere;
        dd::api::Image mask{64, 64, std::vector<uint8_t>(64 * 64 * 3, 0)};
        std::fill(mask.rgb.begin(), mask.rgb.begin() + 64 * 3 * 24, uint8_t(255));  // the top 24 rows repaint
        const QString maskFile = elsewhere.filePath("sky.png");
        dd::imaging::writePng(maskFile.toStdString(), mask);
        w.findChild<QLineEdit*>("maskImage")->setText(maskFile);
        w.findChild<QDoubleSpinBox*>("strength")->setValue(0.9);
        w.findChild<QSpinBox*>("maskBlur")->setValue(2);
        QCOMPARE(w.imageInputPanel()->summary(), QString("inpaint 0.90"));  // what the folded section shows
        const QStringList files = generateAndSave(w);
        QCOMPARE(files.size(), 2);
        const auto made = dd::settings::readSidecar(fileBytes(files.at(1)).toStdString());
        const QString keptMask = QString::fromStdString(dd::settings::sourcePathFor(files.at(0).toStdString(), "mask", "sky.png"));
        QCOMPARE(QString::fromStdString(made.settings.inpaint.mask), QFileInfo(keptMask).fileName());
        QCOMPARE(fileBytes(keptMask), fileBytes(maskFile));
        QCOMPARE(QString::fromStdString(made.settings.initImage), QFileInfo(source).fileName());  // already beside it
        const auto before = dd::imaging::readImage(source.toStdString()), after = dd::imaging::readImage(files.at(0).toStdString());
        QVERIFY(std::equal(after.rgb.end() - 64 * 3 * 30, after.rgb.end(), before.rgb.end() - 64 * 3 * 30));
        QVERIFY(after.rgb != before.rgb);
        auto* model = w.libraryPanel()->model();
        QTRY_COMPARE(model->rowCount(), 2);  // the two images; the kept mask is not one

        QSignalSpy finished(&w, &MainWindow::runFinished);
        w.findChild<QAction*>("canvasVerify")->trigger();
        QVERIFY(finished.wait(120000));
        QVERIFY2(w.lastVerify() && w.lastVerify()->error.isEmpty(), qPrintable(w.lastVerify() ? w.lastVerify()->error : QString()));
        QVERIFY2(w.lastVerify()->identical, qPrintable(w.lastVerify()->report));

        // Use settings on the result brings the image input back, found beside the file.
        panel->setChecked(false);
        QVERIFY(w.restoreFromFile(files.at(0)));
        QVERIFY(panel->isChecked());
        QCOMPARE(QFileInfo(w.findChild<QLineEdit*>("maskImage")->text()).canonicalFilePath(), QFileInfo(keptMask).canonicalFilePath());
    }

    // Outpaint from the window: 32 pixels more on the right; the size follows, the picture is kept where the mask
    // (with its overlap and blur) does not reach, and the sidecar records the extension.
    void outpaintFromTheWindow() {
        MainWindow w({});
        const QString source = generateAndSendToImg2Img(w);
        QVERIFY(!source.isEmpty());
        w.findChild<QSpinBox*>("outpaintRight")->setValue(30);  // grows to 32: a multiple of 8
        QCOMPARE(w.imageInputPanel()->summary(), QString("outpaint to 96×64"));
        const QStringList files = generateAndSave(w);
        QCOMPARE(files.size(), 2);
        const auto before = dd::imaging::readImage(source.toStdString()), after = dd::imaging::readImage(files.at(0).toStdString());
        QCOMPARE(after.width, 96);
        QCOMPARE(after.height, 64);
        const int kept = 64 - 8 - 11;  // the overlap, then the blur's reach (kernel radius int(2.5·4 + 0.5) = 10)
        for (int y = 0; y < 64; ++y)
            QVERIFY(std::equal(after.rgb.begin() + 3 * y * 96, after.rgb.begin() + 3 * (y * 96 + kept), before.rgb.begin() + 3 * y * 64));
        const auto made = dd::settings::readSidecar(fileBytes(files.at(1)).toStdString());
        QCOMPARE(made.settings.outpaint.right, 32);
        QCOMPARE(made.settings.outpaint.fill, std::string("mirror"));
        QCOMPARE(made.settings.width, 96);
    }

    // Paint a mask on the canvas: the shown image becomes the starting image, strokes become the mask the run
    // takes (undo takes a stroke back), and the new result ends the painting.
    void paintAMaskOnTheCanvas() {
        MainWindow w({});
        const QString source = showAnImage(w);
        QVERIFY(!source.isEmpty());
        auto* paint = w.findChild<QAction*>("canvasPaintMask");
        paint->trigger();
        QVERIFY(paint->isChecked());
        QVERIFY(w.findChild<QWidget*>("maskBar")->isVisible());
        QCOMPARE(w.findChild<QLineEdit*>("initImage")->text(), source);
        auto* canvas = w.previewView();
        const QPoint middle = canvas->rect().center() - QPoint(0, 12);
        QTest::mousePress(canvas, Qt::LeftButton, {}, middle - QPoint(40, 0));
        QTest::mouseMove(canvas, middle + QPoint(40, 0));
        QTest::mouseRelease(canvas, Qt::LeftButton, {}, middle + QPoint(40, 0));
        auto* maskField = w.findChild<QLineEdit*>("maskImage");
        const QString painted = maskField->text();
        QVERIFY2(QFile::exists(painted), qPrintable(painted));
        w.findChild<QAction*>("maskUndo")->trigger();
        QVERIFY(maskField->text().isEmpty());  // nothing painted any more: no mask
        w.findChild<QAction*>("maskRedo")->trigger();
        QCOMPARE(maskField->text(), painted);
        // "Only masked": the box the run will work on shows dashed on the canvas; less padding, a box no larger.
        QVERIFY(canvas->maskedArea().isNull());
        w.findChild<QCheckBox*>("onlyMasked")->setChecked(true);
        const QRect box = canvas->maskedArea();
        QVERIFY(!box.isNull() && QRect(QPoint(0, 0), canvas->image().size()).contains(box));
        w.findChild<QSpinBox*>("maskedPadding")->setValue(0);
        QVERIFY(!canvas->maskedArea().isNull() && box.contains(canvas->maskedArea()));

        const QStringList files = generateAndSave(w);
        QCOMPARE(files.size(), 2);
        const auto made = dd::settings::readSidecar(fileBytes(files.at(1)).toStdString());
        const QString kept = QString::fromStdString(dd::settings::sourcePathFor(files.at(0).toStdString(), "mask", painted.toStdString()));
        QCOMPARE(QString::fromStdString(made.settings.inpaint.mask), QFileInfo(kept).fileName());
        QCOMPARE(fileBytes(kept), fileBytes(painted));
        QCOMPARE(made.settings.inpaint.maskHash.size(), size_t(64));
        QVERIFY(made.settings.inpaint.onlyMasked);
        QCOMPARE(made.settings.inpaint.maskedPadding, 0);
        QTRY_VERIFY(!paint->isChecked());  // the canvas shows the new image: the mask was the old one's
        QVERIFY(!w.findChild<QWidget*>("maskBar")->isVisible());
    }

    // Outpaint handles: Extend frames the shown image on the canvas; dragging an edge outwards adds pixels on that
    // side in steps of 8 (the image section follows, and the frame follows the section), and Generate makes the
    // extended picture. Paint mask and Extend take turns: outpainting makes its own mask.
    void extendTheCanvasByDraggingAnEdge() {
        MainWindow w({});
        const QString source = showAnImage(w);
        QVERIFY(!source.isEmpty());
        auto* extend = w.findChild<QAction*>("canvasExtend");
        extend->trigger();
        QVERIFY(extend->isChecked());
        QCOMPARE(w.findChild<QLineEdit*>("initImage")->text(), source);
        auto* canvas = w.previewView();
        const QRectF frame = canvas->extensionFrame();
        QVERIFY(!frame.isNull());

        // The right edge, dragged 40 image pixels out: 40 is a multiple of 8, so exactly 40.
        const QPoint from(qRound(frame.right()), qRound(frame.center().y()));
        const QPoint to = from + QPoint(qRound(40 * canvas->zoom()), 0);
        QTest::mousePress(canvas, Qt::LeftButton, {}, from);
        QTest::mouseMove(canvas, to);
        QTest::mouseRelease(canvas, Qt::LeftButton, {}, to);
        QCOMPARE(w.findChild<QSpinBox*>("outpaintRight")->value(), 40);
        QCOMPARE(canvas->extension(), QMargins(0, 0, 40, 0));
        QVERIFY(canvas->extensionFrame().width() / canvas->zoom() > 64 + 39);
        QCOMPARE(w.imageInputPanel()->summary(), QString("outpaint to 104×64"));
        // Dragged inwards past the picture: nothing added there.
        const QRectF grown = canvas->extensionFrame();
        const QPoint top(qRound(grown.center().x()), qRound(grown.top()));
        QTest::mousePress(canvas, Qt::LeftButton, {}, top);
        QTest::mouseMove(canvas, top + QPoint(0, 30));
        QTest::mouseRelease(canvas, Qt::LeftButton, {}, top + QPoint(0, 30));
        QCOMPARE(w.findChild<QSpinBox*>("outpaintTop")->value(), 0);
        // The section's field moves the frame.
        w.findChild<QSpinBox*>("outpaintBottom")->setValue(16);
        QCOMPARE(canvas->extension(), QMargins(0, 0, 40, 16));

        // Paint mask sets the extension aside, Extend the mask.
        w.findChild<QAction*>("canvasPaintMask")->trigger();
        QVERIFY(!extend->isChecked());
        QCOMPARE(w.imageInputPanel()->outpaint(), QMargins());
        QVERIFY(canvas->extensionFrame().isNull());
        extend->trigger();
        QVERIFY(!w.findChild<QAction*>("canvasPaintMask")->isChecked());
        w.imageInputPanel()->setOutpaint({8, 0, 40, 0});
        QCOMPARE(canvas->extension(), QMargins(8, 0, 40, 0));

        const QStringList files = generateAndSave(w);
        QCOMPARE(files.size(), 2);
        const auto after = dd::imaging::readImage(files.at(0).toStdString());
        QCOMPARE(after.width, 8 + 64 + 40);
        QCOMPARE(after.height, 64);
        const auto made = dd::settings::readSidecar(fileBytes(files.at(1)).toStdString());
        QCOMPARE(made.settings.outpaint.left, 8);
        QCOMPARE(made.settings.outpaint.right, 40);
        QTRY_VERIFY(!extend->isChecked());  // the canvas shows the new picture
        QVERIFY(canvas->extensionFrame().isNull());
    }

    // Variations… on the canvas: neighbours of the shown image as one batch (a grid), each keeping the seed with its
    // own variation seed in its sidecar and A1111 text; Use settings on one and Generate remakes it alone, pixel for
    // pixel.
    void variationsOfTheShownImage() {
        MainWindow w({});
        QTRY_COMPARE_WITH_TIMEOUT(w.modelPicker()->loadedModel(), kDemo, 60000);
        setUp(w);
        const QString source = generateAndSave(w).value(0);
        QVERIFY(!source.isEmpty());
        dd::ui::setDialogHandler([](QDialog* d) {
            if (d->objectName() != "variationsDialog") return int(QDialog::Rejected);
            d->findChild<QSpinBox*>("variationCount")->setValue(3);
            d->findChild<QDoubleSpinBox*>("variationStrength")->setValue(0.3);
            return int(QDialog::Accepted);
        });
        QSignalSpy saved(&w, &MainWindow::imagesSaved);
        w.findChild<QAction*>("canvasVariations")->trigger();
        dd::ui::setDialogHandler([](QDialog*) { return int(QDialog::Rejected); });
        QVERIFY(saved.wait(120000));
        const QStringList files = saved.at(0).at(0).toStringList();
        QCOMPARE(files.size(), 6);  // three images, three sidecars
        QVERIFY(w.previewView()->showsGrid());
        QCOMPARE(w.previewView()->imageCount(), 3);
        int64_t firstVariation = -1;
        QList<QByteArray> pixels;
        for (int i = 0; i < 3; ++i) {
            const auto made = dd::settings::readSidecar(fileBytes(files.at(2 * i + 1)).toStdString());
            const auto seeds = dd::api::imageSeeds(made.settings, made.imageIndex);
            QCOMPARE(seeds.seed, int64_t(4242));
            QCOMPARE(made.settings.variation.strength, 0.3);
            if (i == 0) firstVariation = seeds.variationSeed;
            QCOMPARE(seeds.variationSeed, firstVariation + i);
            const auto text = dd::imaging::readPngText(files.at(2 * i).toStdString());
            QVERIFY(QString::fromStdString(text.at("parameters")).contains(QString("Variation seed: %1, Variation seed strength: 0.3")
                                                                               .arg(firstVariation + i)));
            const auto image = dd::imaging::readImage(files.at(2 * i).toStdString());
            pixels << QByteArray(reinterpret_cast<const char*>(image.rgb.data()), qsizetype(image.rgb.size()));
        }
        QVERIFY(pixels[0] != pixels[1] && pixels[1] != pixels[2]);
        QVERIFY(pixels[0] != fileBytes(source));
        // The panel shows what ran; the third image alone, from its own file.
        QCOMPARE(w.promptPanel()->settings().variation.seed, firstVariation);
        QVERIFY(w.restoreFromFile(files.at(4)));
        w.findChild<QSpinBox*>("batchSize")->setValue(1);
        QCOMPARE(w.promptPanel()->settings().variation.seed, firstVariation + 2);
        const auto alone = dd::imaging::readImage(generateAndSave(w).value(0).toStdString());
        QCOMPARE(QByteArray(reinterpret_cast<const char*>(alone.rgb.data()), qsizetype(alone.rgb.size())), pixels[2]);
    }

    // Wildcards from the Preferences' folder, picked with each run's seed: the sidecar keeps the template and the
    // picked prompt, the A1111 text the picked one, and the same seed picks the same line. A wildcard without its
    // file is a message and nothing is queued.
    void wildcardsInARun() {
        QTemporaryDir wildcards;
        QFile colours(wildcards.filePath("colour.txt"));
        QVERIFY(colours.open(QIODevice::WriteOnly));
        colours.write("red\ngreen\nblue\npurple\n");
        colours.close();
        QSettings().setValue("models/wildcardFolders", QStringList{wildcards.path()});
        MainWindow w({});
        QTRY_COMPARE_WITH_TIMEOUT(w.modelPicker()->loadedModel(), kDemo, 60000);
        setUp(w);
        auto s = w.promptPanel()->settings();
        s.prompt = "a __colour__ star";
        w.promptPanel()->setSettings(s);
        const QStringList files = generateAndSave(w);
        QCOMPARE(files.size(), 2);
        const auto made = dd::settings::readSidecar(fileBytes(files.at(1)).toStdString());
        QCOMPARE(made.settings.promptTemplate, std::string("a __colour__ star"));
        QVERIFY2(QStringList({"a red star", "a green star", "a blue star", "a purple star"}).contains(QString::fromStdString(made.settings.prompt)),
                 made.settings.prompt.c_str());
        const auto text = QString::fromStdString(dd::imaging::readPngText(files.at(0).toStdString()).at("parameters"));
        QVERIFY2(text.startsWith(QString::fromStdString(made.settings.prompt) + "\n"), qPrintable(text));
        QCOMPARE(w.promptPanel()->settings().prompt, std::string("a __colour__ star"));  // the box keeps the template
        const auto again = dd::settings::readSidecar(fileBytes(generateAndSave(w).at(1)).toStdString());
        QCOMPARE(again.settings.prompt, made.settings.prompt);

        s.prompt = "a __hat__";
        w.promptPanel()->setSettings(s);
        const auto before = w.jobs().size();
        QTest::mouseClick(w.findChild<QPushButton*>("generate"), Qt::LeftButton);
        QVERIFY2(w.statusBar()->currentMessage().contains("wildcard __hat__: no hat.txt in"), qPrintable(w.statusBar()->currentMessage()));
        QCOMPARE(w.jobs().size(), before);
    }

    // An X/Y/Z plot from the window: steps × CFG, one queued job a cell, each saved with its sidecar; the sheet is
    // written beside them and shown; a cell's image is byte for byte the image its settings make alone (no batch
    // effects). The dialog says what an axis that does not fit is, and queues nothing.
    void xyzPlotFromTheWindow() {
        MainWindow w({});
        QTRY_COMPARE_WITH_TIMEOUT(w.modelPicker()->loadedModel(), kDemo, 60000);
        setUp(w);
        dd::ui::setDialogHandler([](QDialog* d) {
            if (d->objectName() != "xyzDialog") return int(QDialog::Rejected);
            d->findChild<QComboBox*>("xyzField0")->setCurrentText("steps");
            d->findChild<QLineEdit*>("xyzValues0")->setText("2, 3");
            d->findChild<QComboBox*>("xyzField1")->setCurrentText("cfg_scale");
            d->findChild<QLineEdit*>("xyzValues1")->setText("0-7.5 [2]");
            const QString summary = d->findChild<QLabel*>("xyzSummary")->text();
            if (!summary.contains("4 images")) return int(QDialog::Rejected);
            return int(QDialog::Accepted);
        });
        QSignalSpy finished(&w, &MainWindow::plotFinished);
        QSignalSpy saved(&w, &MainWindow::imagesSaved);
        w.findChild<QAction*>("xyzPlot")->trigger();
        dd::ui::setDialogHandler([](QDialog*) { return int(QDialog::Rejected); });
        QVERIFY(finished.wait(120000));
        const QStringList sheets = finished.at(0).at(0).toStringList();
        QCOMPARE(sheets.size(), 1);
        const auto sheet = dd::imaging::readImage(sheets.at(0).toStdString());
        QVERIFY(sheet.width > 2 * 64 && sheet.height > 2 * 64);
        QVERIFY(QString::fromStdString(dd::imaging::readPngText(sheets.at(0).toStdString()).at("xyz_plot")).contains("cfg_scale"));
        QCOMPARE(saved.size(), 4);
        // The last cell (steps 3, CFG 7.5) alone, from its own file, with a batch of one: the same bytes.
        QString last;
        for (const auto& files : saved) {
            const auto sc = dd::settings::readSidecar(fileBytes(files.at(0).toStringList().at(1)).toStdString());
            if (sc.settings.steps == 3 && sc.settings.cfgScale == 7.5) last = files.at(0).toStringList().at(0);
        }
        QVERIFY(!last.isEmpty());
        QVERIFY(w.restoreFromFile(last));
        const auto alone = dd::imaging::readImage(generateAndSave(w).value(0).toStdString());
        QVERIFY(alone.rgb == dd::imaging::readImage(last.toStdString()).rgb);

        // An axis that does not fit: said, nothing queued.
        const auto before = w.jobs().size();
        QVERIFY(!w.startPlot({dd::compare::PlotAxis{"steps", {"2", "0"}}}));
        QVERIFY(w.statusBar()->currentMessage().contains("steps must be between 1 and 1000"));
        QCOMPARE(w.jobs().size(), before);
    }

    // The hires fix from the window: a second pass at 1.5×, the sidecar and the A1111 text record it, and Use
    // settings brings it back.
    void hiresFixFromTheWindow() {
        MainWindow w({});
        QTRY_COMPARE_WITH_TIMEOUT(w.modelPicker()->loadedModel(), kDemo, 60000);
        setUp(w);
        auto* panel = w.findChild<QGroupBox*>("hiresPanel");
        panel->setChecked(true);
        w.findChild<QDoubleSpinBox*>("hiresScale")->setValue(1.5);
        w.findChild<QDoubleSpinBox*>("hiresDenoising")->setValue(0.5);
        QCOMPARE(w.hiresPanel()->summary(w.promptPanel()->settings()), QString("→ 96×96, denoising 0.50"));
        const QStringList files = generateAndSave(w);
        QCOMPARE(files.size(), 2);
        const auto image = dd::imaging::readImage(files.at(0).toStdString());
        QCOMPARE(image.width, 96);
        const auto made = dd::settings::readSidecar(fileBytes(files.at(1)).toStdString());
        QVERIFY(made.settings.hires.enabled);
        QCOMPARE(made.settings.hires.scale, 1.5);
        QVERIFY(dd::ui::parametersOfFile(files.at(0)).contains("Denoising strength: 0.5, Hires upscale: 1.5, Hires upscaler: Latent"));
        panel->setChecked(false);
        QVERIFY(w.restoreFromFile(files.at(0)));
        QVERIFY(panel->isChecked());
        QCOMPARE(w.findChild<QDoubleSpinBox*>("hiresScale")->value(), 1.5);
        // Starting from an image switches the hires fix off (it is for txt2img), and the other way round.
        w.findChild<QAction*>("canvasSendToImg2Img")->trigger();
        QVERIFY(!panel->isChecked());
        panel->setChecked(true);
        QVERIFY(!w.findChild<QGroupBox*>("imageInputPanel")->isChecked());
        QVERIFY(w.currentSettings().initImage.empty());
    }

    void favouritesRatingsFiltersAndAWatchedFolder() {
        // Three images from "another program" (A1111 text only) in a watched folder, before the start.
        QTemporaryDir watched;
        const auto write = [&](const QString& name, int seed, const char* size, uint8_t shade) {
            dd::api::Image img{8, 8, std::vector<uint8_t>(8 * 8 * 3, shade)};
            const std::string text = std::string("a blue teapot\nSteps: 20, Sampler: Euler a, CFG scale: 7, Seed: ") +
                                     std::to_string(seed) + ", Size: " + size + ", Model: other-model";
            dd::imaging::writePng(watched.filePath(name).toStdString(), img, {{"parameters", text}});
        };
        write("a.png", 1, "512x512", 10);
        write("b.png", 2, "512x768", 20);
        QSettings().setValue("library/watchedFolders", QStringList{watched.path()});
        MainWindow w({});
        auto* panel = w.libraryPanel();
        auto* model = panel->model();
        QTRY_VERIFY_WITH_TIMEOUT(model->isOpen(), 30000);
        QTRY_COMPARE(model->rowCount(), 2);

        // Dropped in while the app runs: it joins the library a moment later.
        write("c.png", 3, "512x512", 30);
        QTRY_COMPARE_WITH_TIMEOUT(model->rowCount(), 3, 15000);

        panel->searchBox()->setText("teapot size:512x768");
        QTRY_COMPARE(model->rowCount(), 1);
        QCOMPARE(model->item(0)->seed, qint64(2));
        panel->searchBox()->setText("seed:abc");
        QTRY_VERIFY(!panel->searchProblem().isEmpty());
        QCOMPARE(model->rowCount(), 3);  // the bad filter is named, not applied
        panel->searchBox()->setText("");
        QTRY_COMPARE(model->rowCount(), 3);

        const qint64 third = model->idAt(0);  // newest first: c.png
        emit panel->favouriteRequested({third}, true);
        emit panel->ratingRequested({model->idAt(2)}, 4);
        QTRY_VERIFY(model->item(0)->favourite);
        panel->findChild<QToolButton*>("libraryFavourites")->setChecked(true);
        QTRY_COMPARE(model->rowCount(), 1);
        QCOMPARE(model->idAt(0), third);
        panel->findChild<QToolButton*>("libraryFavourites")->setChecked(false);
        panel->searchBox()->setText("rating:4");
        QTRY_COMPARE(model->rowCount(), 1);
        QCOMPARE(model->item(0)->seed, qint64(1));

        // The Sort menu: the best rated first; a sampler no image was made with shows none.
        panel->searchBox()->setText("");
        QTRY_COMPARE(model->rowCount(), 3);
        panel->setOrder(dd::library::Sort::Rating);
        QCOMPARE(model->item(0)->seed, qint64(1));
        panel->setSampler("DDIM");
        QCOMPARE(model->rowCount(), 0);
        panel->setSampler("Euler a");
        QCOMPARE(model->rowCount(), 3);
        panel->setSampler({});
        panel->setOrder(dd::library::Sort::Newest);

        // Stepping from the canvas moves through the library's images.
        panel->view()->setCurrentIndex(model->index(0));
        QTRY_COMPARE(w.shownImageFile(), model->item(0)->path);
        emit w.previewView()->stepRequested(1);
        QTRY_COMPARE(w.shownImageFile(), model->item(1)->path);
    }

    void aDamagedIndexIsRebuiltFromTheFolder() {
        QString image;
        {
            MainWindow w({});
            QTRY_COMPARE_WITH_TIMEOUT(w.modelPicker()->loadedModel(), kDemo, 60000);
            setUp(w);
            const auto files = generateAndSave(w);
            QCOMPARE(files.size(), 2);
            image = files.at(0);
        }
        const QString index = dd::ui::LibraryService::defaultIndexFile();
        QFile f(index);
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write("garbage where the index was");
        f.close();
        MainWindow w({});
        auto* model = w.libraryPanel()->model();
        QTRY_VERIFY_WITH_TIMEOUT(model->isOpen(), 30000);
        QTRY_COMPARE(model->rowCount(), 1);  // the image is back, from its file
        QCOMPARE(model->item(0)->path, QFileInfo(image).canonicalFilePath());
        QVERIFY(QFile::exists(index + ".corrupt-1"));
    }
};

QTEST_MAIN(TestStudio)
#include "test_studio.moc"
