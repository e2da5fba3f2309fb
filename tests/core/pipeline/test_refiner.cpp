// The SDXL base → refiner hand-off against diffusers (fixtures: tests/parity/fixtures_refiner.py): the base's
// latents at the switch and the refiner's final latents and 8-bit images equal what StableDiffusionXLPipeline
// (denoising_end, output_type="latent") followed by StableDiffusionXLImg2ImgPipeline (denoising_start) give
// with the same seed. Also: where base and refiner live (together or swapped) and the settings' JSON.
#include "core/io/safetensors.h"
#include "core/memory/predictor.h"
#include "core/pipeline/engine.h"
#include "core/pipeline/engine_test_hooks.h"
#include "core/pipeline/refiner.h"
#include "core/sched/scheduler.h"
#include "core/settings/a1111_parameters.h"
#include "tests/common/test_program.h"

#include "tests/common/pipeline_case.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <QJsonArray>
#include <QJsonObject>
#include <QtTest>

#include <fstream>

namespace test_refiner {  // the test program is a unity build: each file keeps its names

using namespace dd;
using dd::test::maxAbs;

namespace {

const QString kDir = QString(DD_FIXTURES_DIR) + "/refiner";
const QString kBase = QString(DD_FIXTURES_DIR) + "/pipeline/tiny-sdxl-e2e";
const QString kRefiner = kDir + "/tiny-sdxl-refiner-e2e";

struct EveryStep : dd::pipeline::LatentObserver {
    std::vector<torch::Tensor> latents;  // after step 1, 2, ...
    int total = 0;
    void onStep(int, int all, const api::Image&) override { total = all; }
    void onLatents(int, const at::Tensor& l) override { latents.push_back(l.clone()); }
};

nlohmann::json readJson(const QString& path) {
    std::ifstream in(path.toStdString());
    return nlohmann::json::parse(in);
}

api::GenerationSettings settingsOf(const QJsonObject& c) {
    api::GenerationSettings s = test::caseSettings(c, kBase.toStdString());
    s.refiner.model = kRefiner.toStdString();
    s.refiner.switchAt = c["switch"].toDouble();
    s.refiner.aestheticScore = c["aesthetic"].toDouble();
    s.refiner.negativeAestheticScore = c["negative_aesthetic"].toDouble();
    return s;
}

} // namespace

class TestRefiner : public QObject {
    Q_OBJECT
    QJsonArray m_cases;

private slots:
    void initTestCase() {
        QVERIFY2(test::readCases(kDir, m_cases), "run tests/parity/make_fixtures.py first");
        QVERIFY(m_cases.size() >= 5);
    }

    // diffusers' cut for the fixtures' first case: 10 Euler steps 901…1 ("leading"), switch 0.8 → cutoff 200:
    // the base runs 8 steps, the refiner the last 2.
    void cutsTheScheduleLikeDiffusers() {
        const auto config = readJson(kBase + "/scheduler/scheduler_config.json");
        auto euler = sched::makeScheduler("Euler", config);
        euler->setTimesteps(10);
        QCOMPARE(pipeline::baseEndIndex(*euler, 1000, 0.8), int64_t(8));
        QCOMPARE(pipeline::refinerBeginIndex(*euler, 1000, 0.8), int64_t(8));
        // Heun lists every timestep but the first twice: the refiner never starts between a step's two halves.
        auto heun = sched::makeScheduler("Heun", config);
        heun->setTimesteps(8);
        const int64_t size = heun->timesteps().size(0), begin = pipeline::refinerBeginIndex(*heun, 1000, 0.5);
        QCOMPARE((size - begin) % 2, int64_t(1));
        // k-diffusion's second-order samplers (two evaluations at different σ, the last step one): the base finishes
        // the step the cut falls in and the refiner takes over at the next, whatever the switch.
        for (const char* name : {"Heun", "DPM++ SDE", "DPM2 a"}) {
            auto k = sched::makeScheduler(name, "Karras", config, nlohmann::json::object());
            k->setTimesteps(7);
            for (double at : {0.3, 0.5, 0.55, 0.8}) {
                const int64_t end = pipeline::baseEndIndex(*k, 1000, at), start = pipeline::refinerBeginIndex(*k, 1000, at);
                QVERIFY2(end == start && k->beginsStep(end), qPrintable(QString("%1 at %2: %3 / %4").arg(name).arg(at).arg(end).arg(start)));
                QVERIFY(end > 0 && end < k->timesteps().size(0));
            }
        }
    }

