// Settings -> image file -> settings, for PNG, JPEG and WebP: every field of GenerationSettings (memory plan
// included) comes back through the embedded sidecar, and the A1111 text is what A1111 itself would write.
#include "core/queue/durable_file.h"
#include "core/settings/a1111_parameters.h"
#include "core/settings/image_metadata.h"
#include "core/settings/restore.h"
#include "imaging/export.h"
#include "imaging/png.h"

#include <QDir>
#include <QTemporaryDir>
#include <QtTest>
#include <nlohmann/json.hpp>

#include <fstream>

using namespace dd;
using namespace dd::settings;

namespace {

// Every field away from its default, so a field that is lost cannot pass by accident.
Sidecar everyField() {
    Sidecar sc;
    auto& s = sc.settings;
    s.model = "/models/dreamshaper_8.safetensors";
    s.prompt = "a (red:1.2) car, at night\nsecond line: ünïcode ✓ 猫";
    s.negativePrompt = "blurry, \"quoted\"";
    s.seed = 4294967296;
    s.steps = 31;
    s.cfgScale = 6.5;
    s.guidanceRescale = 0.25;
    s.sampler = "DPM++ 2M";
    s.scheduleType = "Karras";
    s.width = 640;
    s.height = 448;
    s.batchSize = 3;
    s.clipSkip = 2;
    s.promptSyntax = "reference";
    s.emphasis = "No norm";
    s.initImage = "/home/alice/in.png";
    s.strength = 0.55;
    s.preset = "6gb";
    s.plan.device = "cuda:1";
    s.plan.unet = api::Precision::BF16;
    s.plan.textEncoder = api::Precision::FP16;
    s.plan.vae = api::Precision::FP16;
    s.plan.vaeUpcast = false;
    s.plan.attention = api::Attention::Chunked;
    s.plan.attentionSliceSize = 3;
    s.plan.queryChunkSize = 256;
    s.plan.vaeSlicing = true;
    s.plan.vaeTiling = true;
    s.plan.channelsLast = true;
    s.plan.offload = api::Offload::Group;
    s.plan.groupBlocks = 2;
    s.plan.fp8Storage = "e4m3fn";
    s.plan.threads = 6;
    s.deterministic = true;
    sc.modelName = "dreamshaper_8.safetensors";
    sc.modelHash = "879db523c3";
    sc.seeds = {4294967296, 4294967297, 4294967298};
    sc.imageIndex = 1;
    sc.environment = {"0.1.0", "2.15.0", "CPU", "unet=bf16", "chunked", "group", 6, true};
    sc.appVersion = "0.1.0";
    sc.createdAt = "2025-01-31T12:00:00Z";
    sc.timings = {1, 2, {3}, 4};
    return sc;
}

api::Image gradient(int w, int h) {
    api::Image img{w, h, {}};
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) img.rgb.insert(img.rgb.end(), {uint8_t(x * 4), uint8_t(y * 4), uint8_t((x + y) * 2)});
    return img;
}

std::string readAll(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

} // namespace

