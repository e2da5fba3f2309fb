// ControlNet against diffusers (fixtures: tests/parity/fixtures_controlnet.py): the residuals of tiny random
// ControlNets (SD 1.x and SDXL) for fixed inputs, and the final latents of StableDiffusion(XL)ControlNetPipeline
// runs with one and two ControlNets, weights and guidance start/end. Plus the config checks, settings round
// trips, offload and refusals.
#include "core/api/generation_settings.h"
#include "core/io/controlnet_file.h"
#include "core/io/model_error.h"
#include "core/io/safetensors.h"
#include "core/memory/predictor.h"
#include "core/nn/controlnet.h"
#include "core/nn/load_weights.h"
#include "core/pipeline/control_stack.h"
#include "core/pipeline/engine.h"
#include "core/pipeline/engine_test_hooks.h"
#include "core/pipeline/memory_prediction.h"
#include "core/settings/a1111_parameters.h"
#include "imaging/control_preprocess.h"
#include "tests/common/test_program.h"

#include "tests/common/pipeline_case.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <QFile>
#include <QJsonArray>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

namespace test_controlnet {  // the test program is a unity build: each file keeps its names

using namespace dd;
using dd::test::caseSettings;
using dd::test::LastLatents;
using dd::test::maxAbs;

namespace {

const QString kDir = QString(DD_FIXTURES_DIR) + "/controlnet";
const QString kModels = QString(DD_FIXTURES_DIR) + "/pipeline";

api::Image imageOf(const torch::Tensor& hwc) {
    api::Image img;
    img.height = int(hwc.size(0));
    img.width = int(hwc.size(1));
    const auto t = hwc.contiguous();
    img.rgb.assign(t.data_ptr<uint8_t>(), t.data_ptr<uint8_t>() + t.numel());
    return img;
}

struct Case {
    api::GenerationSettings settings;
    std::vector<api::Image> images;
    std::optional<api::Image> init;  // img2img
    torch::Tensor latents;
};

Case loadCase(const QJsonObject& c, int index) {
    Case k;
    auto& s = k.settings;
    s = caseSettings(c, (kModels + "/" + c["model"].toString()).toStdString());
    const auto ref = io::SafetensorsFile::open((kDir + QString("/case_%1.safetensors").arg(index)).toStdString());
    const auto nets = c["controlnets"].toArray();
    for (int i = 0; i < nets.size(); ++i) {
        const auto n = nets[i].toObject();
        api::ControlNetSetting cn;
        cn.model = (kDir + "/" + n["name"].toString()).toStdString();
        cn.weight = n["weight"].toDouble();
        cn.guidanceStart = n["start"].toDouble();
        cn.guidanceEnd = n["end"].toDouble();
        s.controlnets.push_back(cn);
        k.images.push_back(imageOf(ref->tensor("control_" + std::to_string(i))));
    }
    k.latents = ref->tensor("latents");
    if (c["img2img"].toBool()) {
        s.initImage = "init.png";
        s.strength = c["strength"].toDouble();
        k.init = imageOf(ref->tensor("init"));
    }
    return k;
}

} // namespace

class TestControlNet : public QObject {
    Q_OBJECT
    QJsonArray m_cases;

private slots:
    void initTestCase() {
        QVERIFY2(test::readCases(kDir, m_cases), "run tests/parity/make_fixtures.py first");
        QCOMPARE(m_cases.size(), 5);
    }