    void matchesDiffusers_data() {
        QTest::addColumn<int>("index");
        for (int i = 0; i < m_cases.size(); ++i)
            QTest::newRow(qPrintable(m_cases.at(i).toObject()["sampler"].toString())) << i;
    }
    void matchesDiffusers() {
        QFETCH(int, index);
        const QJsonObject c = m_cases.at(index).toObject();
        const auto s = settingsOf(c);
        const auto ref = io::SafetensorsFile::open((kDir + QString("/case_%1.safetensors").arg(index)).toStdString());

        pipeline::Engine engine;
        api::CancelToken cancel;
        EveryStep observer;
        const auto result = engine.generate(s, cancel, &observer);

        auto scheduler = sched::makeScheduler(s.sampler, readJson(kBase + "/scheduler/scheduler_config.json"));
        scheduler->setTimesteps(s.steps);
        const auto baseSteps = size_t(pipeline::baseEndIndex(*scheduler, 1000, s.refiner.switchAt));
        QVERIFY(baseSteps >= 1 && baseSteps < observer.latents.size());
        QCOMPARE(observer.total, int(observer.latents.size()));

        const bool noisy = s.sampler == "Euler a";
        const double tol = noisy ? 1e-3 : 1e-4;
        const double handoffErr = maxAbs(observer.latents[baseSteps - 1], ref->tensor("handoff"));
        const double latentErr = maxAbs(observer.latents.back(), ref->tensor("latents"));
        qInfo("%s: %zu base + %zu refiner steps; hand-off latents max abs %.3g, final latents max abs %.3g",
              qPrintable(c["sampler"].toString()), baseSteps, observer.latents.size() - baseSteps, handoffErr, latentErr);
        QVERIFY2(handoffErr <= tol, qPrintable(QString("hand-off latents differ by %1").arg(handoffErr)));
        QVERIFY2(latentErr <= tol, qPrintable(QString("final latents differ by %1").arg(latentErr)));

        const auto images = ref->tensor("images");  // [B,H,W,3] uint8, decoded by the refiner's VAE
        QCOMPARE(int64_t(result.images.size()), images.size(0));
        int worst = 0;
        for (size_t i = 0; i < result.images.size(); ++i) {
            const auto& img = result.images[i];
            const auto ours = torch::from_blob(const_cast<uint8_t*>(img.rgb.data()), {img.height, img.width, 3}, torch::kUInt8);
            worst = std::max(worst, (ours.to(torch::kInt32) - images[int64_t(i)].to(torch::kInt32)).abs().max().item<int>());
        }
        qInfo("  images max diff %d/255", worst);
        QVERIFY2(worst <= 1, qPrintable(QString("images differ by %1/255").arg(worst)));
        QCOMPARE(result.settings.refiner.model, s.refiner.model);
        QCOMPARE(result.settings.refiner.hash, std::string());  // a folder has no A1111 hash
    }

    // The comparison can tell: case 1 with the default aesthetic scores (6 / 2.5 instead of 7 / 2; measured 7.9e-4,
    // the tiny UNet embeds each time id in 8 dimensions) or with the switch one step later (0.6) is well outside
    // matchesDiffusers' tolerance (1e-4).
    void parityIsSensitive() {
        const QJsonObject c = m_cases.at(1).toObject();
        const auto ref = io::SafetensorsFile::open((kDir + "/case_1.safetensors").toStdString());
        auto finalErr = [&](const api::GenerationSettings& s) {
            pipeline::Engine engine;
            api::CancelToken cancel;
            EveryStep observer;
            engine.generate(s, cancel, &observer);
            return maxAbs(observer.latents.back(), ref->tensor("latents"));
        };
        auto s = settingsOf(c);
        s.refiner.aestheticScore = 6.0;
        s.refiner.negativeAestheticScore = 2.5;
        const double aesthetic = finalErr(s);
        s = settingsOf(c);
        s.refiner.switchAt = 0.6;  // cutoff 400: the base runs one step more
        const double later = finalErr(s);
        qInfo("other aesthetic scores: %.3g, other switch: %.3g", aesthetic, later);
        QVERIFY(aesthetic > 3e-4 && later > 1e-2);
    }