class TestExportRoundTrip : public QObject {
    Q_OBJECT
private slots:
    void everyFieldRoundTrips_data() {
        QTest::addColumn<QString>("format");
        QTest::newRow("png") << "png";
        QTest::newRow("jpeg") << "jpeg";
        QTest::newRow("webp") << "webp";
    }
    void everyFieldRoundTrips() {
        QFETCH(QString, format);
        QTemporaryDir dir;
        const Sidecar sc = everyField();
        imaging::ExportRequest req;
        req.folder = dir.path().toStdString();
        req.format = imaging::exportFormatFromName(format.toStdString());
        req.date = "2025-01-31";
        const auto f = imaging::exportImage(req, gradient(64, 48), sc, "dreamshaper_8");
        QVERIFY2(QFile::exists(QString::fromStdString(f.image)), f.image.c_str());
        QVERIFY(QFile::exists(QString::fromStdString(f.sidecar)));
        QCOMPARE(imaging::readImage(f.image).width, 64);  // still decodes after the metadata was added

        const Restored r = restoreFromFile(f.image);
        QCOMPARE(QString::fromStdString(r.source), format);
        QCOMPARE(r.format, std::string("diffusiondesk"));
        api::GenerationSettings want = sc.settings;
        want.model.clear();                 // a path never comes back: the model is found by name / hash
        want.initImage = "in.png";          // only the bare name, looked up inside the output folder
        want.seed = sc.settings.seed + 1;   // this file is image 2 of the batch
        QCOMPARE(nlohmann::json(r.settings).dump(), nlohmann::json(want).dump());
        QCOMPARE(r.modelName, std::string("dreamshaper_8.safetensors"));
        QCOMPARE(r.modelHash, std::string("879db523c3"));
        QVERIFY(r.sidecar.has_value());
        QVERIFY(r.sidecar->environment.deterministic);

        // The A1111 text is there too, in A1111's place for the format, and reads back on its own.
        const auto text = readImageText(readAll(f.image), f.image).text;
        QVERIFY(text.count("parameters"));
        const GenerationInfo a = parseA1111Parameters(text.at("parameters"));
        QCOMPARE(a.settings.prompt, sc.settings.prompt);
        QCOMPARE(a.settings.seed, sc.settings.seed + 1);
        QCOMPARE(a.settings.sampler, std::string("DPM++ 2M"));
        QCOMPARE(a.settings.scheduleType, std::string("Karras"));
        QCOMPARE(a.modelHash, std::string("879db523c3"));

        // The sidecar file carries what the image does not: the time.
        const Sidecar side = readSidecar(readAll(f.sidecar));
        QCOMPARE(side.createdAt, sc.createdAt);
        QCOMPARE(side.timings.decodeSeconds, 4.0);
        QVERIFY(readAll(f.image).find("2025-01-31T12") == std::string::npos);
    }

    // A1111's exact layout and key order (create_infotext), stored as Pillow stores it: tEXt for Latin-1 text.
    void pngParametersAsA1111WritesThem() {
        Sidecar sc;
        sc.settings.prompt = "a photo of a café";
        sc.settings.negativePrompt = "blurry";
        sc.settings.seed = 42;
        sc.settings.sampler = "DPM++ 2M Karras";
        sc.settings.clipSkip = 2;
        sc.modelHash = "6ce0161689";
        sc.appVersion = "0.1.0";
        const auto m = imaging::metadataFor(sc, "v1-5-pruned-emaonly");
        QCOMPARE(m.parameters, std::string("a photo of a café\nNegative prompt: blurry\nSteps: 20, Sampler: DPM++ 2M, "
                                           "Schedule type: Karras, Sampler implementation: diffusers, CFG scale: 7, Seed: 42, Size: 512x512, "
                                           "Model hash: 6ce0161689, Model: v1-5-pruned-emaonly, Clip skip: 2, RNG: CPU, "
                                           "Version: DiffusionDesk 0.1.0"));
        const std::string png = imaging::encodePng(gradient(8, 8), {{"parameters", m.parameters}, {kSidecarPngKey, m.settingsJson}}, {kSidecarPngKey});
        QVERIFY(png.find(std::string("tEXtparameters\0a photo of a caf\xe9", 31)) != std::string::npos);  // Latin-1 é
        QVERIFY(png.find(std::string("iTXtdiffusiondesk\0\0\0\0\0{", 23)) != std::string::npos);
        sc.settings.prompt = "猫";
        const auto cjk = imaging::metadataFor(sc, "m");
        const std::string png2 = imaging::encodePng(gradient(8, 8), {{"parameters", cjk.parameters}});
        QVERIFY(png2.find(std::string("iTXtparameters\0\0\0\0\0\xe7\x8c\xab", 22)) != std::string::npos);  // UTF-8 in iTXt
        QCOMPARE(readImageText(png2, "x").text.at("parameters"), cjk.parameters);
    }