    void residualsMatchDiffusers_data() {
        QTest::addColumn<QString>("name");
        for (const char* n : {"cn-sd1-a", "cn-sd1-b", "cn-sdxl"}) QTest::newRow(n) << QString(n);
    }
    void residualsMatchDiffusers() {
        QFETCH(QString, name);
        c10::InferenceMode guard;
        const auto file = io::openControlNet((kDir + "/" + name).toStdString());
        nn::ControlNetModel net(nn::ControlNetConfig::fromJson(file.config));
        QVERIFY(nn::loadWeights(*net, file.weights, "controlnet").empty());
        net->eval();
        const auto ref = io::SafetensorsFile::open((kDir + "/residuals_" + name + ".safetensors").toStdString());
        std::optional<nn::AddedCond> added;
        if (ref->contains("text_embeds")) added = nn::AddedCond{ref->tensor("text_embeds"), ref->tensor("time_ids")};
        const auto out = net->forward(ref->tensor("sample"), torch::tensor({500.0}, torch::kFloat64), ref->tensor("context"),
                                      added, ref->tensor("cond"), 0.8);
        QCOMPARE(int64_t(out.down.size()), net->config().downResiduals());
        double err = 0;
        for (size_t i = 0; i < out.down.size(); ++i) err = std::max(err, maxAbs(out.down[i], ref->tensor("down_" + std::to_string(i))));
        err = std::max(err, maxAbs(out.mid, ref->tensor("mid")));
        qInfo("%s: residuals max abs %.3g (%zu down + mid)", qPrintable(name), err, out.down.size());
        QVERIFY2(err < 1e-4, qPrintable(QString("residuals differ by %1").arg(err)));
    }

    // The same ControlNets as original (LDM) files, as sd-webui-controlnet loads them: converted names, derived config.
    void ldmFileMatchesDiffusers() {
        c10::InferenceMode guard;
        const auto file = io::openControlNet((kDir + "/ldm/cn-sd1-a.safetensors").toStdString());
        QVERIFY(file.derivedConfig);
        nn::ControlNetModel net(nn::ControlNetConfig::fromJson(file.config));
        QVERIFY(nn::loadWeights(*net, file.weights, "controlnet").empty());
        net->eval();
        const auto ref = io::SafetensorsFile::open((kDir + "/residuals_cn-sd1-a.safetensors").toStdString());
        const auto out = net->forward(ref->tensor("sample"), torch::tensor({500.0}, torch::kFloat64), ref->tensor("context"),
                                      std::nullopt, ref->tensor("cond"), 0.8);
        double err = maxAbs(out.mid, ref->tensor("mid"));
        for (size_t i = 0; i < out.down.size(); ++i) err = std::max(err, maxAbs(out.down[i], ref->tensor("down_" + std::to_string(i))));
        qInfo("LDM file: residuals max abs %.3g", err);
        QVERIFY2(err < 1e-4, qPrintable(QString("residuals differ by %1").arg(err)));
        // SDXL in the engine: heads and the time-id width come from the UNet (the file does not store them).
        for (int index : {0, 3}) {
            auto k = loadCase(m_cases.at(index).toObject(), index);
            const QString name = index == 0 ? "cn-sd1-a" : "cn-sdxl";
            k.settings.controlnets[0].model = (kDir + "/ldm/" + name + ".safetensors").toStdString();
            pipeline::Engine engine;
            api::CancelToken cancel;
            LastLatents observer;
            engine.generate(k.settings, cancel, &observer, {.controls = k.images});
            const double e = maxAbs(observer.latents, k.latents);
            qInfo("LDM file %s: latents max abs %.3g", qPrintable(name), e);
            QVERIFY2(e < 1e-4, qPrintable(QString("latents differ by %1").arg(e)));
        }
    }

    void pipelineMatchesDiffusers_data() {
        QTest::addColumn<int>("index");
        for (int i = 0; i < m_cases.size(); ++i) {
            const auto c = m_cases.at(i).toObject();
            QTest::newRow(qPrintable(QString("%1 %2 %3 controlnet(s)%4").arg(c["model"].toString(), c["sampler"].toString())
                                         .arg(c["controlnets"].toArray().size())
                                         .arg(c["img2img"].toBool() ? " img2img" : "")))
                << i;
        }
    }
    void pipelineMatchesDiffusers() {
        QFETCH(int, index);
        const auto k = loadCase(m_cases.at(index).toObject(), index);
        pipeline::Engine engine;
        api::CancelToken cancel;
        LastLatents observer;
        const auto result = engine.generate(k.settings, cancel, &observer, {.init = k.init, .controls = k.images});
        const double err = maxAbs(observer.latents, k.latents);
        qInfo("latents max abs %.3g (latents max %.3g)", err, k.latents.abs().max().item<double>());
        QVERIFY2(err < 1e-4, qPrintable(QString("latents differ by %1").arg(err)));
        QCOMPARE(result.settings.controlnets.size(), k.settings.controlnets.size());
        for (const auto& c : result.settings.controlnets) QCOMPARE(int(c.hash.size()), 8);
        QVERIFY(engine.controlNetParameters() > 0);
    }