    // The same refiner as an A1111 single file (LDM names, conditioner.embedders.0 = OpenCLIP bigG only): it loads
    // as the refiner family and gives "Refiner: name [hash]". Its latents are not compared: a tiny model's head
    // counts are not in the weights (the loader writes 1 head where the width is below 64; full-size refiners
    // derive them exactly), and fixtures_models.py already checks the conversion against diffusers'.
    void singleFileRefiner() {
        auto s = settingsOf(m_cases.at(0).toObject());
        s.refiner.model = (kDir + "/tiny-sdxl-refiner-e2e.safetensors").toStdString();
        pipeline::Engine engine;
        api::CancelToken cancel;
        EveryStep observer;
        const auto result = engine.generate(s, cancel, &observer);
        QVERIFY(torch::isfinite(observer.latents.back()).all().item<bool>());
        QCOMPARE(result.settings.refiner.hash.size(), size_t(10));
        const auto text = settings::writeA1111Parameters(result.settings, {});
        QVERIFY2(text.find("Refiner: tiny-sdxl-refiner-e2e [" + result.settings.refiner.hash + "]") != std::string::npos, text.c_str());
    }

    // Together (24 GB row): both models on the device for the whole run. Swapped (lower rows): the base leaves
    // the device before the refiner's stage and comes back at the next run; the pixels are the same. On the CPU
    // the test hooks label the compute side "compute", so the ledger tells the two apart.
    void swapMovesTheBaseOffTheDevice() {
        auto s = settingsOf(m_cases.at(0).toObject());
        api::CancelToken cancel;
        auto runWith = [&](bool swap, memory::ResidencyLedger* ledgerAfter, pipeline::Engine& engine) {
            auto t = s;
            t.plan.swapModels = swap;
            auto r = engine.generate(t, cancel, nullptr);
            if (ledgerAfter) *ledgerAfter = engine.ledger();
            return r;
        };
        pipeline::Engine together, swapped;
        pipeline::EngineTestHooks hooks;
        hooks.offloadOnCpu = true;
        together.setTestHooks(hooks);
        swapped.setTestHooks(hooks);
        memory::ResidencyLedger a, b;
        const auto ra = runWith(false, &a, together);
        const auto rb = runWith(true, &b, swapped);
        QVERIFY(a.resident("compute") > 0);
        QCOMPARE(a.resident("cpu"), int64_t(0));
        // Swapped: only the refiner on the device at the end; the base (larger: two text encoders) at home.
        QVERIFY(b.resident("compute") > 0 && b.resident("cpu") > 0);
        QCOMPARE(b.resident("compute") + b.resident("cpu"), a.resident("compute"));
        QVERIFY(b.peak("compute") < a.peak("compute"));
        QCOMPARE(ra.images[0].rgb, rb.images[0].rgb);
        // The next run without a refiner: the base back on the device, the refiner released.
        auto plain = s;
        plain.refiner = {};
        plain.plan.swapModels = true;
        swapped.generate(plain, cancel, nullptr);
        QCOMPARE(swapped.ledger().resident("cpu"), int64_t(0));
        QVERIFY(swapped.ledger().resident("compute") < a.resident("compute"));
    }

    // Under offload the refiner's networks get their own NetworkOffload from the same engine as the base's (the
    // guarded leaves of core/nn/layers.h): the same result, nothing left on the compute side between uses, and
    // swap_models changes nothing. (A fresh engine with offload differs from a fresh one without by ~2e-5 in the
    // latents from the first step on, with or without a refiner, hence a tolerance rather than equal bits.)
    void offloadedRefiner_data() {
        QTest::addColumn<int>("mode");
        QTest::newRow("model") << int(api::Offload::Model);
        QTest::newRow("sequential") << int(api::Offload::Sequential);
        QTest::newRow("group") << int(api::Offload::Group);
    }
    void offloadedRefiner() {
        QFETCH(int, mode);
        const auto s = settingsOf(m_cases.at(0).toObject());
        api::CancelToken cancel;
        pipeline::Engine plain;
        EveryStep want;
        plain.generate(s, cancel, &want);
        pipeline::EngineTestHooks hooks;
        hooks.offloadOnCpu = true;
        for (bool swap : {false, true}) {
            pipeline::Engine engine;
            engine.setTestHooks(hooks);
            auto t = s;
            t.plan.offload = api::Offload(mode);
            t.plan.swapModels = swap;
            EveryStep got;
            engine.generate(t, cancel, &got);
            const double err = maxAbs(got.latents.back(), want.latents.back());
            qInfo("swap_models %d: final latents max abs %.3g from the run without offload", int(swap), err);
            QVERIFY(err <= 1e-4);
            QCOMPARE(engine.ledger().resident("compute"), int64_t(0));
            QVERIFY(engine.ledger().peak("compute") > 0);
        }
    }

