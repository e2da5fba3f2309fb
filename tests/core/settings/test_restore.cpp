// restoreFromBytes / restoreFromFile on what users drop on the window: A1111 text in its many real-world shapes,
// other tools' metadata, sidecars and settings JSON, and hostile input (paths, sizes, bad UTF-8, broken files).
#include "core/settings/image_metadata.h"
#include "core/settings/restore.h"

#include <QTemporaryDir>
#include <QtTest>
#include <nlohmann/json.hpp>

#include <fstream>
#include <zlib.h>

using namespace dd::settings;
namespace api = dd::api;

namespace {

std::string unknownKeys(const Restored& r) {
    std::string out;
    for (const auto& [k, v] : r.unknown) out += (out.empty() ? "" : "|") + k;
    return out;
}

std::string pngChunk(const std::string& type, const std::string& data) {
    std::string out;
    for (int s = 24; s >= 0; s -= 8) out += char(uint8_t(data.size() >> s));
    const std::string body = type + data;
    out += body;
    const uint32_t crc = uint32_t(crc32(0, reinterpret_cast<const Bytef*>(body.data()), uInt(body.size())));
    for (int s = 24; s >= 0; s -= 8) out += char(uint8_t(crc >> s));
    return out;
}

std::string pngWith(const std::string& chunks) {
    return std::string("\x89PNG\r\n\x1a\n", 8) + pngChunk("IHDR", std::string(13, '\1')) + chunks + pngChunk("IEND", "");
}

void expectError(std::string_view bytes, const char* part) {
    try {
        restoreFromBytes(bytes, "dropped.png");
        QFAIL(qPrintable(QString("accepted: ") + std::string(bytes.substr(0, 80)).c_str()));
    } catch (const MetadataError& e) {
        QVERIFY2(std::string(e.what()).find(part) != std::string::npos, e.what());
        QVERIFY2(std::string(e.what()).rfind("dropped.png", 0) == 0 || std::string(e.what()).find("dropped.png") != std::string::npos, e.what());
    }
}

} // namespace