    // The ControlNet must change the result, and taking it away gives the plain run back (no reload needed).
    void controlChangesAndGoes() {
        auto k = loadCase(m_cases.at(0).toObject(), 0);
        pipeline::Engine engine;
        api::CancelToken cancel;
        auto plain = k.settings;
        plain.controlnets.clear();
        const auto without = engine.generate(plain, cancel, nullptr).images.at(0).rgb;
        const auto with = engine.generate(k.settings, cancel, nullptr, {.controls = k.images}).images.at(0).rgb;
        QVERIFY(with != without);
        QCOMPARE(engine.generate(plain, cancel, nullptr).images.at(0).rgb, without);
        QCOMPARE(engine.controlNetParameters(), int64_t(0));
        // A range that excludes every step is the plain run exactly.
        auto never = k.settings;
        never.controlnets[0].guidanceStart = 0.99;
        QCOMPARE(engine.generate(never, cancel, nullptr, {.controls = k.images}).images.at(0).rgb, without);
    }

    // Offload: the ControlNet goes through the same NetworkOffload as the UNet and gives the same image.
    void underOffload() {
        auto k = loadCase(m_cases.at(0).toObject(), 0);
        pipeline::Engine reference;
        api::CancelToken cancel;
        const auto want = reference.generate(k.settings, cancel, nullptr, {.controls = k.images}).images.at(0).rgb;
        for (auto mode : {api::Offload::Model, api::Offload::Sequential, api::Offload::Group}) {
            pipeline::Engine engine;
            engine.setTestHooks({true, {}, nullptr});
            auto s = k.settings;
            s.plan.offload = mode;
            const auto r = engine.generate(s, cancel, nullptr, {.controls = k.images});
            QVERIFY2(r.images.at(0).rgb == want, api::offloadName(mode));
            QCOMPARE(engine.ledger().resident("compute"), int64_t(0));  // everything went home, ControlNet included
            QVERIFY(engine.ledger().peak("compute") > 0);
        }
        // One ControlNet named twice (two images) is one network, loaded and offloaded once.
        auto twice = k.settings;
        twice.controlnets.push_back(twice.controlnets[0]);
        twice.controlnets[1].weight = 0.4;
        auto images = k.images;
        images.push_back(loadCase(m_cases.at(1).toObject(), 1).images[1]);
        const auto plain = reference.generate(twice, cancel, nullptr, {.controls = images}).images.at(0).rgb;
        QCOMPARE(reference.controlNetParameters(), pipeline::controlNetParameters({twice.controlnets[0].model}));
        pipeline::Engine engine;
        engine.setTestHooks({true, {}, nullptr});
        twice.plan.offload = api::Offload::Group;
        QVERIFY(engine.generate(twice, cancel, nullptr, {.controls = images}).images.at(0).rgb == plain);
        QCOMPARE(engine.ledger().resident("compute"), int64_t(0));
    }

