// diffusiondesk-cli verify as a user runs it: a sidecar + PNG made by the engine verify as identical (exit 0);
// a changed pixel is reported with its difference (exit 3); bare settings run twice; bad input is one line.
#include "core/compare/verify.h"
#include "core/settings/sidecar.h"
#include "imaging/png.h"
#include "tests/common/test_program.h"

#include <nlohmann/json.hpp>

#include <QProcess>
#include <QTemporaryDir>
#include <QDir>
#include <QtTest>

#include <fstream>

namespace test_cli_verify {  // the test program is a unity build: each file keeps its names

using namespace dd;

namespace {

struct Run {
    int code;
    QString out, err;
};

Run cli(const QStringList& args) {
    QProcess p;
    p.start(QString(DD_BINARY_DIR) + "/bin/diffusiondesk-cli", args);
    p.waitForFinished(300000);
    return {p.exitCode(), QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError())};
}

api::GenerationSettings demo() {
    api::GenerationSettings s;
    s.model = pipeline::kDemoModel;
    s.prompt = "a red bicycle";
    s.seed = 77;
    s.steps = 3;
    s.width = s.height = 48;
    s.batchSize = 2;
    s.deterministic = true;
    return s;
}

void writeText(const QString& path, const std::string& text) { std::ofstream(path.toStdString()) << text; }

} // namespace

class TestCliVerify : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;