    // A ControlNet steers the base's steps only (the refiner is another UNet) and, as in diffusers'
    // StableDiffusionXLControlNetPipeline, its guidance range counts over the whole schedule, not the base's share:
    // with end 0.5 of 10 steps it steers 5 of the 8 base steps, so the base's latents equal those of the same run
    // without a refiner. Swapped, the ControlNet leaves the device with the base.
    void controlNetWithRefiner() {
        const auto plainCase = settingsOf(m_cases.at(0).toObject());
        auto s = plainCase;
        api::ControlNetSetting c;
        c.model = (QString(DD_FIXTURES_DIR) + "/controlnet/cn-sdxl").toStdString();
        c.weight = 0.9;
        c.guidanceEnd = 0.5;
        s.controlnets = {c};
        api::Image hint{s.width, s.height, std::vector<uint8_t>(size_t(s.width * s.height * 3))};
        for (size_t i = 0; i < hint.rgb.size(); ++i) hint.rgb[i] = uint8_t((i / 3 % size_t(s.width)) < size_t(s.width / 2) ? 0 : 255);
        const std::vector<api::Image> hints{hint};
        api::CancelToken cancel;
        pipeline::Engine engine;
        EveryStep refinedNoCn, refined, baseOnly;
        engine.generate(plainCase, cancel, &refinedNoCn);
        const auto r = engine.generate(s, cancel, &refined, {.controls = hints});
        auto noRefiner = s;
        noRefiner.refiner = {};
        engine.generate(noRefiner, cancel, &baseOnly, {.controls = hints});
        QCOMPARE(int(refined.latents.size()), 10);
        QVERIFY(torch::isfinite(refined.latents.back()).all().item<bool>());
        QCOMPARE(r.settings.controlnets.size(), size_t(1));
        QVERIFY(maxAbs(refined.latents[0], refinedNoCn.latents[0]) > 1e-4);  // it steers
        for (int i = 0; i < 8; ++i) QVERIFY2(maxAbs(refined.latents[size_t(i)], baseOnly.latents[size_t(i)]) == 0, qPrintable(QString::number(i)));
        QVERIFY(maxAbs(refined.latents.back(), baseOnly.latents.back()) > 1e-4);  // the refiner ran

        pipeline::EngineTestHooks hooks;
        hooks.offloadOnCpu = true;
        pipeline::Engine together, swapped, swappedNoCn;
        for (auto* e : {&together, &swapped, &swappedNoCn}) e->setTestHooks(hooks);
        auto swap = s;
        swap.plan.swapModels = true;
        auto swapNoCn = plainCase;
        swapNoCn.plan.swapModels = true;
        const auto ra = together.generate(s, cancel, nullptr, {.controls = hints});
        const auto rb = swapped.generate(swap, cancel, nullptr, {.controls = hints});
        swappedNoCn.generate(swapNoCn, cancel, nullptr);
        QCOMPARE(ra.images[0].rgb, rb.images[0].rgb);
        QCOMPARE(swapped.ledger().resident("compute"), swappedNoCn.ledger().resident("compute"));  // the refiner only
        QCOMPARE(swapped.ledger().resident("compute") + swapped.ledger().resident("cpu"), together.ledger().resident("compute"));
        // The next run of the base alone: the ControlNet comes back with it.
        auto swapPlain = noRefiner;
        swapPlain.plan.swapModels = true;
        swapped.generate(swapPlain, cancel, nullptr, {.controls = hints});
        QCOMPARE(swapped.ledger().resident("cpu"), int64_t(0));
    }

    void refinerRejectsAnotherLatentSpace() {
        auto s = settingsOf(m_cases.at(0).toObject());
        s.refiner.model = pipeline::kDemoModel;  // not a file: refused when loading
        pipeline::Engine engine;
        api::CancelToken cancel;
        QVERIFY_THROWS_EXCEPTION(std::exception, engine.generate(s, cancel, nullptr));
    }

    void settingsRoundTrip() {
        api::GenerationSettings s;
        QVERIFY(!nlohmann::json(s).contains("refiner"));  // sidecars of runs without one stay as they were
        s.refiner = {"/models/sd_xl_refiner_1.0.safetensors", 0.7, 6.5, 2.0, "7440042bbd"};
        const nlohmann::json j = s;
        QCOMPARE(j.at("refiner").at("switch_at").get<double>(), 0.7);
        QVERIFY(j.get<api::GenerationSettings>().refiner == s.refiner);
        s.refiner.switchAt = 1.0;
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, api::validate(s));
    }