    // The predictor counts the ControlNet's weights (exactly what the engine loads) and its residuals.
    void predictorCountsControlNets() {
        auto k = loadCase(m_cases.at(0).toObject(), 0);
        const std::string cn = k.settings.controlnets[0].model;
        const int64_t params = pipeline::controlNetParameters({cn, cn});  // the same one twice is loaded once
        pipeline::Engine engine;
        api::CancelToken cancel;
        engine.generate(k.settings, cancel, nullptr, {.controls = k.images});
        QCOMPARE(params, engine.controlNetParameters());
        const auto shape = pipeline::modelShapeOf(k.settings.model);
        memory::PredictInput in;
        in.width = in.height = 64;
        const auto plain = memory::predict(shape, in);
        in.controlNetParams = params;
        const auto with = memory::predict(shape, in);
        QCOMPARE(with.denoise.weights - plain.denoise.weights, params * 4);  // fp32
        QCOMPARE(with.decode.weights - plain.decode.weights, params * 4);    // kept loaded
        QVERIFY(with.denoise.activations > plain.denoise.activations);
        in.cuda = true;
        in.plan.offload = api::Offload::Model;
        const auto offloaded = memory::predict(shape, in);
        in.controlNetParams = 0;
        const auto offloadedPlain = memory::predict(shape, in);
        QCOMPARE(offloaded.decode.weights, offloadedPlain.decode.weights);  // at home while decoding
        QCOMPARE(offloaded.denoise.weights - offloadedPlain.denoise.weights, params * 4);
    }

    void guidanceRange() {
        // diffusers: keep = not (i/n < start or (i+1)/n > end)
        QVERIFY(pipeline::controlActiveAt(0, 1, 0, 6));
        QVERIFY(pipeline::controlActiveAt(0, 1, 5, 6));
        QVERIFY(!pipeline::controlActiveAt(0, 0.5, 3, 6));
        QVERIFY(pipeline::controlActiveAt(0, 0.5, 2, 6));
        QVERIFY(!pipeline::controlActiveAt(0.2, 1, 1, 6));
        QVERIFY(pipeline::controlActiveAt(0.2, 1, 2, 6));
    }