private slots:
    void initTestCase() {
        // Image 1 of a batch of 2, with its sidecar, as the app writes them.
        pipeline::Engine engine;
        api::CancelToken cancel;
        const auto result = engine.generate(demo(), cancel, nullptr);
        settings::Sidecar sc;
        sc.settings = result.settings;
        sc.modelName = pipeline::kDemoModel;
        sc.seeds = {77, 78};
        sc.imageIndex = 1;
        sc.environment = result.environment;
        sc.appVersion = DD_VERSION;
        imaging::writePng(m_dir.filePath("img.png").toStdString(), result.images[1]);
        writeText(m_dir.filePath("img.json"), settings::writeSidecar(sc));
    }

    void identicalRerun() {
        const Run r = cli({"verify", m_dir.filePath("img.json")});
        QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
        QVERIFY2(r.out.contains("against " + m_dir.filePath("img.png")) && r.out.contains("\nidentical\n") &&
                     r.out.contains("image 1 (seed 78): sha256 " +
                                    QString::fromStdString(compare::pixelSha256(imaging::readImage(m_dir.filePath("img.png").toStdString())))),
                 qPrintable(r.out));
    }

    void changedPixelIsReported() {
        auto img = imaging::readImage(m_dir.filePath("img.png").toStdString());
        img.rgb[0] = uint8_t(img.rgb[0] ^ 0x08);
        imaging::writePng(m_dir.filePath("changed.png").toStdString(), img);
        const Run r = cli({"verify", m_dir.filePath("img.json"), "--image", m_dir.filePath("changed.png")});
        QVERIFY2(r.code == 3, qPrintable(r.out + r.err));
        QVERIFY2(r.out.contains("NOT identical") && r.out.contains("max |diff| 8") && r.out.contains("1 of 2304 pixels differ") &&
                     r.out.contains("SSIM "),
                 qPrintable(r.out));
    }

    // An image another tool made (A1111 text alone, an extension's key, a LoRA this machine lacks), and a ComfyUI
    // graph: restored, rerun, and reported field by field.
    void againstAnotherToolsImage() {
        const auto made = imaging::readImage(m_dir.filePath("img.png").toStdString());
        imaging::writePng(m_dir.filePath("a1111.png").toStdString(), made,
                          {{"parameters", "a red bicycle <lora:faraway:0.6>\nSteps: 3, Sampler: Euler a, Schedule type: Automatic, "
                                          "CFG scale: 7, Seed: 78, Size: 48x48, ADetailer model: face_yolov8n.pt, RNG: CPU, "
                                          "Version: v1.10.1"}});
        const Run r = cli({"verify", "--against", m_dir.filePath("a1111.png"), "--model", "demo:tiny-sd1"});
        // The image was made without the LoRA (its tag is cut out of the prompt either way): the same pixels.
        QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
        QVERIFY2(r.out.contains("made with: AUTOMATIC1111 (v1.10.1)") && r.out.contains("matched:   prompt, negative prompt, steps") &&
                     r.out.contains("LoRA 'faraway' is in none of the LoRA folders: the rerun is without it") &&
                     r.out.contains("ADetailer model: face_yolov8n.pt") && r.out.contains("pixels:    identical"),
                 qPrintable(r.out));

        imaging::writePng(m_dir.filePath("comfy.png").toStdString(), made,
                          {{"prompt", R"({"1": {"class_type": "KSampler", "inputs": {"seed": 78, "steps": 3, "cfg": 7,
                              "sampler_name": "dpm_adaptive", "scheduler": "normal", "denoise": 1, "positive": ["2", 0],
                              "negative": ["3", 0], "latent_image": ["4", 0]}},
                              "2": {"class_type": "CLIPTextEncode", "inputs": {"text": "a red bicycle"}},
                              "3": {"class_type": "CLIPTextEncode", "inputs": {"text": ""}},
                              "4": {"class_type": "EmptyLatentImage", "inputs": {"width": 48, "height": 48, "batch_size": 1}},
                              "5": {"class_type": "VAEDecode", "inputs": {"samples": ["1", 0]}},
                              "6": {"class_type": "SaveImage", "inputs": {"images": ["5", 0]}}})"}});
        const Run c = cli({"verify", "--against", m_dir.filePath("comfy.png"), "--model", "demo:tiny-sd1"});
        QVERIFY2(c.code == 3, qPrintable(c.out + c.err));
        QVERIFY2(c.out.contains("made with: ComfyUI") &&
                     c.out.contains("sampler 'DPM adaptive' is not one DiffusionDesk has: restored as 'DPM++ 2M'"),
                 qPrintable(c.out));
    }

    void bareSettingsRunTwice() {
        nlohmann::json j = demo();
        j["batch_size"] = 1;
        writeText(m_dir.filePath("settings.json"), j.dump());
        const Run r = cli({"verify", m_dir.filePath("settings.json")});
        QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
        QVERIFY2(r.out.contains("identical (no recorded image: the settings were run twice)"), qPrintable(r.out));
    }

    // A hires fix with a variation seed and an edited prompt, in a batch of two: each image verifies bit for bit
    // from its own sidecar (the second keeps the seed, with variation seed + 1).
    void hiresVariationAndEditingReproduce() {
        QTemporaryDir dir;
        const Run r = cli({"generate", "--prompt", "a [red:blue:0.5] door", "--model", "demo:tiny-sd1", "--steps", "3",
                           "--size", "32x32", "--seed", "4", "--deterministic", "--hires", "--hires-scale", "1.5",
                           "--hires-denoising", "0.6", "--variation-seed", "11", "--variation-strength", "0.3", "--batch", "2",
                           "--no-library", "--out", dir.path()});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const QStringList images = QDir(dir.path()).entryList({"*.png"}, QDir::Files, QDir::Name);
        QCOMPARE(images.size(), 2);
        for (const QString& image : images) {
            const Run v = cli({"verify", dir.filePath(image)});
            QVERIFY2(v.code == 0 && v.out.contains("\nidentical\n"), qPrintable(v.out + v.err));
        }
        const auto text = imaging::readPngText(dir.filePath(images.at(1)).toStdString()).at("parameters");
        QVERIFY2(text.find("Seed: 4, ") != std::string::npos && text.find("Variation seed: 12,") != std::string::npos, text.c_str());
    }

    // An inpainting made by the CLI records its init image and mask (names and SHA-256) and verifies bit for bit
    // from the files next to it; bad masks are one line each.
    void inpaintingReproduces() {
        QTemporaryDir dir;
        api::Image init{48, 48, std::vector<uint8_t>(48 * 48 * 3, 120)};
        api::Image mask{48, 48, std::vector<uint8_t>(48 * 48 * 3, 0)};
        for (size_t i = 0; i < mask.rgb.size() / 2; ++i) mask.rgb[i] = 255;  // the top half repaints
        imaging::writePng(dir.filePath("wall.png").toStdString(), init);
        imaging::writePng(dir.filePath("wall-mask.png").toStdString(), mask);
        const QStringList common{"generate", "--prompt", "a door", "--model", "demo:tiny-sd1", "--steps", "3", "--size", "48x48",
                                 "--seed", "9", "--deterministic", "--init", dir.filePath("wall.png"), "--strength", "0.8",
                                 "--no-library"};
        Run r = cli(common + QStringList{"--mask", dir.filePath("wall-mask.png"), "--mask-blur", "2", "--out", dir.filePath("door.png")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        std::ifstream in(dir.filePath("door.json").toStdString());
        const auto sidecar = nlohmann::json::parse(in);
        const auto& inpaint = sidecar["settings"]["inpaint"];
        QCOMPARE(inpaint["mask"].get<std::string>(), std::string("wall-mask.png"));
        QCOMPARE(inpaint["mask_blur"].get<int>(), 2);
        QCOMPARE(inpaint["mask_hash"].get<std::string>().size(), size_t(64));
        QCOMPARE(sidecar["settings"]["init_image_hash"].get<std::string>().size(), size_t(64));
        // The bottom rows were not masked: they are the init image's.
        const auto out = imaging::readImage(dir.filePath("door.png").toStdString());
        QVERIFY(std::all_of(out.rgb.end() - 48 * 3 * 10, out.rgb.end(), [](uint8_t v) { return v == 120; }));
        QVERIFY(out.rgb != init.rgb);

        r = cli({"verify", dir.filePath("door.png")});
        QVERIFY2(r.code == 0 && r.out.contains("\nidentical\n"), qPrintable(r.out + r.err));

        // Outpainting: the size follows the extension (grown to a multiple of 8), and it verifies from the init image.
        QStringList unsized = common;
        unsized.remove(unsized.indexOf("--size"), 2);
        r = cli(common + QStringList{"--outpaint", "0,0,12,0", "--out", dir.filePath("sized.png")});
        QVERIFY2(r.code != 0 && r.err.contains("set the size to the extended one"), qPrintable(r.err));  // --size disagrees
        r = cli(unsized + QStringList{"--outpaint", "0,0,12,0", "--out", dir.filePath("wider.png")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QCOMPARE(imaging::readImage(dir.filePath("wider.png").toStdString()).width, 64);
        r = cli({"verify", dir.filePath("wider.png")});
        QVERIFY2(r.code == 0 && r.out.contains("\nidentical\n"), qPrintable(r.out + r.err));
        r = cli(common + QStringList{"--outpaint", "1,2,3", "--out", dir.filePath("bad.png")});
        QVERIFY2(r.code != 0 && r.err.contains("--outpaint expects four numbers"), qPrintable(r.err));

        writeText(dir.filePath("notes.txt"), "not an image");
        for (const auto& [maskFile, expected] : {std::pair{dir.filePath("notes.txt"), QString("notes.txt: cannot read as an image")},
                                                 std::pair{dir.filePath("wall.png"), QString("the mask is empty")}}) {
            r = cli(common + QStringList{"--mask", maskFile, "--out", dir.filePath("bad.png")});
            QVERIFY2(r.code != 0 && r.err.startsWith("error: ") && r.err.contains(expected) && r.err.count('\n') == 1, qPrintable(r.err));
            QVERIFY(!QFile::exists(dir.filePath("bad.png")));
        }
    }

    void badInputIsOneLine() {
        for (const QStringList& args : {QStringList{"verify"}, QStringList{"verify", m_dir.filePath("missing.json")},
                                        QStringList{"verify", m_dir.filePath("img.json"), "--bogus", "1"}}) {
            const Run r = cli(args);
            QCOMPARE(r.code, 1);
            QVERIFY2(r.err.startsWith("error: ") && r.err.count('\n') == 1, qPrintable(r.err));
        }
        writeText(m_dir.filePath("junk.json"), "{not json");
        const Run r = cli({"verify", m_dir.filePath("junk.json")});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("junk.json") && r.err.count('\n') == 1, qPrintable(r.err));
    }
};

DD_REGISTER_TEST(TestCliVerify)

} // namespace test_cli_verify
#include "test_cli_verify.moc"