    // A1111's refiner script writes the checkpoint's short title and the switch; both read back.
    void a1111ParametersRoundTrip() {
        api::GenerationSettings s;
        s.prompt = "a lighthouse";
        s.refiner = {"/models/sd_xl_refiner_1.0.safetensors", 0.8, 6.0, 2.5, "7440042bbd"};
        const auto text = settings::writeA1111Parameters(s, {});
        QVERIFY2(text.find("Refiner: sd_xl_refiner_1.0 [7440042bbd], Refiner switch at: 0.8") != std::string::npos, text.c_str());
        const auto back = settings::parseA1111Parameters(text);
        QCOMPARE(back.settings.refiner.model, std::string("sd_xl_refiner_1.0"));
        QCOMPARE(back.settings.refiner.hash, std::string("7440042bbd"));
        QCOMPARE(back.settings.refiner.switchAt, 0.8);
        QVERIFY(back.has("refiner"));
        for (const auto& [k, v] : back.unknown) QVERIFY2(k.rfind("Refiner", 0) != 0, k.c_str());
        // As A1111 1.10 writes it (no hash for a folder is our own case: the name alone).
        const auto a1111 = settings::parseA1111Parameters(
            "a cat\nSteps: 30, Sampler: DPM++ 2M, Schedule type: Karras, CFG scale: 7, Seed: 1, Size: 1024x1024, "
            "Model hash: 31e35c80fc, Model: sd_xl_base_1.0, Refiner: sd_xl_refiner_1.0 [7440042bbd], "
            "Refiner switch at: 0.7, Version: v1.10.1");
        QCOMPARE(a1111.settings.refiner.model, std::string("sd_xl_refiner_1.0"));
        QCOMPARE(a1111.settings.refiner.switchAt, 0.7);
        const auto folder = settings::parseA1111Parameters(settings::writeA1111Parameters(
            [] { api::GenerationSettings t; t.refiner.model = "/m/refiner-folder/"; return t; }(), {}));
        QCOMPARE(folder.settings.refiner.model, std::string("refiner-folder"));
        QVERIFY(folder.settings.refiner.hash.empty());
        // A path in the metadata never survives: the name only.
        const auto sneaky = settings::parseA1111Parameters("x\nSteps: 1, Sampler: Euler, Seed: 1, Refiner: ../../etc/passwd");
        QCOMPARE(sneaky.settings.refiner.model, std::string("passwd"));
    }

    // The predictor: together, the refiner's weights add to every stage; swapped, it replaces the base's (and its
    // ControlNets').
    void predictorCountsTheRefiner() {
        memory::ModelShape base;
        base.unet.params = 2'600'000'000;
        base.unet.blockOutChannels = {320, 640, 1280};
        base.unet.attention = {false, true, true};
        base.unet.heads = {5, 10, 20};
        base.unet.transformerLayers = {0, 2, 10};
        base.unet.crossAttentionDim = 2048;
        base.vae.params = 84'000'000;
        base.textEncoders = {{123'000'000}, {695'000'000, 1280, 5120, 20}};
        memory::PredictInput in;
        in.width = in.height = 1024;
        in.cuda = true;
        in.plan.unet = in.plan.textEncoder = in.plan.vae = api::Precision::FP16;
        const auto plain = memory::predict(base, in);
        in.refinerBytes = 4'500'000'000;
        const auto together = memory::predict(base, in);
        QCOMPARE(together.denoise.weights, plain.denoise.weights + in.refinerBytes);
        QCOMPARE(together.load.weights, plain.load.weights + in.refinerBytes);
        in.plan.swapModels = true;
        const auto swapped = memory::predict(base, in);
        QCOMPARE(swapped.encode.weights, plain.encode.weights);
        QCOMPARE(swapped.denoise.weights, std::max(plain.denoise.weights, in.refinerBytes));
        QVERIFY(swapped.peak() < together.peak());
        // ControlNets sit beside the base and leave the device with it when swapped.
        in.controlNetParams = 1'250'000'000;
        const auto swappedCn = memory::predict(base, in);
        QCOMPARE(swappedCn.denoise.weights, std::max(plain.denoise.weights + 2 * in.controlNetParams, in.refinerBytes));
        in.plan.swapModels = false;
        QCOMPARE(memory::predict(base, in).denoise.weights, together.denoise.weights + 2 * in.controlNetParams);
    }
};

DD_REGISTER_TEST(TestRefiner)

} // namespace test_refiner
#include "test_refiner.moc"
