// diffusiondesk-cli as a user runs it: a report on good input, one clear line and a non-zero exit on bad.
#include "core/library/library.h"
#include "imaging/png.h"

#include <QProcess>
#include <QSize>
#include <QTemporaryDir>
#include <QtTest>

class TestCli : public QObject {
    Q_OBJECT

    struct Run {
        int code;
        QString out, err;
    };
    static Run cli(const QStringList& args, const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
        return run(QString(DD_BINARY_DIR) + "/bin/diffusiondesk-cli", args, env);
    }
    static Run run(const QString& program, const QStringList& args, const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
        QProcess p;
        p.setProcessEnvironment(env);
        p.start(program, args);
        if (!p.waitForFinished(120000)) return {-1, {}, "timeout"};
        return {p.exitCode(), QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError())};
    }

private slots:
    void printsVersion() {
        const Run r = cli({"--version"});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.out.startsWith("DiffusionDesk " DD_VERSION " (libtorch "), qPrintable(r.out));
        // The CLI runs on the allocator the build links (cmake/DDAllocator.cmake): tcmalloc unless sanitized.
        const char* allocator = DD_EXPECT_TCMALLOC ? ", tcmalloc)" : ", glibc malloc)";
        QVERIFY2(r.out.trimmed().endsWith(allocator), qPrintable(r.out));
    }

    // The commands top-level --help lists, each from its own option table.
    static QStringList commands() {
        const Run r = cli({"--help"});
        QStringList names;
        bool inList = false;
        for (const QString& line : r.out.split('\n')) {
            if (line == "commands:") inList = true;
            else if (inList && line.startsWith("  ")) names << line.trimmed().section(' ', 0, 0);
        }
        return names;
    }

    // `COMMAND --help` anywhere on the line prints that command's usage and exits 0; so does --version.
    void everyCommandExplainsItself() {
        const QStringList names = commands();
        for (const char* expected : {"inspect", "generate", "batch", "upscale", "verify", "bench", "completion"}) QVERIFY2(names.contains(expected), expected);
        for (const QString& name : names) {
            const Run help = cli({name, "--help"});
            QVERIFY2(help.code == 0 && help.err.isEmpty(), qPrintable(name + ": " + help.err));
            QVERIFY2(help.out.startsWith("usage: diffusiondesk-cli " + name), qPrintable(help.out));
            QVERIFY2(help.out.contains("  --help, -h") && help.out.contains("  --version"), qPrintable(help.out));
            const Run version = cli({name, "--version"});
            QVERIFY2(version.code == 0 && version.out.startsWith("DiffusionDesk " DD_VERSION), qPrintable(name + ": " + version.err));
        }
        const Run late = cli({"bench", "--model", "demo:tiny-sd1", "-h"});  // after other options too
        QVERIFY2(late.code == 0 && late.out.contains("--rows ROW[,ROW]"), qPrintable(late.err));
        const Run generate = cli({"generate", "--help"});
        for (const char* option : {"--prediction-type auto|epsilon|v_prediction", "--threads N", "--control-resize NAME", "--lora-mode merge|side"})
            QVERIFY2(generate.out.contains(option), option);
    }

    // The bash completion is the tables' too: the build writes it (and the package installs that file), and it
    // completes commands, options, choices with spaces, and files where a file is wanted.
    void bashCompletesFromTheTables() {
        const Run script = cli({"completion", "bash"});
        QVERIFY2(script.code == 0, qPrintable(script.err));
        QFile built(QString(DD_BINARY_DIR) + "/share/bash-completion/completions/diffusiondesk-cli");
        QVERIFY2(built.open(QIODevice::ReadOnly), qPrintable(built.fileName()));
        QCOMPARE(QString::fromUtf8(built.readAll()), script.out);
        auto complete = [&](const QString& words) {
            const QString probe = QString("source '%1'; COMP_WORDS=(%2); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); "
                                          "_diffusiondesk_cli; printf '%s\\n' \"${COMPREPLY[@]}\"")
                                      .arg(built.fileName(), words);
            const Run r = run("bash", {"-c", probe});
            return r.out.split('\n', Qt::SkipEmptyParts);
        };
        QCOMPARE(complete("diffusiondesk-cli ge"), QStringList{"generate"});
        QCOMPARE(complete("diffusiondesk-cli bench --st"), QStringList{"--steps"});
        QCOMPARE(complete("diffusiondesk-cli generate --sampler 'Euler'"), (QStringList{"Euler", "Euler\\ a"}));
        QCOMPARE(complete("diffusiondesk-cli generate --precision ''"), (QStringList{"fp32", "fp16", "bf16"}));
        QVERIFY(complete("diffusiondesk-cli generate --steps ''").isEmpty());  // a number: nothing to offer
        QVERIFY(!complete("diffusiondesk-cli bench --one").contains("--one-row"));  // internal
        const QStringList files = complete(QString("diffusiondesk-cli inspect '%1/models/tiny-sd'").arg(DD_FIXTURES_DIR));
        QVERIFY2(files.contains(QString(DD_FIXTURES_DIR) + "/models/tiny-sd2"), qPrintable(files.join(", ")));
    }

    // libgomp reads how its threads wait once, before main(): the programs choose a short spin unless the user
    // chose (app/openmp_waiting.cpp), and hand the environment on unchanged otherwise.
    void openMpWaitingIsChosenBeforeLibrariesStart() {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove("OMP_WAIT_POLICY");
        env.remove("GOMP_SPINCOUNT");
        env.insert("OMP_DISPLAY_ENV", "VERBOSE");
        env.insert("_", "/usr/bin/diffusiondesk-cli");
        const Run chosen = cli({"--version"}, env);
        QVERIFY2(chosen.err.contains("GOMP_SPINCOUNT = '10000'"), qPrintable(chosen.err));
        env.insert("OMP_WAIT_POLICY", "PASSIVE");
        const Run users = cli({"--version"}, env);
        QVERIFY2(users.err.contains("OMP_WAIT_POLICY = 'PASSIVE'") && users.err.contains("GOMP_SPINCOUNT = '0'"), qPrintable(users.err));
        // The lent slot is given back before main(), and the choice stays for child processes (bench's rows).
        env.remove("OMP_WAIT_POLICY");
        env.remove("OMP_DISPLAY_ENV");
        const QString probe = QString(DD_BINARY_DIR) + "/tests/openmp_waiting_probe";
        for (bool underscore : {true, false}) {  // without "_", another variable lends its slot
            if (!underscore) env.remove("_");
            QStringList expected = env.toStringList();
            expected << "GOMP_SPINCOUNT=10000";
            expected.sort();
            const Run r = run(probe, {}, env);
            QCOMPARE(r.out.split('\n', Qt::SkipEmptyParts), expected);
        }
        env.insert("OMP_DISPLAY_ENV", "VERBOSE");
        const QString app = QString(DD_BINARY_DIR) + "/bin/diffusiondesk";
        if (QFile::exists(app)) {
            env.insert("QT_QPA_PLATFORM", "offscreen");
            const Run gui = run(app, {"--version"}, env);
            QVERIFY2(gui.err.contains("GOMP_SPINCOUNT = '10000'"), qPrintable(gui.err));
        }
    }

    // Before a run the CLI predicts its peak against the preset's budget and, when over it, says what would fit;
    // --dry-run stops there (no --out needed, nothing generated).
    void overBudgetIsWarnedWithAdvice() {
        const Run over = cli({"generate", "--model", "demo:tiny-sd1", "--prompt", "a cat", "--size", "1024x1024",
                              "--preset", "4gb", "--dry-run"});
        QVERIFY2(over.code == 0, qPrintable(over.err));
        QVERIFY2(over.err.contains("preset 4gb budget 3.7 GB"), qPrintable(over.err));
        QVERIFY2(over.err.contains(QRegularExpression("warning: needs [0-9.]+ GB, preset budget 3.7 GB: enable VAE tiling")),
                 qPrintable(over.err));
        QVERIFY(over.out.trimmed().isEmpty());  // no image written
        const Run fits = cli({"generate", "--model", "demo:tiny-sd1", "--prompt", "a cat", "--size", "64x64",
                              "--preset", "4gb", "--dry-run"});
        QVERIFY2(fits.code == 0 && fits.err.contains("predicted peak") && !fits.err.contains("warning"), qPrintable(fits.err));
    }

    // A preset sets the plan (the sidecar records it); an unknown one names the shipped choices.
    void presetReachesTheSidecar() {
        QTemporaryDir dir;
        const Run r = cli({"generate", "--model", "demo:tiny-sd1", "--prompt", "a cat", "--steps", "1", "--size", "64x64",
                           "--preset", "cpu", "--attention", "chunked", "--out", dir.path()});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY2(r.err.contains("preset cpu budget"), qPrintable(r.err));
        const QString png = r.out.trimmed();
        QFile sidecar(png.left(png.lastIndexOf('.')) + ".json");
        QVERIFY2(sidecar.open(QIODevice::ReadOnly), qPrintable(sidecar.fileName()));
        const QByteArray json = sidecar.readAll();
        QVERIFY2(QString(json).contains(QRegularExpression("\"preset\":\\s*\"cpu\"")), json.constData());
        QVERIFY2(QString(json).contains(QRegularExpression("\"attention\":\\s*\"chunked\"")), json.constData());
        const Run bad = cli({"generate", "--model", "demo:tiny-sd1", "--preset", "5gb", "--out", dir.path()});
        QCOMPARE(bad.code, 1);
        QVERIFY2(bad.err.contains("unknown preset '5gb'") && bad.err.contains("8gb"), qPrintable(bad.err));
    }

    void inspectsSingleFile() {
        const QString model = QString(DD_FIXTURES_DIR) + "/models/tiny-sdxl.safetensors";
        const Run r = cli({"inspect", model});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY(r.out.contains("family:     SDXL"));
        QVERIFY(r.out.contains("format:     single file"));
        QVERIFY(r.out.contains("component:  text_encoder_2"));
        QVERIFY(r.out.contains(QRegularExpression("hash:       [0-9a-f]{10}  \\(A1111")));
        QVERIFY(r.out.contains(QRegularExpression("parameters: [0-9,]+")));
    }

    void inspectsDiffusersFolder() {
        const Run r = cli({"inspect", QString(DD_FIXTURES_DIR) + "/models/tiny-sd2"});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY(r.out.contains("family:     SD 2.x"));
        QVERIFY(r.out.contains(QRegularExpression("component:  unet  [0-9,]+ parameters in [0-9]+ tensors \\(Float")));
    }

    void badInputIsOneClearLine_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("expected");
        QTest::newRow("missing file") << QStringList{"inspect", "/nonexistent/model.safetensors"} << "no such file or folder";
        QTest::newRow("unknown command") << QStringList{"frobnicate"} << "unknown command 'frobnicate'";
        QTest::newRow("missing argument") << QStringList{"inspect"} << "inspect needs PATH";
        QTest::newRow("option without its value") << QStringList{"bench", "--steps"} << "--steps needs a value (N) (see diffusiondesk-cli bench --help)";
        QTest::newRow("option of another command") << QStringList{"verify", "x.json", "--steps", "3"} << "unknown option '--steps' for verify";
        QTest::newRow("not a whole number") << QStringList{"generate", "--steps", "2.5"} << "--steps expects a whole number, got '2.5'";
        QTest::newRow("unknown sampler") << QStringList{"generate", "--model", "demo:tiny-sd1", "--prompt", "x", "--sampler", "Foo", "--out", "/tmp/x.png"}
                                         << "unknown sampler 'Foo' (known: Euler, Euler a,";
        QTest::newRow("size not a multiple of 8") << QStringList{"generate", "--model", "demo:tiny-sd1", "--prompt", "x", "--size", "65x64", "--out", "/tmp/x.png"}
                                                  << "size 65x64 is not a positive multiple of 8";
        QTest::newRow("unknown prediction type") << QStringList{"generate", "--model", "demo:tiny-sd1", "--prompt", "x", "--prediction-type", "x0", "--out", "/tmp/x.png"}
                                                 << "prediction type 'x0' is unknown";
        QTest::newRow("missing model") << QStringList{"generate", "--model", "/nonexistent/m.safetensors", "--prompt", "x", "--out", "/tmp/x.png"}
                                       << "/nonexistent/m.safetensors: no such file or folder";
    }
    void badInputIsOneClearLine() {
        QFETCH(QStringList, args);
        QFETCH(QString, expected);
        const Run r = cli(args);
        QVERIFY(r.code != 0);
        QVERIFY2(r.err.startsWith("error: ") && r.err.contains(expected), qPrintable(r.err));
        QCOMPARE(r.err.count('\n'), 1);  // one line
    }

    // `upscale` computes spandrel's picture (tiles whose overlap covers the network's reach change nothing), keeps
    // the source's generation parameters and adds A1111's "extras" chunk; an upscaler is found by name too.
    void upscalesAsSpandrel() {
        const QString fixtures = QString(DD_FIXTURES_DIR) + "/upscalers";
        QTemporaryDir dir;
        const QString out = dir.filePath("big.png");
        const Run r = cli({"upscale", fixtures + "/compact-4x.input.png", "--model", "compact-4x", "--upscaler-dir", fixtures,
                           "--tile", "8", "--overlap", "8", "--out", out});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY2(r.out.contains("image:      22x20 -> 88x80") && r.out.contains("RealESRGAN Compact"), qPrintable(r.out));
        QVERIFY2(r.err.contains("tile 9/9"), qPrintable(r.err));
        const auto got = dd::imaging::readImage(out.toStdString());
        const auto want = dd::imaging::readImage((fixtures + "/compact-4x.expected.png").toStdString());
        QCOMPARE(got.width, want.width);
        QCOMPARE(got.height, want.height);
        int worst = 0;
        for (size_t i = 0; i < got.rgb.size(); ++i) worst = std::max(worst, std::abs(int(got.rgb[i]) - int(want.rgb[i])));
        QVERIFY2(worst <= 1, qPrintable(QString("largest difference %1/255").arg(worst)));
        const auto text = dd::imaging::readPngText(out.toStdString());
        QCOMPARE(QString::fromStdString(text.at("parameters")), QString("a lighthouse\nSteps: 20, Sampler: Euler a, Seed: 7, Size: 22x20"));
        QCOMPARE(QString::fromStdString(text.at("extras")), QString("Postprocess upscale by: 4, Postprocess upscaler: compact-4x"));
    }

    // Without --size a run takes the model's own size (UNet sample_size × VAE scale): 64 for the demo (32 × 2),
    // 128 for the built-in shapes model however it is named; --size and a restored size win.
    void sizeComesFromTheModel() {
        QTemporaryDir dir;
        const auto sizeOf = [&](const QStringList& args, const QString& name) {
            const Run r = cli(QStringList{"generate", "--prompt", "a red star", "--steps", "1", "--out", dir.filePath(name)} + args);
            if (r.code != 0) qWarning("%s", qPrintable(r.err));
            const auto image = dd::imaging::readImage(dir.filePath(name).toStdString());
            return QSize(image.width, image.height);
        };
        QCOMPARE(sizeOf({"--model", "demo:tiny-sd1"}, "demo.png"), QSize(64, 64));
        QCOMPARE(sizeOf({}, "builtin.png"), QSize(128, 128));
        QCOMPARE(sizeOf({"--model", QString(DD_SOURCE_DIR) + "/resources/models/shapes"}, "shapes.png"), QSize(128, 128));
        QCOMPARE(sizeOf({"--model", "demo:tiny-sd1", "--size", "48x32"}, "given.png"), QSize(48, 32));
        QCOMPARE(sizeOf({"--from", dir.filePath("given.json")}, "restored.png"), QSize(48, 32));
    }

    // An X/Y/Z plot from the command line: one image and sidecar a cell, and a sheet per Z value beside them.
    void xyzPlotWritesCellsAndSheets() {
        QTemporaryDir dir;
        const Run r = cli({"generate", "--model", "demo:tiny-sd1", "--prompt", "a red boat", "--steps", "2", "--size", "32x32",
                           "--seed", "5", "--no-library", "--plot-x", "steps=2-3", "--plot-y", "prompt_sr=red,blue",
                           "--plot-z", "cfg_scale=1,7", "--out", dir.path()});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY2(r.err.contains("X/Y/Z plot: 8 images"), qPrintable(r.err));
        QCOMPARE(QDir(dir.path()).entryList({"*.json"}, QDir::Files).size(), 8);
        for (const char* sheet : {"xyz-0001.png", "xyz-0002.png"}) {
            const auto image = dd::imaging::readImage(dir.filePath(sheet).toStdString());
            QVERIFY2(image.width > 64 && image.height > 64, sheet);
            QVERIFY(dd::imaging::readPngText(dir.filePath(sheet).toStdString()).at("parameters").find("a red boat") == 0);
        }
        QVERIFY(!QFile::exists(dir.filePath("xyz-0003.png")));
        const Run bad = cli({"generate", "--model", "demo:tiny-sd1", "--prompt", "a boat", "--plot-x", "prompt_sr=red,blue",
                             "--out", dir.path()});
        QVERIFY2(bad.code != 0 && bad.err.contains("Prompt S/R did not find 'red'"), qPrintable(bad.err));
        const Run file = cli({"generate", "--model", "demo:tiny-sd1", "--prompt", "a boat", "--plot-x", "steps=2,3",
                              "--out", dir.filePath("one.png")});
        QVERIFY2(file.code != 0 && file.err.contains("--out names a folder"), qPrintable(file.err));
    }

    // A negative embedding from --embeddings-dir: hashed in the sidecar and the infotext; --from without the folder
    // says the embedding is missing.
    void embeddingsFromTheirFolder() {
        QTemporaryDir dir;
        const QString embeddings = DD_FIXTURES_DIR "/textual_inversion/embeddings";
        const QString out = dir.filePath("ti.png");
        const Run r = cli({"generate", "--model", "demo:tiny-sd1", "--prompt", "a red boat", "--negative", "tinyneg, blurry",
                           "--steps", "2", "--size", "32x32", "--no-library", "--embeddings-dir", embeddings, "--out", out});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const std::string text = dd::imaging::readPngText(out.toStdString()).at("parameters");
        QVERIFY2(text.find("TI hashes: \"tinyneg: ") != std::string::npos, text.c_str());
        QFile sidecar(dir.filePath("ti.json"));
        QVERIFY(sidecar.open(QIODevice::ReadOnly));
        QVERIFY(sidecar.readAll().contains("\"embeddings\""));
        const Run again = cli({"generate", "--from", out, "--model", "demo:tiny-sd1", "--no-library", "--out", dir.filePath("again.png")});
        QVERIFY2(again.code == 0 && again.err.contains("'tinyneg'") && again.err.contains("not in the embeddings folders"),
                 qPrintable(again.err));
    }

    // A hires fix through an upscaler network: named in the infotext, hashed in the sidecar, and --from (with the
    // network found by name again) makes the same picture, pixel for pixel.
    void hiresWithAnUpscalerNetworkRoundTrips() {
        const QString upscalers = QString(DD_FIXTURES_DIR) + "/hires";
        QTemporaryDir dir;
        const QStringList common{"--upscaler-dir", upscalers, "--deterministic"};
        const Run r = cli(QStringList{"generate", "--model", "demo:tiny-sd1", "--prompt", "a lighthouse", "--steps", "3",
                                      "--size", "32x32", "--seed", "3", "--hires-upscaler", "tiny-compact-2x",
                                      "--hires-denoising", "0.5", "--out", dir.filePath("a.png")} + common);
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const auto text = dd::imaging::readPngText(dir.filePath("a.png").toStdString());
        QVERIFY2(QString::fromStdString(text.at("parameters")).contains("Hires upscaler: tiny-compact-2x"), text.at("parameters").c_str());
        QFile sidecar(dir.filePath("a.json"));
        QVERIFY(sidecar.open(QIODevice::ReadOnly));
        QVERIFY(QString(sidecar.readAll()).contains(QRegularExpression("\"upscaler_hash\":\\s*\"[0-9a-f]{10}\"")));
        const Run again = cli(QStringList{"generate", "--from", dir.filePath("a.json"), "--out", dir.filePath("b.png")} + common);
        QVERIFY2(again.code == 0, qPrintable(again.err));
        const auto a = dd::imaging::readImage(dir.filePath("a.png").toStdString());
        const auto b = dd::imaging::readImage(dir.filePath("b.png").toStdString());
        QCOMPARE(a.width, 64);
        QVERIFY(a.rgb == b.rgb);
        const Run missing = cli({"generate", "--from", dir.filePath("a.json"), "--out", dir.filePath("c.png")});
        QCOMPARE(missing.code, 1);
        QVERIFY2(missing.err.contains("upscaler 'tiny-compact-2x' not found"), qPrintable(missing.err));
    }

    // Each bad input is one line naming the file and the problem, and no output file appears.
    void upscaleRefusesBadInput_data() {
        const QString fixtures = QString(DD_FIXTURES_DIR) + "/upscalers";
        const QString image = fixtures + "/compact-4x.input.png", model = fixtures + "/compact-2x.safetensors";
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("expected");
        QTest::newRow("unknown architecture") << QStringList{image, "--model", fixtures + "/unknown-architecture.safetensors"}
                                              << "unknown-architecture.safetensors";
        QTest::newRow("pickle") << QStringList{image, "--model", QString(DD_FIXTURES_DIR) + "/upscalers/cases.json.pth"}
                                << "never unpickles";
        QTest::newRow("not an image") << QStringList{fixtures + "/cases.json", "--model", model} << "cannot read as an image";
        QTest::newRow("name not found") << QStringList{image, "--model", "4x-UltraSharp", "--upscaler-dir", fixtures}
                                        << "upscaler '4x-UltraSharp' not found (looked for 4x-UltraSharp.safetensors in";
        QTest::newRow("SD checkpoint") << QStringList{image, "--model", QString(DD_FIXTURES_DIR) + "/models/tiny-sdxl.safetensors"}
                                       << "tiny-sdxl.safetensors";
    }
    void upscaleRefusesBadInput() {
        QFETCH(QStringList, args);
        QFETCH(QString, expected);
        QTemporaryDir dir;
        const QString pickle = QString(DD_FIXTURES_DIR) + "/upscalers/cases.json.pth";
        if (args.contains(pickle)) {  // a pickle is refused by its name, before anything reads it
            args.replace(args.indexOf(pickle), dir.filePath("4x-model.pth"));
            QFile f(dir.filePath("4x-model.pth"));
            QVERIFY(f.open(QIODevice::WriteOnly) && f.write("PK\x03\x04") == 4);
        }
        const QString out = dir.filePath("big.png");
        const Run r = cli(QStringList{"upscale"} + args + QStringList{"--out", out});
        QVERIFY(r.code != 0);
        QVERIFY2(r.err.startsWith("error: ") && r.err.contains(expected), qPrintable(r.err));
        QCOMPARE(r.err.count('\n'), 1);
        QVERIFY(!QFile::exists(out));
    }

    void generatesWithParameters() {
        QTemporaryDir dir;
        const QString out = dir.filePath("demo.png");
        const Run r = cli({"generate", "--model", "demo:tiny-sd1", "--prompt", "a (red:1.2) apple", "--steps", "2", "--size",
                           "32x32", "--seed", "5", "--batch", "2", "--out", out});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QStringList names{"demo-1.png", "demo-2.png"};
        for (const QString& name : names) {
            QFile f(dir.filePath(name));
            QVERIFY2(f.open(QIODevice::ReadOnly), qPrintable(name));
            const QByteArray png = f.readAll();
            QVERIFY(png.startsWith("\x89PNG"));
            QVERIFY(png.contains("parameters"));
            QVERIFY(png.contains("a (red:1.2) apple\nSteps: 2, Sampler: Euler a"));
            QVERIFY(png.contains(name == "demo-1.png" ? "Seed: 5," : "Seed: 6,"));  // image i uses seed + i
        }
    }

    // What the CLI writes joins the window's image library (with thumbnails), unless --no-library.
    void generatedImagesJoinTheLibrary() {
        QTemporaryDir dir;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("XDG_DATA_HOME", dir.filePath("data"));
        const QStringList common{"generate", "--model", "demo:tiny-sd1", "--steps", "1", "--size", "32x32", "--out", dir.path()};
        Run r = cli(common + QStringList{"--prompt", "a quiet harbour at dawn"}, env);
        QVERIFY2(r.code == 0, qPrintable(r.err));
        r = cli(common + QStringList{"--prompt", "a busy harbour at noon", "--no-library"}, env);
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const std::string db = dir.filePath("data/DiffusionDesk/DiffusionDesk/library.db").toStdString();
        QVERIFY2(QFile::exists(QString::fromStdString(db)), db.c_str());
        dd::library::Library lib(db);
        dd::library::Query harbour;
        harbour.text = "harbour";
        const auto found = lib.ids(harbour);
        QCOMPARE(found.size(), size_t(1));
        const auto e = lib.byId(found[0]);
        QCOMPARE(QFileInfo(QString::fromStdString(e->path)).absolutePath(), QFileInfo(dir.path()).canonicalFilePath());
        QCOMPARE(e->prompt, std::string("a quiet harbour at dawn"));
        QVERIFY(!lib.thumbnail(found[0]).empty());
    }

    // A single file's scheduler settings set from the command line reach the PNG text and the sidecar.
    void schedulerOverridesReachTheSidecar() {
        QTemporaryDir dir;
        const QString out = dir.filePath("sd2.png");
        const Run r = cli({"generate", "--model", QString(DD_FIXTURES_DIR) + "/single_file/sd2.safetensors", "--prompt", "a cat",
                           "--steps", "2", "--size", "64x64", "--prediction-type", "epsilon", "--timestep-spacing", "trailing",
                           "--out", out});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QFile png(out), sidecar(dir.filePath("sd2.json"));
        QVERIFY(png.open(QIODevice::ReadOnly) && sidecar.open(QIODevice::ReadOnly));
        QVERIFY(png.readAll().contains("Prediction type: epsilon, Timestep spacing: trailing"));
        const QString json = sidecar.readAll();
        QVERIFY2(json.contains(QRegularExpression("\"prediction_type\":\\s*\"epsilon\"")), qPrintable(json));
        QVERIFY2(json.contains(QRegularExpression("\"timestep_spacing\":\\s*\"trailing\"")), qPrintable(json));
    }

    // No --model: the built-in shapes model at its own size and guidance scale, as the app opens on it.
    void generatesOnTheBuiltInModelByDefault() {
        QTemporaryDir dir;
        const QString out = dir.filePath("star.png");
        const Run r = cli({"generate", "--prompt", "a large yellow star", "--steps", "4", "--seed", "3", "--out", out});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QFile f(out);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray png = f.readAll();
        QVERIFY2(png.contains("CFG scale: 3, Seed: 3, Size: 128x128") && png.contains("Model: shapes"), png.constData());
    }

    // --refiner: the PNG's A1111 text names it with its hash and switch; --from finds it again by hash in --models
    // under another name (docs/refiner.md).
    void refinerRoundTrip() {
        QTemporaryDir dir, models;
        const QString fixtures(DD_FIXTURES_DIR);
        const QString refiner = models.filePath("my-refiner.safetensors");
        QVERIFY(QFile::copy(fixtures + "/refiner/tiny-sdxl-refiner-e2e.safetensors", refiner));
        const QString base = fixtures + "/pipeline/tiny-sdxl-e2e";
        const Run r = cli({"generate", "--model", base, "--refiner", refiner, "--refiner-switch", "0.7", "--prompt", "a fox",
                           "--steps", "4", "--size", "64x64", "--sampler", "Euler", "--out", dir.filePath("a.png")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QFile a(dir.filePath("a.png"));
        QVERIFY(a.open(QIODevice::ReadOnly));
        const QByteArray png = a.readAll();
        const QRegularExpression key("Refiner: my-refiner \\[[0-9a-f]{10}\\], Refiner switch at: 0.7");
        QVERIFY2(QString::fromLatin1(png).contains(key), "no Refiner key");
        QVERIFY(QFile::rename(refiner, models.filePath("renamed.safetensors")));
        const Run again = cli({"generate", "--from", dir.filePath("a.png"), "--model", base, "--models", models.path(),
                               "--out", dir.filePath("b.png")});
        QVERIFY2(again.code == 0, qPrintable(again.err));
        QFile b(dir.filePath("b.png"));
        QVERIFY(b.open(QIODevice::ReadOnly));
        QVERIFY(QString::fromLatin1(b.readAll()).contains("Refiner: renamed ["));
        const Run none = cli({"generate", "--model", base, "--refiner", models.filePath("missing.safetensors"), "--prompt", "x",
                              "--out", dir.path()});
        QCOMPARE(none.code, 1);
        QVERIFY2(none.err.contains("missing.safetensors") && none.err.contains("--refiner"), qPrintable(none.err));
    }

    // ControlNet flags: the unit reaches the sidecar and the A1111 text, and --from reproduces the image when the
    // ControlNet is in --controlnet-dir and the control image in the output folder.
    void controlNetFlags() {
        QTemporaryDir dir;
        const QString control = dir.filePath("control.png");
        QCOMPARE(cli({"generate", "--model", "demo:tiny-sd1", "--prompt", "x", "--steps", "1", "--size", "64x64", "--out", control}).code, 0);
        const QString fixtures = QString(DD_FIXTURES_DIR);
        const QString first = dir.filePath("first.png");
        const Run r = cli({"generate", "--model", fixtures + "/pipeline/tiny-sd1-e2e", "--prompt", "a house", "--steps", "2",
                           "--size", "64x64", "--controlnet", fixtures + "/controlnet/cn-sd1-a", "--control-image", control,
                           "--control-preprocessor", "canny", "--control-thresholds", "50,150", "--control-weight", "0.7",
                           "--control-end", "0.5", "--out", first});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QFile png(first);
        QVERIFY(png.open(QIODevice::ReadOnly));
        const QByteArray bytes = png.readAll();
        QVERIFY2(bytes.contains("ControlNet 0: \"Module: canny, Model: cn-sd1-a ["), bytes.constData());
        QVERIFY(bytes.contains("Threshold A: 50, Threshold B: 150, Guidance Start: 0, Guidance End: 0.5"));
        QFile sidecar(dir.filePath("first.json"));
        QVERIFY(sidecar.open(QIODevice::ReadOnly));
        QVERIFY(QString(sidecar.readAll()).contains(QRegularExpression("\"preprocessor\":\\s*\"canny\"")));

        const QString again = dir.filePath("again.png");
        const Run missing = cli({"generate", "--from", first, "--model", fixtures + "/pipeline/tiny-sd1-e2e", "--out", again});
        QVERIFY2(missing.code != 0 && missing.err.contains("--controlnet-dir"), qPrintable(missing.err));
        const Run rerun = cli({"generate", "--from", first, "--model", fixtures + "/pipeline/tiny-sd1-e2e", "--controlnet-dir",
                               fixtures + "/controlnet", "--out", again});
        QVERIFY2(rerun.code == 0, qPrintable(rerun.err));
        QFile second(again);
        QVERIFY(second.open(QIODevice::ReadOnly));
        // The metadata differs (timings, the image path as given); the pixels must not.
        const auto pixels = [](const QByteArray& png) { return png.mid(png.indexOf("IDAT")); };
        QVERIFY2(pixels(second.readAll()) == pixels(bytes), "the restored ControlNet run gave another image");

        const Run orphan = cli({"generate", "--model", "demo:tiny-sd1", "--control-weight", "1", "--out", dir.path()});
        QVERIFY2(orphan.code != 0 && orphan.err.contains("must follow the --controlnet"), qPrintable(orphan.err));
    }

    void truncatedFileNamesTheProblem() {
        QTemporaryDir dir;
        const QString path = dir.filePath("cut.safetensors");
        QFile::copy(QString(DD_FIXTURES_DIR) + "/models/tiny-sd1.safetensors", path);
        QFile f(path);
        QVERIFY(f.open(QIODevice::ReadWrite));
        QVERIFY(f.resize(f.size() / 2));
        f.close();
        const Run r = cli({"inspect", path});
        QVERIFY(r.code != 0);
        QVERIFY2(r.err.startsWith("error: " + path + ": truncated: tensor '"), qPrintable(r.err));
        QCOMPARE(r.err.count('\n'), 1);
    }
};

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"
