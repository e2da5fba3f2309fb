// The k-diffusion samplers and A1111's schedule types against the pinned k-diffusion package sampling the tiny
// SD 1.x UNet through its CompVis wrapper (tests/parity/fixtures_k_diffusion.py), and the Brownian tree against
// torchsde and numpy's SeedSequence.
#include "core/api/generation_settings.h"
#include "core/io/checkpoint.h"
#include "core/io/safetensors.h"
#include "core/nn/load_weights.h"
#include "core/nn/unet.h"
#include "core/pipeline/engine.h"
#include "core/pipeline/unet_conditioning.h"
#include "core/sched/brownian_tree.h"
#include "core/sched/scheduler.h"
#include "tests/common/test_program.h"

#include <QtTest>

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <set>

namespace test_k_diffusion {  // the test program is a unity build: each file keeps its names

using namespace dd;
using nlohmann::json;

const std::string kDir = std::string(DD_FIXTURES_DIR) + "/k_diffusion";
const std::string kModel = std::string(DD_FIXTURES_DIR) + "/models/tiny-sd1";

json readJson(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("missing " + path + ": run tests/parity/make_fixtures.py first");
    return json::parse(in);
}

double maxAbs(const torch::Tensor& a, const torch::Tensor& b) {
    if (a.sizes() != b.sizes()) return std::numeric_limits<double>::infinity();
    return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
}

class TestKDiffusion : public QObject {
    Q_OBJECT
    json m_fixture;
    io::Checkpoint m_ck;
    nn::UNet2DConditionModel m_unet{nullptr};
    io::TensorMap m_cond;

    // A1111's loop: the latents twice (prompt, negative), guidance on the model's output, one step per call.
    torch::Tensor sample(const json& c, const io::TensorMap& f) {
        nlohmann::json overrides = nlohmann::json::object();
        if (c.contains("prediction")) overrides["prediction_type"] = c["prediction"];
        const bool comfy = c.value("sample_as", "") == "ComfyUI";
        if (comfy) overrides["sample_as"] = "ComfyUI";
        auto sch = sched::makeScheduler(c["sampler"], c["schedule"], m_ck.configs.at("scheduler"), overrides);
        sch->setTimesteps(c["steps"]);
        const int64_t batch = c.value("batch", 1), seed = c["seed"];
        // A1111: a stream per image (seed + i); ComfyUI: one of the seed over the batch, then one of seed + 1.
        std::vector<sched::ImageRng> gens;
        for (int64_t b = 0; b < (comfy ? 1 : batch); ++b) gens.emplace_back(sched::ImageRng::Kind::Cpu, uint64_t(seed + b));
        sched::NoiseSource noise(gens);
        const auto start = noise.randn({batch, 4, f.at("noise").size(2), f.at("noise").size(3)}, torch::kFloat32, torch::kCPU);
        if (!torch::equal(start, f.at("noise"))) throw std::runtime_error("the starting noise differs from the fixture's");
        int64_t begin = 0;
        torch::Tensor x;
        if (c.contains("strength")) {
            const auto cut = sch->img2imgTimesteps(c["strength"]);
            begin = cut.beginIndex;
            x = sch->img2imgStart(f.at("init"), start, begin);
        } else {
            x = start * sch->initNoiseSigma();
        }
        if (comfy) noise.restart({sched::ImageRng(sched::ImageRng::Kind::Cpu, uint64_t(seed) + 1)});
        // The engine's conditioning: the negative's rows, then the prompt's; a two-chunk prompt beside a one-chunk
        // negative stays unpadded (A1111's default), each side through the UNet at its own length.
        torch::Tensor prompt = m_cond.at("cond");
        if (c.value("long_prompt", false)) prompt = torch::cat({prompt, torch::flip(prompt, {1})}, 1);
        const auto negative = m_cond.at("uncond").expand({batch, -1, -1}), positive = prompt.expand({batch, -1, -1});
        pipeline::Conditioning cond;
        if (negative.size(1) == positive.size(1)) cond.embeds = torch::cat({negative, positive});
        else cond.sides = {negative, positive};
        const double cfg = m_fixture["cfg"];
        torch::NoGradGuard noGrad;
        for (int64_t i = begin; i < sch->timesteps().size(0); ++i) {
            const auto out = pipeline::unetForward(*m_unet, sch->scaleModelInput(torch::cat({x, x}), i), sch->timesteps()[i], cond, nullptr);
            const auto parts = out.chunk(2);
            x = sch->step(parts[0] + cfg * (parts[1] - parts[0]), i, x, noise);
        }
        return x;
    }

private slots:
    void initTestCase() {
        m_fixture = readJson(kDir + "/cases.json");
        m_ck = io::loadCheckpoint(kModel);
        m_unet = nn::UNet2DConditionModel(nn::UNetConfig::fromJson(m_ck.configs.at("unet")));
        const auto unused = nn::loadWeights(*m_unet, m_ck.components.at("unet"), "unet");
        QVERIFY(unused.empty());
        m_unet->eval();
        m_cond = io::SafetensorsFile::open(kDir + "/conditioning.safetensors")->all();
    }

