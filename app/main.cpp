// diffusiondesk: the desktop app. Opens on the model given as the first argument, the last one used, or (first
// start) the built-in shapes model, else the random-weight demo. `--screenshot DIR` renders the main window, the
// preset dialog, the preferences, a finished generation, the library, a batch grid and the zoomed canvas into
// DIR/*.png (with --screenshot-load MODEL, also that model's load in progress, and the queue) and quits
// (scripts/screenshots.sh runs it under Xvfb).
#include "core/resources.h"
#include "core/settings/a1111_parameters.h"
#include "imaging/png.h"
#include "ui/dialoghooks.h"
#include "ui/engineworker.h"
#include "ui/librarypanel.h"
#include "ui/mainwindow.h"
#include "ui/modelpicker.h"
#include "ui/presetdialog.h"
#include "ui/previewview.h"
#include "ui/promptpanel.h"
#include "ui/queueview.h"
#include "ui/runcontroller.h"

#include <httplib.h>

#include <QApplication>
#include <QDockWidget>
#include <QTableWidget>
#include <QCommandLineParser>
#include <QDir>
#include <QFileInfo>
#include <QPlainTextEdit>
#include <QSemaphore>
#include <QLineEdit>
#include <QMouseEvent>
#include <QScrollArea>
#include <QScrollBar>
#include <QPushButton>
#include <QGroupBox>
#include <QAction>
#include <QCheckBox>
#include <QDialog>
#include <QDoubleSpinBox>
#include <QSettings>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTimer>

#include <atomic>
#include <cstdio>
#include <thread>

namespace {

bool save(QWidget* w, const QString& dir, const QString& name) {
    const QString path = QDir(dir).filePath(name);
    const bool ok = w->grab().save(path);
    std::fprintf(ok ? stdout : stderr, "%s %s\n", ok ? "wrote" : "could not write", qPrintable(path));
    return ok;
}

void wait(int ms) {
    QEventLoop loop;
    QTimer::singleShot(ms, &loop, &QEventLoop::quit);
    loop.exec();
}

// Serve API: a request as an A1111 client sends it, run on the window's queue; its picture on the canvas, the
// queue showing the job, the status bar the address.
bool serveScreenshot(dd::ui::MainWindow& window, const QString& dir) {
    qputenv("DD_API_PORT", "0");  // any free port: the machine may run A1111 itself
    auto* serve = window.findChild<QAction*>("serveApi");
    serve->setChecked(true);
    const int port = window.apiPort();
    if (!port) return false;
    std::atomic<bool> answered{false};
    std::thread client([port, &answered] {
        httplib::Client c("127.0.0.1", port);
        c.set_read_timeout(300);
        c.Post("/sdapi/v1/txt2img", R"({"prompt": "a large red circle in the center on a white background", "seed": 3,
                "steps": 20, "width": 128, "height": 128, "cfg_scale": 3, "sampler_name": "Euler a"})", "application/json");
        answered = true;
    });
    for (int i = 0; i < 3000 && !answered; ++i) wait(100);
    client.join();
    if (auto* queue = window.findChild<QDockWidget*>("queueDock")) queue->raise();
    if (auto* table = window.findChild<QTableWidget*>()) table->scrollToBottom();  // the newest job: the client's
    wait(300);
    const bool ok = save(&window, dir, "serve-api.png");
    serve->setChecked(false);
    return ok;
}

// Another tool's image dropped on the window and reproduced: the live picture saved as A1111 would save it (with an
// extension's key we do not read), restored, then Reproduce; the report shows under the model picker.
bool reproduceScreenshot(dd::ui::MainWindow& window, const QString& dir) {
    const auto* live = window.runController()->lastLive();
    if (!live || live->images.empty()) return false;
    QTemporaryDir folder;
    const QString file = folder.filePath("00042-a1111.png");
    dd::settings::A1111WriteOptions o;
    o.version = "v1.10.1";
    o.extra = {{"ADetailer model", "face_yolov8n.pt"}};
    dd::imaging::writePng(file.toStdString(), live->images[0], {{"parameters", dd::settings::writeA1111Parameters(live->settings, o)}});
    if (!window.restoreFromFile(file)) return false;
    QEventLoop done;
    QObject::connect(&window, &dd::ui::MainWindow::runFinished, &done, &QEventLoop::quit);
    QTimer::singleShot(300000, &done, &QEventLoop::quit);
    if (auto* reproduce = window.findChild<QPushButton*>("reproduceButton")) reproduce->click();
    done.exec();
    if (auto* scroll = window.findChild<QScrollArea*>("settingsScroll")) scroll->verticalScrollBar()->setValue(0);
    wait(300);
    return save(&window, dir, "reproduce.png");
}