    void refusals() {
        auto k = loadCase(m_cases.at(3).toObject(), 3);  // SDXL ControlNet
        auto s = k.settings;
        s.model = (kModels + "/tiny-sd1-e2e").toStdString();
        pipeline::Engine engine;
        api::CancelToken cancel;
        try {
            engine.generate(s, cancel, nullptr, {.controls = k.images});
            QFAIL("an SDXL ControlNet on an SD 1.x model was accepted");
        } catch (const std::invalid_argument& e) {
            QVERIFY2(QString(e.what()).contains("SDXL ControlNet"), e.what());
        }
        auto missing = loadCase(m_cases.at(0).toObject(), 0);
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, engine.generate(missing.settings, cancel, nullptr));  // no image
        missing.settings.controlnets[0].model = "/nonexistent/cn";
        QVERIFY_THROWS_EXCEPTION(io::ModelFileError, engine.generate(missing.settings, cancel, nullptr, {.controls = missing.images}));
        QTemporaryDir dir;
        const QString pickle = dir.filePath("control_v11p_sd15_canny.pth");
        QFile(pickle).open(QIODevice::WriteOnly);
        missing.settings.controlnets[0].model = pickle.toStdString();
        try {
            engine.generate(missing.settings, cancel, nullptr, {.controls = missing.images});
            QFAIL("a pickle ControlNet was accepted");
        } catch (const io::ModelFileError& e) {
            QVERIFY2(QString(e.what()).contains("never unpickles"), e.what());
        }
        auto small = missing.images;
        small[0].width = 32;
        auto ok = loadCase(m_cases.at(0).toObject(), 0);
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, engine.generate(ok.settings, cancel, nullptr, {.controls = small}));
    }

    void configChecks() {
        const auto base = nlohmann::json::parse(R"({"block_out_channels":[32,64],"down_block_types":["DownBlock2D","CrossAttnDownBlock2D"],
            "attention_head_dim":8,"cross_attention_dim":32,"conditioning_embedding_out_channels":[8,16]})");
        const auto c = nn::ControlNetConfig::fromJson(base);
        QCOMPARE(c.hintFactor(), int64_t(2));
        QCOMPARE(c.downResiduals(), int64_t(6));
        auto bad = [&](const char* key, nlohmann::json v) {
            auto j = base;
            j[key] = v;
            QVERIFY_THROWS_EXCEPTION(io::ModelFileError, nn::ControlNetConfig::fromJson(j));
        };
        bad("block_out_channels", {32});
        bad("mid_block_type", "UNetMidBlock2D");
        bad("controlnet_conditioning_channel_order", "grb");
        bad("attention_head_dim", 7);
        bad("conditioning_embedding_out_channels", nlohmann::json::array());
        bad("layers_per_block", 1000);
        bad("addition_embed_type", "text");
        bad("class_embed_type", "timestep");
        auto heads = base;
        heads["num_attention_heads"] = 4;
        QCOMPARE(nn::ControlNetConfig::fromJson(heads).heads, (std::vector<int64_t>{4, 4}));
    }

    void settingsRoundTrip() {
        api::GenerationSettings s;
        api::ControlNetSetting c;
        c.model = "/models/cn/canny";
        c.hash = "0123abcd";
        c.image = "pose.png";
        c.preprocessor = "canny";
        c.thresholdA = 50;
        c.thresholdB = 150;
        c.weight = 0.75;
        c.guidanceStart = 0.1;
        c.guidanceEnd = 0.9;
        c.resizeMode = "Just Resize";
        s.controlnets = {c, [] { api::ControlNetSetting t; t.model = "/models/cn/tile"; return t; }()};
        const nlohmann::json j = s;
        QCOMPARE(j.at("controlnets").size(), size_t(2));
        QVERIFY(j.get<api::GenerationSettings>().controlnets == s.controlnets);
        QVERIFY(!nlohmann::json(api::GenerationSettings{}).contains("controlnets"));  // old sidecars unchanged
        api::validate(s);
        auto bad = s;
        bad.controlnets[0].guidanceStart = 0.95;
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, api::validate(bad));
        bad = s;
        bad.controlnets[1].preprocessor = "openpose";
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, api::validate(bad));
        bad = s;
        bad.controlnets[0].thresholdA = 250;
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, api::validate(bad));
    }

    void a1111Text() {
        api::GenerationSettings s;
        s.prompt = "a house";
        s.width = 512;
        s.height = 768;
        api::ControlNetSetting c;
        c.model = "/models/controlnet/control_sd15_canny";
        c.hash = "fef5e48e";
        c.preprocessor = "canny";
        c.weight = 0.8;
        c.guidanceEnd = 0.75;
        api::ControlNetSetting t;
        t.model = "/models/cn/tile.safetensors";
        t.preprocessor = "blur";
        t.thresholdA = 2.5;
        t.resizeMode = "Just Resize";
        s.controlnets = {c, t};
        const auto text = settings::writeA1111Parameters(s);
        QVERIFY2(text.find(R"(ControlNet 0: "Module: canny, Model: control_sd15_canny [fef5e48e], Weight: 0.8, )"
                           R"(Resize Mode: Crop and Resize, Low Vram: False, Processor Res: 512, Threshold A: 100, )"
                           R"(Threshold B: 200, Guidance Start: 0, Guidance End: 0.75, Pixel Perfect: False, )"
                           R"(Control Mode: Balanced")") != std::string::npos, text.c_str());
        QVERIFY2(text.find(R"(ControlNet 1: "Module: blur_gaussian, Model: tile, Weight: 1, Resize Mode: Just Resize)") !=
                     std::string::npos, text.c_str());
        const auto back = settings::parseA1111Parameters(text);
        QCOMPARE(back.settings.controlnets.size(), size_t(2));
        const auto& r = back.settings.controlnets[0];
        QCOMPARE(r.model, std::string("control_sd15_canny"));
        QCOMPARE(r.hash, std::string("fef5e48e"));
        QCOMPARE(r.preprocessor, std::string("canny"));
        QCOMPARE(r.weight, 0.8);
        QCOMPARE(r.guidanceEnd, 0.75);
        QCOMPARE(r.thresholdB, 200.0);
        QCOMPARE(back.settings.controlnets[1].preprocessor, std::string("blur"));
        QCOMPARE(back.settings.controlnets[1].thresholdA, 2.5);
        QVERIFY(back.unknown.empty());
        QCOMPARE(settings::writeA1111Parameters(back.settings), text.substr(0, text.size()));  // a fixed point

        // What sd-webui-controlnet itself writes (a module we lack is kept as "none", with a note).
        const auto a1111 = settings::parseA1111Parameters(
            "a cat\nSteps: 20, Sampler: Euler a, CFG scale: 7, Seed: 1, Size: 512x512, ControlNet 0: \"Module: "
            "openpose_full, Model: control_v11p_sd15_openpose [cab727d4], Weight: 1, Resize Mode: Crop and Resize, "
            "Low Vram: False, Processor Res: 512, Threshold A: -1, Threshold B: -1, Guidance Start: 0.1, Guidance End: 1, "
            "Pixel Perfect: True, Control Mode: Balanced\", Version: v1.10.1");
        QCOMPARE(a1111.settings.controlnets.size(), size_t(1));
        QCOMPARE(a1111.settings.controlnets[0].model, std::string("control_v11p_sd15_openpose"));
        QCOMPARE(a1111.settings.controlnets[0].hash, std::string("cab727d4"));
        QCOMPARE(a1111.settings.controlnets[0].guidanceStart, 0.1);
        QCOMPARE(a1111.settings.controlnets[0].preprocessor, std::string("none"));
        QVERIFY(!a1111.warnings.empty());
    }

    void preprocessors() {
        // A white square on black, 96×64.
        api::Image img{96, 64, std::vector<uint8_t>(96 * 64 * 3, 0)};
        for (int y = 16; y < 48; ++y)
            for (int x = 32; x < 64; ++x)
                for (int ch = 0; ch < 3; ++ch) img.rgb[size_t((y * 96 + x) * 3 + ch)] = 255;
        auto white = [](const api::Image& i) {
            int n = 0;
            for (size_t k = 0; k < i.rgb.size(); k += 3) n += i.rgb[k] > 127;
            return n;
        };
        api::ControlNetSetting c;
        QVERIFY(imaging::preprocessControl(img, c).rgb == img.rgb);  // none
        c.preprocessor = "canny";
        const auto edges = imaging::preprocessControl(img, c);
        QVERIFY(white(edges) > 100 && white(edges) < 300);  // the square's outline only
        QCOMPARE(int(edges.rgb[size_t((32 * 96 + 48) * 3)]), 0);  // not its inside
        c.preprocessor = "scribble";
        QVERIFY(white(imaging::preprocessControl(img, c)) > white(edges));  // thicker strokes
        c.preprocessor = "blur";
        const auto blurred = imaging::preprocessControl(img, c);
        QVERIFY(blurred.rgb != img.rgb && blurred.rgb[size_t((32 * 96 + 48) * 3)] == 255);
        for (const char* mode : {"Crop and Resize", "Just Resize", "Resize and Fill"}) {
            const auto r = imaging::resizeForControl(img, 64, 64, mode);
            QCOMPARE(r.width, 64);
            QCOMPARE(r.height, 64);
            QCOMPARE(r.rgb.size(), size_t(64 * 64 * 3));
        }
        // Crop keeps the square's size (scale 1, sides cut); stretch narrows it.
        QCOMPARE(white(imaging::resizeForControl(img, 64, 64, "Crop and Resize")), 32 * 32);
        QVERIFY(white(imaging::resizeForControl(img, 64, 64, "Just Resize")) < 32 * 32);
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, imaging::resizeForControl(img, 64, 64, "Envelope"));
    }
};

DD_REGISTER_TEST(TestControlNet)

} // namespace test_controlnet
#include "test_controlnet.moc"