    void seedSequenceMatchesNumpy() {
        const json b = readJson(kDir + "/brownian.json");
        for (const auto& s : b["seed_sequence"]) {
            const auto got = sched::seedSequenceState(s["entropy"], s["spawn_key"].get<std::vector<uint64_t>>(), 24, 4);
            QCOMPARE(got, s["state"].get<std::vector<uint32_t>>());
        }
    }

    // Bit for bit: the same seeds, the same torch.randn, the same float32 bridge arithmetic.
    void brownianTreeMatchesTorchsde() {
        const json t = readJson(kDir + "/brownian.json")["tree"];
        const auto w = io::SafetensorsFile::open(kDir + "/brownian.safetensors")->all();
        sched::BrownianTree tree(t["t0"], t["t1"], t["shape"].get<std::vector<int64_t>>(), t["seed"], sched::ImageRng::Kind::Cpu);
        for (size_t k = 0; k < t["queries"].size(); ++k) {
            const auto& q = t["queries"][k];
            const double err = maxAbs(tree.increment(q[0], q[1]), w.at("w" + std::to_string(k)));
            QVERIFY2(err == 0, qPrintable(QString("query %1: max |Δ| %2").arg(k).arg(err)));
        }
    }

    void runsMatchKDiffusion_data() {
        QTest::addColumn<int>("index");
        for (size_t i = 0; i < m_fixture["cases"].size(); ++i)
            QTest::newRow(m_fixture["cases"][i]["name"].get<std::string>().c_str()) << int(i);
    }

    void runsMatchKDiffusion() {
        QFETCH(int, index);
        const json& c = m_fixture["cases"][size_t(index)];
        const auto f = io::SafetensorsFile::open(kDir + "/" + c["name"].get<std::string>() + ".safetensors")->all();
        const auto got = sample(c, f);
        const double err = maxAbs(got, f.at("latents")), scale = std::max(1.0, f.at("latents").abs().max().item<double>());
        qInfo("%s: final latents max |Δ| %.3g (|x| up to %.3g)", c["name"].get<std::string>().c_str(), err, scale);
        // These random-weight latents reach ±75, where float32's own spacing is 8e-6: measured against their scale.
        QVERIFY2(err <= 1e-5 * scale, qPrintable(QString("max |Δ| %1 at scale %2").arg(err).arg(scale)));
        // A1111's DDIM and PLMS are not diffusers' (another grid end, one evaluation fewer): the run shows it, ten
        // times the tolerance apart at least.
        if (c.value("timesteps", false) && !c.contains("strength")) {
            json diffusers = c;
            diffusers["schedule"] = "";
            const double apart = maxAbs(sample(diffusers, f), f.at("latents"));
            QVERIFY2(apart > 1e-4 * scale, qPrintable(QString("diffusers' %1 is within %2").arg(c["sampler"].get<std::string>().c_str()).arg(apart)));
        }
        // The first-order samplers evaluate the model once per σ of the schedule: the schedule itself, as computed.
        if (c["sampler"] == "Euler" && !c.contains("strength")) {
            json overrides = json::object();
            if (c.contains("sample_as")) overrides["sample_as"] = c["sample_as"];
            auto sch = sched::makeScheduler(c["sampler"], c["schedule"], m_ck.configs.at("scheduler"), overrides);
            sch->setTimesteps(c["steps"]);
            const double schedErr = maxAbs(sch->sigmas(), f.at("sigmas"));
            QVERIFY2(schedErr <= (c["schedule"] == "Beta" ? 1e-6 : 0.0), qPrintable(QString("schedule max |Δ| %1").arg(schedErr)));
        }
    }