// A real load caught half way: the worker waits at the VAE until the window (picker with its progress bar and
// Cancel) was grabbed, then the load goes on.
bool loadingScreenshot(dd::ui::MainWindow& window, const QString& model, const QString& dir) {
    auto* worker = window.worker();
    QSemaphore grabbed;
    bool ok = false;
    const auto hook = QObject::connect(worker, &dd::ui::EngineWorker::modelLoading, worker,
                                       [&](const QString&, const QString& part) {
                                           if (part != "vae") return;
                                           QMetaObject::invokeMethod(&window, [&] {
                                               ok = save(&window, dir, "model-loading.png");
                                               grabbed.release();
                                           }, Qt::QueuedConnection);
                                           grabbed.acquire();
                                       }, Qt::DirectConnection);
    const QString before = window.modelPicker()->currentModel();
    window.modelPicker()->choose(model);
    for (int i = 0; i < 600 && window.modelPicker()->loading(); ++i) wait(100);
    QObject::disconnect(hook);
    window.modelPicker()->choose(before);  // the generation shots stay on the window's model
    for (int i = 0; i < 600 && window.modelPicker()->loading(); ++i) wait(100);
    return ok;
}

// A fixed scene on the model the window opened (the built-in shapes model, or the demo at a small size), so the
// run takes seconds on a CPU; `loadModel` is also shown loading.
int screenshots(dd::ui::MainWindow& window, const QString& dir, const QString& loadModel) {
    QDir().mkpath(dir);
    window.resize(1280, 800);
    window.show();
    auto* panel = window.promptPanel();
    for (int i = 0; i < 600 && window.modelPicker()->loading(); ++i) wait(100);
    dd::api::GenerationSettings s = panel->settings();
    if (dd::isEmbeddedModel(window.modelPicker()->currentModel().toStdString())) {
        // The built-in model draws what it was trained on; its size and CFG the window set when it loaded.
        s.prompt = "a large yellow star in the center on a blue background";
        s.negativePrompt.clear();
        s.seed = 7;
    } else {
        s.prompt = "a lighthouse on a cliff at sunset, (oil painting:1.2), [blurry], dramatic sky";
        s.negativePrompt = "lowres, watermark";
        s.steps = 8;
        s.width = s.height = 128;
        s.seed = 1234;
    }
    panel->setSettings(s);
    wait(1500);  // model inspected, a memory sample in, token counts drawn
    bool ok = save(&window, dir, "main-window.png");
    auto grabDialog = [&](const QString& name, void (dd::ui::MainWindow::*open)()) {
        dd::ui::setDialogHandler([&](QDialog* d) {
            d->show();
            wait(300);
            ok = save(d, dir, name) && ok;
            return int(QDialog::Rejected);
        });
        (window.*open)();
        dd::ui::setDialogHandler({});
    };
    grabDialog("preset-dialog.png", &dd::ui::MainWindow::openPresetDialog);
    grabDialog("preferences.png", &dd::ui::MainWindow::openPreferences);
    if (!loadModel.isEmpty()) ok = loadingScreenshot(window, loadModel, dir) && ok;
    // Two runs through the queue; the main window is grabbed once while the first runs and the second waits.
    panel->findChild<QSpinBox*>("batchCount")->setValue(2);
    bool queued = false;
    QObject::connect(window.worker(), &dd::ui::EngineWorker::progress, &window, [&](int step) {
        if (queued || step < 4 || !window.queueView()->ids().contains("job-2")) return;
        queued = true;
        ok = save(&window, dir, "queue.png") && ok;
    });
    QEventLoop done;
    QObject::connect(&window, &dd::ui::MainWindow::runFinished, &done, &QEventLoop::quit);
    QTimer::singleShot(300000, &done, &QEventLoop::quit);
    window.startGeneration();
    done.exec();
    wait(300);
    ok = save(&window, dir, "generation.png") && ok;
    // The library after the two runs, searched by a word of their prompt.
    window.libraryPanel()->searchBox()->setText(QString::fromStdString(s.prompt).section(' ', 2, 2));
    wait(800);
    ok = save(&window, dir, "library.png") && ok;
    // A batch of four as a grid on the canvas, then one of them alone, zoomed in.
    panel->findChild<QSpinBox*>("batchCount")->setValue(1);
    panel->findChild<QSpinBox*>("batchSize")->setValue(4);
    QTimer::singleShot(300000, &done, &QEventLoop::quit);
    window.startGeneration();
    done.exec();
    wait(300);
    ok = save(&window, dir, "batch-grid.png") && ok;
    window.previewView()->setCurrentIndex(2);
    window.previewView()->setZoom(2.5);
    wait(300);
    ok = save(&window, dir, "viewer.png") && ok;
    // Four variations of that image at strength 0.4 (the dialog answered as a person would), then that image again.
    dd::ui::setDialogHandler([](QDialog* d) {
        if (auto* count = d->findChild<QSpinBox*>("variationCount")) count->setValue(4);
        if (auto* strength = d->findChild<QDoubleSpinBox*>("variationStrength")) strength->setValue(0.4);
        return int(QDialog::Accepted);
    });
    QTimer::singleShot(300000, &done, &QEventLoop::quit);
    if (auto* variations = window.findChild<QAction*>("canvasVariations")) variations->trigger();
    dd::ui::setDialogHandler({});
    done.exec();
    wait(300);
    ok = save(&window, dir, "variations.png") && ok;
    s = panel->settings();
    s.variation = {};
    panel->setSettings(s);
    window.previewView()->setCurrentIndex(2);
    // A mask painted over that image (one stroke across its middle), then the inpainting it makes.
    window.previewView()->fitToView();
    if (auto* paint = window.findChild<QAction*>("canvasPaintMask")) paint->trigger();
    if (auto* size = window.findChild<QSpinBox*>("brushSize")) size->setValue(window.previewView()->image().width() / 4);
    auto* canvas = window.previewView();
    const QPointF middle = QRectF(canvas->rect()).center() - QPointF(0, 12);
    const QPointF from = middle - QPointF(canvas->width() / 6.0, 0), to = middle + QPointF(canvas->width() / 6.0, -canvas->height() / 10.0);
    auto mouse = [&](QEvent::Type type, QPointF at, Qt::MouseButtons held) {
        QMouseEvent e(type, at, canvas->mapToGlobal(at), Qt::LeftButton, held, Qt::NoModifier);
        QCoreApplication::sendEvent(canvas, &e);
    };
    mouse(QEvent::MouseButtonPress, from, Qt::LeftButton);
    for (int i = 1; i <= 8; ++i) mouse(QEvent::MouseMove, from + (to - from) * (i / 8.0), Qt::LeftButton);
    mouse(QEvent::MouseButtonRelease, to, Qt::NoButton);
    mouse(QEvent::MouseMove, to, Qt::NoButton);  // the brush circle where the stroke ended
    // "Only masked": the box the run works on shows dashed around the stroke.
    if (auto* onlyMasked = window.findChild<QCheckBox*>("onlyMasked")) onlyMasked->setChecked(true);
    if (auto* padding = window.findChild<QSpinBox*>("maskedPadding")) padding->setValue(8);
    panel->findChild<QSpinBox*>("batchSize")->setValue(1);
    wait(300);
    ok = save(&window, dir, "mask-editor.png") && ok;
    QTimer::singleShot(300000, &done, &QEventLoop::quit);
    window.startGeneration();
    done.exec();
    wait(300);
    ok = save(&window, dir, "inpainting.png") && ok;
    // That picture extended by half its width on the right (outpainting): Extend, its right edge dragged out.
    if (auto* extend = window.findChild<QAction*>("canvasExtend")) extend->trigger();
    wait(100);
    const QRectF frame = canvas->extensionFrame();
    const QPointF edge(frame.right(), frame.center().y());
    const QPointF pulled = edge + QPointF(frame.width() / 2, 0);
    mouse(QEvent::MouseButtonPress, edge, Qt::LeftButton);
    for (int i = 1; i <= 8; ++i) mouse(QEvent::MouseMove, edge + (pulled - edge) * (i / 8.0), Qt::LeftButton);
    mouse(QEvent::MouseButtonRelease, pulled, Qt::NoButton);
    // The settings column scrolled to the section that holds it.
    if (auto* scroll = window.findChild<QScrollArea*>("settingsScroll"))
        if (auto* section = window.findChild<QWidget*>("imageInputSection")) scroll->ensureWidgetVisible(section, 0, 0);
    wait(300);
    ok = save(&window, dir, "extend.png") && ok;
    QTimer::singleShot(300000, &done, &QEventLoop::quit);
    window.startGeneration();
    done.exec();
    wait(300);
    ok = save(&window, dir, "outpainting.png") && ok;
    // Live: the prompt edited with Live on; the canvas follows, Keep would save the picture.
    if (auto* image = window.findChild<QGroupBox*>("imageInputPanel")) image->setChecked(false);
    if (auto* scroll = window.findChild<QScrollArea*>("settingsScroll")) scroll->verticalScrollBar()->setValue(0);
    s = panel->settings();
    s.prompt = "a large red circle in the center on a white background";
    panel->setSettings(s);
    auto* live = window.findChild<QPushButton*>("live");
    live->click();
    auto shows = [&](const std::string& text) {
        const auto* last = window.runController()->lastLive();
        return !window.runController()->running() && last && last->settings.prompt == text;
    };
    for (int i = 0; i < 600 && !shows(s.prompt); ++i) wait(100);
    auto* prompt = panel->promptEdit();
    prompt->setPlainText(QStringLiteral("a large green circle in the center on a white background"));
    for (int i = 0; i < 600 && !shows(prompt->toPlainText().toStdString()); ++i) wait(100);
    wait(300);
    ok = save(&window, dir, "live.png") && ok;
    live->click();
    ok = reproduceScreenshot(window, dir) && ok;
    return serveScreenshot(window, dir) && ok ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QApplication::setApplicationName("DiffusionDesk");
    QApplication::setOrganizationName("DiffusionDesk");
    QApplication::setApplicationVersion(DD_VERSION);
    QGuiApplication::setDesktopFileName("diffusiondesk");  // Wayland matches the window to the .desktop entry
    QCommandLineParser parser;
    parser.setApplicationDescription("DiffusionDesk: Stable Diffusion on your machine");
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument("model", "A diffusers folder, a .safetensors checkpoint or demo:tiny-sd1; or an image, "
                                          "sidecar or A1111 .txt whose settings to restore (the desktop file association)");
    QCommandLineOption screenshot("screenshot", "Render the main window, the preset dialog and a generation into DIR, then quit.", "DIR");
    parser.addOption(screenshot);
    QCommandLineOption screenshotLoad("screenshot-load", "With --screenshot: also render the loading of MODEL.", "MODEL");
    parser.addOption(screenshotLoad);
    parser.process(app);

    // Screenshots start from a clean slate, not the user's saved layout and settings.
    QTemporaryDir scratch;
    if (parser.isSet(screenshot)) {
        QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, scratch.path());
        qputenv("XDG_DATA_HOME", scratch.path().toUtf8());  // the queue's journal and the library too
        QSettings().setValue("saving/outputFolder", scratch.filePath("output"));
    }

    const QStringList args = parser.positionalArguments();
    // Opening a PNG/JPEG/WebP, a sidecar or a .txt (file manager, MIME association) restores its settings on the
    // last model; anything else is a model to open.
    QString first = args.isEmpty() ? QString() : args.first();
    // First start: the built-in shapes model, so a fresh install makes pictures before any download.
    const QString shapes = QString::fromStdString(dd::installedEmbeddedModel().string());
    if (first.isEmpty() && QSettings().value("lastModel").toString().isEmpty() && !parser.isSet(screenshot))
        first = shapes;
    static const QStringList kSettingsFiles = {"png", "jpg", "jpeg", "webp", "json", "txt"};
    const bool settingsFile = !first.isEmpty() && kSettingsFiles.contains(QFileInfo(first).suffix().toLower());
    dd::ui::MainWindow window(settingsFile ? QString() : first);
    if (settingsFile) window.restoreFromFile(first);
    if (parser.isSet(screenshot)) return screenshots(window, parser.value(screenshot), parser.value(screenshotLoad));
    if (QSettings().value("window/geometry").isNull()) window.resize(1200, 800);  // first start; later the saved layout
    window.show();
    return QApplication::exec();
}