class TestRestore : public QObject {
    Q_OBJECT
private slots:
    // Shapes seen in the wild (A1111 1.5-1.10, Forge, SD.Next, Civitai copies, sd.cpp, Fooocus' A1111 scheme).
    void a1111Table_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("prompt");
        QTest::addColumn<QString>("negative");
        QTest::addColumn<QString>("sampler");
        QTest::addColumn<QString>("schedule");
        QTest::addColumn<int>("steps");
        QTest::addColumn<qint64>("seed");
        QTest::addColumn<QString>("size");
        QTest::addColumn<QString>("format");
        QTest::addColumn<QString>("unknown");
        QTest::newRow("old combined sampler") << "a cat\nSteps: 20, Sampler: DPM++ 2M Karras, CFG scale: 7, Seed: 965400086, Size: 512x512, Model hash: 45dee52b"
            << "a cat" << "" << "DPM++ 2M" << "Karras" << 20 << qint64(965400086) << "512x512" << "a1111" << "";
        QTest::newRow("1.9 schedule type") << "a cat\nNegative prompt: ugly\nSteps: 25, Sampler: DPM++ 2M, Schedule type: Karras, CFG scale: 5.5, Seed: 1, Size: 832x1216, Model: juggernautXL, Version: v1.10.1"
            << "a cat" << "ugly" << "DPM++ 2M" << "Karras" << 25 << qint64(1) << "832x1216" << "a1111" << "";
        QTest::newRow("multi-line prompts") << "line one,\nline two\n  indented three\nNegative prompt: bad,\nworse\nSteps: 30, Sampler: Euler a, CFG scale: 7, Seed: 2, Size: 512x768"
            << "line one,\nline two\nindented three" << "bad,\nworse" << "Euler a" << "Uniform" << 30 << qint64(2) << "512x768" << "a1111" << "";
        QTest::newRow("quoted values, extra keys") << "p\nSteps: 20, Sampler: Euler, CFG scale: 7, Seed: 3, Size: 512x512, Lora hashes: \"add_detail: 7c6bad76eb54, more: 1\", ADetailer model: face_yolov8n.pt, Hires upscale: 2, Version: v1.7.0"
            << "p" << "" << "Euler" << "Uniform" << 20 << qint64(3) << "512x512" << "a1111" << "ADetailer model";
        QTest::newRow("missing keys keep defaults") << "only prompt and\nSteps: 12, Seed: 9, Size: 640x640"
            << "only prompt and" << "" << "Euler a" << "" << 12 << qint64(9) << "640x640" << "a1111" << "";
        QTest::newRow("no parameter line") << "just a prompt, nothing else" << "just a prompt, nothing else" << "" << "Euler a" << "" << 20 << qint64(0) << "512x512" << "a1111" << "";
        QTest::newRow("a schedule type") << "p\nSteps: 20, Sampler: Euler, Schedule type: Exponential, CFG scale: 7, Seed: 4, Size: 512x512"
            << "p" << "" << "Euler" << "Exponential" << 20 << qint64(4) << "512x512" << "a1111" << "";
        QTest::newRow("stable-diffusion.cpp") << "a fox\nNegative prompt: blur\nSteps: 20, CFG scale: 7.000000, Guidance: 3.500000, Eta: 0.000000, Seed: 42, Size: 512x512, Model: v1-5.safetensors, RNG: std_default, Sampler: dpm++2m karras, Version: stable-diffusion.cpp"
            << "a fox" << "blur" << "DPM++ 2M" << "Karras" << 20 << qint64(42) << "512x512" << "sdcpp" << "Guidance|Eta";
        QTest::newRow("Fooocus A1111 scheme") << "castle\nNegative prompt: \nSteps: 30, Sampler: DPM++ 2M SDE, Schedule type: Karras, CFG scale: 4, Seed: 77, Size: 1152x896, Fooocus V2 Expansion: castle, epic, Styles: \"['Fooocus V2']\", Version: Fooocus v2.5.5"
            << "castle" << "" << "DPM++ 2M SDE" << "Karras" << 30 << qint64(77) << "1152x896" << "fooocus" << "Fooocus V2 Expansion|Styles";
        QTest::newRow("CRLF and trailing blanks") << "a cat  \r\nSteps: 20, Sampler: Euler a, CFG scale: 7, Seed: 5, Size: 512x512\r\n\r\n"
            << "a cat" << "" << "Euler a" << "Uniform" << 20 << qint64(5) << "512x512" << "a1111" << "";
    }
    void a1111Table() {
        QFETCH(QString, text);
        QFETCH(QString, prompt);
        QFETCH(QString, negative);
        QFETCH(QString, sampler);
        QFETCH(QString, schedule);
        QFETCH(int, steps);
        QFETCH(qint64, seed);
        QFETCH(QString, size);
        QFETCH(QString, format);
        QFETCH(QString, unknown);
        const Restored r = restoreFromBytes(text.toStdString(), "params.txt");
        QCOMPARE(QString::fromStdString(r.source), QString("a1111-text"));
        QCOMPARE(QString::fromStdString(r.format), format);
        QCOMPARE(QString::fromStdString(r.settings.prompt).remove('\r'), prompt);
        QCOMPARE(QString::fromStdString(r.settings.negativePrompt), negative);
        QCOMPARE(QString::fromStdString(r.settings.sampler), sampler);
        QCOMPARE(QString::fromStdString(r.settings.scheduleType), schedule);
        QCOMPARE(r.settings.steps, steps);
        QCOMPARE(qint64(r.settings.seed), seed);
        QCOMPARE(QString("%1x%2").arg(r.settings.width).arg(r.settings.height), size);
        QCOMPARE(QString::fromStdString(unknownKeys(r)), unknown);
        QVERIFY(r.settings.model.empty());
    }

    void otherToolsJson_data() {
        QTest::addColumn<QString>("json");
        QTest::addColumn<QString>("source");
        QTest::addColumn<QString>("prompt");
        QTest::addColumn<int>("steps");
        QTest::addColumn<QString>("model");
        QTest::newRow("Fooocus 2.2+") << "{\"prompt\": \"a dog\", \"negative_prompt\": \"\", \"styles\": \"['Fooocus V2']\", \"performance\": \"Speed\", \"steps\": 30, \"resolution\": \"(1024, 1024)\", \"guidance_scale\": 4, \"sharpness\": 2, \"sampler\": \"dpmpp_2m_sde_gpu\", \"scheduler\": \"karras\", \"seed\": \"123\", \"base_model\": \"juggernautXL_v8Rundiffusion.safetensors\", \"version\": \"Fooocus v2.5.5\"}"
            << "fooocus-json" << "a dog" << 30 << "juggernautXL_v8Rundiffusion.safetensors";
        QTest::newRow("Fooocus 2.1") << "{\"Prompt\": \"a dog\", \"Negative Prompt\": \"\", \"Resolution\": \"(896, 1152)\", \"Guidance Scale\": 7, \"Sampler\": \"dpmpp_2m\", \"Scheduler\": \"karras\", \"Seed\": \"5\", \"Base Model\": \"C:\\\\models\\\\sd_xl_base_1.0.safetensors\", \"Version\": \"Fooocus v2.1.0\"}"
            << "fooocus-json" << "a dog" << 20 << "sd_xl_base_1.0.safetensors";
        QTest::newRow("ComfyUI API graph") << "{\"3\": {\"class_type\": \"KSampler\", \"inputs\": {\"seed\": 8, \"steps\": 12, \"cfg\": 8, \"sampler_name\": \"euler\", \"scheduler\": \"normal\", \"denoise\": 1, \"positive\": [\"6\", 0], \"negative\": [\"7\", 0], \"latent_image\": [\"5\", 0], \"model\": [\"4\", 0]}}, \"4\": {\"class_type\": \"CheckpointLoaderSimple\", \"inputs\": {\"ckpt_name\": \"../../etc/v1-5.safetensors\"}}, \"5\": {\"class_type\": \"EmptyLatentImage\", \"inputs\": {\"width\": 512, \"height\": 512, \"batch_size\": 1}}, \"6\": {\"class_type\": \"CLIPTextEncode\", \"inputs\": {\"text\": \"a tree\"}}, \"7\": {\"class_type\": \"CLIPTextEncode\", \"inputs\": {\"text\": \"bad\"}}}"
            << "comfyui-json" << "a tree" << 12 << "v1-5.safetensors";
        QTest::newRow("InvokeAI") << "{\"generation_mode\": \"txt2img\", \"positive_prompt\": \"a boat\", \"negative_prompt\": \"\", \"width\": 512, \"height\": 512, \"seed\": 3, \"steps\": 15, \"cfg_scale\": 7.5, \"scheduler\": \"dpmpp_2m_k\", \"model\": {\"name\": \"dreamshaper_8\", \"hash\": \"blake3:abc\"}}"
            << "invokeai-json" << "a boat" << 15 << "dreamshaper_8";
        QTest::newRow("settings JSON") << "{\"model\": \"/models/x.safetensors\", \"prompt\": \"a car\", \"steps\": 9, \"memory_plan\": {\"precision\": {\"unet\": \"fp16\"}}, \"hires_fix\": true}"
            << "settings-json" << "a car" << 9 << "x.safetensors";
    }
    void otherToolsJson() {
        QFETCH(QString, json);
        QFETCH(QString, source);
        QFETCH(QString, prompt);
        QFETCH(int, steps);
        QFETCH(QString, model);
        const Restored r = restoreFromBytes(json.toStdString(), "in.json");
        QCOMPARE(QString::fromStdString(r.source), source);
        QCOMPARE(QString::fromStdString(r.settings.prompt), prompt);
        QCOMPARE(r.settings.steps, steps);
        QCOMPARE(QString::fromStdString(r.modelName), model);
        QVERIFY(r.settings.model.empty());
        if (source == "settings-json") {
            QCOMPARE(unknownKeys(r), std::string("hires_fix"));  // listed, not fatal
            QVERIFY(r.settings.plan.unet == dd::api::Precision::FP16);
        }
    }

    // A result made outside determinism mode, with no count in its plan, reruns on the threads it ran on (its
    // environment); a count in the plan, and determinism mode (which pins its own), stay as they were.
    void sidecarRerunsOnItsThreadCount() {
        const auto restored = [](bool deterministic, int planThreads) {
            dd::settings::Sidecar sc;
            sc.settings.prompt = "x";
            sc.settings.deterministic = deterministic;
            sc.settings.plan.threads = planThreads;
            sc.environment.threads = 3;
            return restoreFromBytes(dd::settings::writeSidecar(sc), "s.json").settings.plan.threads;
        };
        QCOMPARE(restored(false, 0), 3);
        QCOMPARE(restored(false, 5), 5);
        QCOMPARE(restored(true, 0), 0);
    }

    // Metadata never names a path: model and init image come back as bare names; lookups stay in the folder.
    void noPathSurvives() {
        const Restored r = restoreFromBytes("{\"schema\": \"diffusiondesk.sidecar/2\", \"model\": {\"name\": \"../../../etc/passwd\"}, "
                                            "\"settings\": {\"model\": \"/etc/shadow\", \"init_image\": \"../../secret.png\", \"prompt\": \"x\"}}", "s.json");
        QVERIFY(r.settings.model.empty());
        QVERIFY(r.modelName.find('/') == std::string::npos && r.modelName.find("..") == std::string::npos);
        QVERIFY(r.settings.initImage.empty() || r.settings.initImage == "secret.png");
        // A built-in demo name is no exception (found by fuzz_image_metadata: a sidecar in WebP XMP whose settings
        // named the model "demo:" followed by a path).
        const auto sidecarNaming = [](const std::string& model) {
            return restoreFromBytes("{\"schema\": \"diffusiondesk.sidecar/2\", \"settings\": {\"model\": \"" + model +
                                    "\", \"prompt\": \"x\"}}", "s.json").modelName;
        };
        for (const char* name : {"demo:../../etc/passwd", "demo:a\\\\..\\\\b", "demo:/etc/shadow"}) {
            const std::string got = sidecarNaming(name);
            QVERIFY2(got.find_first_of("/\\") == std::string::npos && got.find("..") == std::string::npos, got.c_str());
        }
        QCOMPARE(sidecarNaming("demo:tiny-sd1"), std::string("demo:tiny-sd1"));
        QTemporaryDir dir, outside;
        std::ofstream(dir.filePath("in.png").toStdString()) << "x";
        std::ofstream(outside.filePath("secret.png").toStdString()) << "x";
        QVERIFY(resolveInsideFolder(dir.path().toStdString(), "in.png").has_value());
        QVERIFY(!resolveInsideFolder(dir.path().toStdString(), "../" + QFileInfo(outside.path()).fileName().toStdString() + "/secret.png"));
        QVERIFY(!resolveInsideFolder(dir.path().toStdString(), outside.filePath("secret.png").toStdString()));
        QFile::link(outside.filePath("secret.png"), dir.filePath("link.png"));
        QVERIFY(!resolveInsideFolder(dir.path().toStdString(), "link.png"));  // a symlink out of the folder
        QVERIFY(!resolveInsideFolder(dir.path().toStdString(), "missing.png"));
    }

    void hostileInput() {
        expectError(std::string(kMaxMetadataText + 1, 'a'), "limit");
        expectError("caf\xe9 Steps: 20", "not valid UTF-8");
        expectError("{\"schema\": \"diffusiondesk.sidecar/9\", \"settings\": {}}", "newer DiffusionDesk");
        expectError(std::string(200, '{'), "nested");
        expectError(pngWith(""), "no generation settings");
        // A text chunk over 1 MiB is skipped with a warning; the next reader is used.
        const std::string big = pngWith(pngChunk("tEXt", "parameters" + std::string(1, '\0') + std::string(kMaxMetadataText + 10, 'x')) +
                                        pngChunk("tEXt", std::string("prompt\0", 7) + "{\"1\": {\"class_type\": \"KSampler\", \"inputs\": {\"steps\": 3}}}"));
        const Restored r = restoreFromBytes(big, "big.png");
        QCOMPARE(r.format, std::string("comfyui"));
        QVERIFY(!r.warnings.empty() && r.warnings.front().find("1 MiB") != std::string::npos);
        // A zTXt that inflates past the cap (a decompression bomb) is skipped, not inflated.
        const std::string zeros(kMaxMetadataText * 2, 'a');
        std::string packed(compressBound(uLong(zeros.size())), '\0');
        uLongf n = uLongf(packed.size());
        compress(reinterpret_cast<Bytef*>(packed.data()), &n, reinterpret_cast<const Bytef*>(zeros.data()), uLong(zeros.size()));
        packed.resize(n);
        const auto t = readImageText(pngWith(pngChunk("zTXt", std::string("parameters\0\0", 12) + packed)), "bomb.png");
        QVERIFY(t.text.empty());
        QVERIFY(!t.warnings.empty());
        // Truncated files: what was readable before the cut is kept.
        const std::string ok = pngWith(pngChunk("tEXt", std::string("parameters\0", 11) + "p\nSteps: 3, Seed: 1, Size: 64x64"));
        QCOMPARE(restoreFromBytes(ok.substr(0, ok.size() - 6), "cut.png").settings.steps, 3);
        QVERIFY_THROWS_EXCEPTION(MetadataError, restoreFromFile("/nonexistent/x.png"));
    }

    // EXIF written by other tools: little-endian TIFF with UTF-16LE, and ASCII.
    void exifVariants() {
        auto exif = [](bool big, const std::string& comment) {
            auto u16 = [&](uint16_t v) { return big ? std::string{char(v >> 8), char(v & 0xFF)} : std::string{char(v & 0xFF), char(v >> 8)}; };
            auto u32 = [&](uint32_t v) { return big ? u16(uint16_t(v >> 16)) + u16(uint16_t(v)) : u16(uint16_t(v)) + u16(uint16_t(v >> 16)); };
            std::string t = big ? std::string("MM\0*", 4) : std::string("II*\0", 4);
            t += u32(8) + u16(1) + u16(0x8769) + u16(4) + u32(1) + u32(26) + u32(0);                       // IFD0 -> Exif IFD at 26
            t += u16(1) + u16(0x9286) + u16(7) + u32(uint32_t(comment.size())) + u32(44) + u32(0);         // UserComment at 44
            return std::string("Exif\0\0", 6) + t + comment;
        };
        std::string le("UNICODE\0", 8);
        for (const char c : std::string("Steps: 20, Seed: 5, Size: 64x64")) le += c, le += '\0';
        QCOMPARE(exifUserComment(exif(false, le), "x"), std::string("Steps: 20, Seed: 5, Size: 64x64"));
        QCOMPARE(exifUserComment(exif(true, std::string("ASCII\0\0\0", 8) + "hello"), "x"), std::string("hello"));
        QVERIFY_THROWS_EXCEPTION(MetadataError, exifUserComment(exif(true, "x").substr(0, 20), "x"));
        QCOMPARE(xmpProperty("<rdf:Description diffusiondesk:settings=\"{&quot;a&quot;:&#49;}\"/>", "diffusiondesk:settings"), std::string("{\"a\":1}"));
        QCOMPARE(xmpProperty("<diffusiondesk:settings>a &amp; b</diffusiondesk:settings>", "diffusiondesk:settings"), std::string("a & b"));
    }
};

QTEST_GUILESS_MAIN(TestRestore)
#include "test_restore.moc"