    // Through the engine: as ComfyUI, the batch's noise is one stream (image 2 is not seed + 1 alone, as in A1111).
    void comfyUiNoiseThroughTheEngine() {
        api::GenerationSettings s;
        s.model = pipeline::kDemoModel;
        s.prompt = "a red fox";
        s.sampler = "Euler a", s.scheduleType = "Normal", s.sampleAs = "ComfyUI";
        s.steps = 3, s.width = s.height = 64, s.batchSize = 2, s.seed = 40, s.cfgScale = 1;
        pipeline::Engine engine;
        api::CancelToken cancel;
        const auto batch = engine.generate(s, cancel, nullptr);
        QCOMPARE(int(batch.images.size()), 2);
        QVERIFY(engine.generate(s, cancel, nullptr).images[1].rgb == batch.images[1].rgb);  // reruns the same
        // A batch of one and of two round the UNet's sums apart by 1/255 at most: "the same" here.
        const auto diff = [](const api::Image& a, const api::Image& b) {
            int most = 0;
            for (size_t k = 0; k < a.rgb.size(); ++k) most = std::max(most, std::abs(int(a.rgb[k]) - int(b.rgb[k])));
            return most;
        };
        auto alone = api::fromImage(s, 1);
        alone.batchSize = 1;
        QVERIFY(diff(engine.generate(alone, cancel, nullptr).images[0], batch.images[1]) > 8);
        auto a1111 = s;
        a1111.sampleAs = "A1111";
        const auto perImage = engine.generate(a1111, cancel, nullptr);
        alone.sampleAs = "A1111";
        QVERIFY(diff(engine.generate(alone, cancel, nullptr).images[0], perImage.images[1]) <= 1);
        QVERIFY(diff(perImage.images[0], batch.images[0]) > 8);  // whole timesteps and √(1 + σ²): another picture
    }

    void scheduleTypeNeedsAKDiffusionSampler() {
        const auto& config = m_ck.configs.at("scheduler");
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, sched::makeScheduler("UniPC", "Karras", config, json::object()));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, sched::makeScheduler("Euler", "Sideways", config, json::object()));
        // Without a schedule type a sampler diffusers has stays diffusers'; one it lacks is k-diffusion's.
        QCOMPARE(sched::makeScheduler("Euler", config)->className(), std::string("EulerDiscreteScheduler"));
        QCOMPARE(sched::makeScheduler("DPM2", config)->className(), std::string("k-diffusion DPM2 (Karras)"));
        QCOMPARE(sched::makeScheduler("Euler", "Automatic", config, json::object())->className(), std::string("k-diffusion Euler (Uniform)"));
        // DDIM and PLMS with a schedule type are A1111's own, on their own grid: Automatic only.
        QCOMPARE(sched::makeScheduler("DDIM", config)->className(), std::string("DDIMScheduler"));
        QCOMPARE(sched::makeScheduler("DDIM", "Automatic", config, json::object())->className(), std::string("A1111 ddim"));
        QCOMPARE(sched::makeScheduler("PLMS", "Automatic", config, json::object())->className(), std::string("A1111 plms"));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, sched::makeScheduler("PLMS", "Karras", config, json::object()));
        api::GenerationSettings karrasDdim;
        karrasDdim.sampler = "DDIM", karrasDdim.scheduleType = "Karras";
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, api::validate(karrasDdim));
        // A1111's 20-step grid is 1, 51 … 951, the model run at all but the lowest; PLMS's first step runs it twice.
        auto ddim = sched::makeScheduler("DDIM", "Automatic", config, json::object());
        ddim->setTimesteps(20);
        QCOMPARE(ddim->timesteps().size(0), int64_t(19));
        QCOMPARE(ddim->timesteps()[0].item<int64_t>(), int64_t(951));
        QCOMPARE(ddim->timesteps()[18].item<int64_t>(), int64_t(51));
        auto plms = sched::makeScheduler("PLMS", "Automatic", config, json::object());
        plms->setTimesteps(20);
        QCOMPARE(plms->timesteps().size(0), int64_t(20));
        QVERIFY(!plms->beginsStep(1) && plms->beginsStep(2));
        // The offered names are the two families' together; a diffusers name without a schedule type is diffusers'.
        std::set<std::string> both(api::diffusersSamplers().begin(), api::diffusersSamplers().end());
        both.insert(api::kDiffusionSamplers().begin(), api::kDiffusionSamplers().end());
        QCOMPARE(both, std::set<std::string>(api::samplerNames().begin(), api::samplerNames().end()));
        for (const auto& name : api::diffusersSamplers())
            QVERIFY2(sched::makeScheduler(name, config)->className().rfind("k-diffusion", 0) != 0, name.c_str());
        // Every name and schedule type the settings offer makes a schedule that ends where sampling does.
        for (const auto& name : api::kDiffusionSamplers())
            for (const auto& label : api::scheduleTypes()) {
                auto sch = sched::makeScheduler(name, label, config, json::object());
                sch->setTimesteps(4);
                QVERIFY2(sch->timesteps().size(0) >= 3, qPrintable(QString::fromStdString(name + " / " + label)));
                QVERIFY(sch->initNoiseSigma() > 1);
            }
    }
};

DD_REGISTER_TEST(TestKDiffusion)

} // namespace test_k_diffusion
#include "test_k_diffusion.moc"