    // JPEG: EXIF UserComment as piexif writes it ("UNICODE\0" + UTF-16BE), which A1111 and Civitai read.
    void jpegUserCommentIsPiexifUnicode() {
        Sidecar sc;
        sc.settings.prompt = "ünïcode ✓";
        const auto m = imaging::metadataFor(sc, "m");
        const std::string jpg = imaging::encodeImage(gradient(16, 16), imaging::ExportFormat::Jpeg, m);
        std::string be("UNICODE\0\0\xfc\0n\0\xef\0c", 16);  // "ünïc" in UTF-16BE, as piexif's "unicode" dump
        QVERIFY(jpg.find(be) != std::string::npos);
        QVERIFY(jpg.find(encodeUserComment(m.parameters)) != std::string::npos);
        QCOMPARE(readImageText(jpg, "x.jpg").text.at("parameters"), m.parameters);
        QTemporaryDir d;
        const std::string p = d.filePath("a.jpg").toStdString();
        std::ofstream(p, std::ios::binary) << jpg;
        QCOMPARE(imaging::readImage(p).width, 16);  // still a valid JPEG after Exiv2 added the metadata
    }

    void encodingIsDeterministic() {
        const auto m = imaging::metadataFor(everyField(), "d");
        for (auto f : {imaging::ExportFormat::Png, imaging::ExportFormat::Jpeg, imaging::ExportFormat::Webp})
            QVERIFY(imaging::encodeImage(gradient(32, 32), f, m) == imaging::encodeImage(gradient(32, 32), f, m));
    }

    void namesFromTemplateNeverOverwrite() {
        QTemporaryDir dir;
        Sidecar sc;
        sc.settings.prompt = "A red/car: at *night*, very ../../etc";
        sc.settings.seed = 7;
        imaging::ExportRequest req;
        req.folder = dir.path().toStdString();
        req.date = "2025-01-31";
        const auto a = imaging::exportImage(req, gradient(8, 8), sc, "m");
        const auto b = imaging::exportImage(req, gradient(8, 8), sc, "m");
        QCOMPARE(QFileInfo(QString::fromStdString(a.image)).fileName(), QString("2025-01-31-00001-7-A_red_car_at_night_very.png"));
        QCOMPARE(QFileInfo(QString::fromStdString(b.image)).fileName(), QString("2025-01-31-00002-7-A_red_car_at_night_very.png"));
        req.nameTemplate = "fixed";
        const auto c = imaging::exportImage(req, gradient(8, 8), sc, "m");
        const auto d = imaging::exportImage(req, gradient(8, 8), sc, "m");
        QCOMPARE(QFileInfo(QString::fromStdString(c.image)).fileName(), QString("fixed.png"));
        QCOMPARE(QFileInfo(QString::fromStdString(d.image)).fileName(), QString("fixed-2.png"));
        QVERIFY_THROWS_EXCEPTION(queue::FileExistsError,
                                 imaging::exportImageAs(c.image, imaging::ExportFormat::Png, 95, gradient(8, 8), sc, "m"));
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden).size(), 8);  // 4 images + 4 sidecars, no temporaries
    }

    void fileNameTemplate_data() {
        QTest::addColumn<QString>("pattern");
        QTest::addColumn<QString>("expected");
        QTest::newRow("default") << kDefaultFileNameTemplate << "2025-01-31-00012-42-a_cat_in_a_hat_on";
        QTest::newRow("words") << "{prompt:2}" << "a_cat";
        QTest::newRow("fields") << "{model}_{width}x{height}_{steps}_{sampler}_{index}" << "sd15_512x768_20_Euler a_3";
        QTest::newRow("no leading dot") << "..{seed}" << "42";
        QTest::newRow("reserved") << "CON" << "_CON";
        QTest::newRow("slashes") << "a/b\\c" << "a_b_c";
        QTest::newRow("empty") << "" << "image";
    }
    void fileNameTemplate() {
        QFETCH(QString, pattern);
        QFETCH(QString, expected);
        FileNameFields f{"2025-01-31", "120000", 12, 42, "a cat, in a hat on a mat", "sd15", 512, 768, 20, "Euler a", 3};
        QCOMPARE(QString::fromStdString(expandFileName(pattern.toStdString(), f)), expected);
    }
    void badTemplatesAreNamed() {
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, expandFileName("{nope}", {}));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, expandFileName("{seed", {}));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, expandFileName("{counter:x}", {}));
        QCOMPARE(expandFileName(std::string(300, 'x'), {}).size(), std::size_t(150));
    }
};

QTEST_GUILESS_MAIN(TestExportRoundTrip)
#include "test_export_roundtrip.moc"
