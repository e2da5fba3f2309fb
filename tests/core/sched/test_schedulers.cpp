// Scheduler parity against diffusers (tests/parity/fixtures_schedulers.py): timesteps, σ, init_noise_sigma,
// the whole denoising trajectory on a fake denoiser (same seeded CPU generator, same call sequence), img2img
// truncation and add_noise, LMS coefficients, the reference schedules of sd_reference.md §11, factory errors.
#include "core/api/generation_settings.h"
#include "core/io/safetensors.h"
#include "core/memory/memory_probe.h"
#include "core/sched/schedulers.h"
#include "tests/common/test_program.h"

// torch before Qt: Qt's `slots` macro breaks torch/csrc/jit headers.
#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <QtTest>

#include <cmath>
#include <filesystem>
#include <fstream>

namespace test_schedulers {  // the test program is a unity build: each file keeps its names

using namespace dd::sched;
namespace api = dd::api;
namespace fs = std::filesystem;

namespace {

const fs::path kDir = fs::path(DD_FIXTURES_DIR) / "schedulers";

nlohmann::json readJson(const fs::path& p) {
    std::ifstream f(p);
    return nlohmann::json::parse(f);
}

// Same function as fixtures_schedulers.py fake_denoiser.
at::Tensor fakeDenoiser(const at::Tensor& x, const at::Tensor& t) {
    const double tf = t.item<double>();
    return x * (0.1 * std::cos(tf / 100.0)) + 0.05 * std::sin(tf / 50.0);
}

double maxAbs(const at::Tensor& a, const at::Tensor& b) {
    return (a.to(torch::kDouble) - b.to(torch::kDouble)).abs().max().item<double>();
}

bool stochastic(const std::string& name) { return name == "Euler a" || name == "DPM++ 2M SDE" || name == "LCM"; }

// Runs the pipeline loop from `begin`, like the fixture's denoise().
at::Tensor denoise(Scheduler& s, at::Tensor latents, int64_t begin, NoiseSource& noise,
                   std::vector<at::Tensor>* inputs = nullptr, std::vector<at::Tensor>* outs = nullptr) {
    for (int64_t i = begin; i < s.timesteps().size(0); ++i) {
        const at::Tensor inp = s.scaleModelInput(latents, i);
        latents = s.step(fakeDenoiser(inp, s.timesteps()[i]), i, latents, noise);
        if (inputs) inputs->push_back(inp);
        if (outs) outs->push_back(latents);
    }
    return latents;
}

NoiseSource seeded(uint64_t seed) { return NoiseSource(at::make_generator<at::CPUGeneratorImpl>(seed)); }

void checkTimesteps(const at::Tensor& got, const at::Tensor& want, const char* what) {
    QVERIFY2(got.scalar_type() == want.scalar_type(), what);
    QCOMPARE(got.size(0), want.size(0));
    if (at::isIntegralType(want.scalar_type(), false)) {
        QVERIFY2(torch::equal(got, want), what);
    } else {  // fractional t from Karras σ: float32 log differences between numpy and libm
        QVERIFY2(maxAbs(got, want) <= 1e-4, what);
    }
}

} // namespace

class TestSchedulers : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
        if (!fs::exists(kDir / "cases.json"))
            QSKIP("no scheduler fixtures: run .venv/bin/python tests/parity/fixtures_schedulers.py <fixtures dir>");
        torch::set_num_threads(1);
    }

    // libtorch's seeded CPU generator gives the numbers of Python's torch.Generator().manual_seed(seed).
    void generatorMatchesPython() {
        auto f = dd::io::SafetensorsFile::open((kDir / "ddim.safetensors").string());
        auto noise = seeded(readJson(kDir / "ddim.json")["seed"].get<uint64_t>());
        const at::Tensor x = noise.randn({2, 4, 8, 8}, torch::kFloat, torch::kCPU);
        QVERIFY(torch::equal(x, f->tensor("initial_latents")));
    }

    void parity_data() {
        QTest::addColumn<QString>("caseName");
        for (const auto& c : readJson(kDir / "cases.json"))
            QTest::newRow(c.get<std::string>().c_str()) << QString::fromStdString(c.get<std::string>());
    }

    void parity() {
        QFETCH(QString, caseName);
        const std::string name = caseName.toStdString();
        const nlohmann::json meta = readJson(kDir / (name + ".json"));
        auto f = dd::io::SafetensorsFile::open((kDir / (name + ".safetensors")).string());
        const std::string user = meta["name"];
        auto s = makeScheduler(user, meta["config"]);
        QCOMPARE(QString::fromStdString(s->className()), QString::fromStdString(meta["class"].get<std::string>()));
        QCOMPARE(s->order(), meta["order"].get<int>());
        s->setTimesteps(meta["steps"].get<int64_t>());

        checkTimesteps(s->timesteps(), f->tensor("timesteps"), "timesteps");
        if (f->contains("sigmas")) QVERIFY(maxAbs(s->sigmas(), f->tensor("sigmas")) <= 1e-5);
        const double initSigma = meta["init_noise_sigma"];
        QVERIFY(std::abs(s->initNoiseSigma() - initSigma) <= 1e-6 * initSigma);

        auto noise = seeded(meta["seed"].get<uint64_t>());
        const std::vector<int64_t> shape = meta["shape"];
        const at::Tensor init = noise.randn(shape, torch::kFloat, torch::kCPU) * s->initNoiseSigma();
        QVERIFY(maxAbs(init, f->tensor("initial_latents")) <= 1e-5 * initSigma);
        std::vector<at::Tensor> inputs, outs;
        denoise(*s, init, 0, noise, &inputs, &outs);
        const double inputErr = maxAbs(torch::stack(inputs), f->tensor("model_inputs"));
        const double finalErr = maxAbs(outs.back(), f->tensor("latents")[-1]);
        const double tol = stochastic(user) ? 1e-3 : 1e-4;

        // img2img: same scheduler settings, fresh instance, truncated schedule, add_noise, loop from beginIndex.
        auto s2 = makeScheduler(user, meta["config"]);
        s2->setTimesteps(meta["steps"].get<int64_t>());
        const Img2ImgSchedule r = s2->img2imgTimesteps(meta["strength"].get<double>());
        checkTimesteps(r.timesteps, f->tensor("img2img_timesteps"), "img2img timesteps");
        QCOMPARE(r.beginIndex, meta["img2img_begin_index"].get<int64_t>());
        QCOMPARE(r.numSteps, meta["img2img_num_steps"].get<int64_t>());
        auto noise2 = seeded(meta["img2img_seed"].get<uint64_t>());
        const at::Tensor original = noise2.randn(shape, torch::kFloat, torch::kCPU);
        const at::Tensor n = noise2.randn(shape, torch::kFloat, torch::kCPU);
        const at::Tensor noisy = s2->addNoise(original, n, r.beginIndex);
        const double noisyErr = maxAbs(noisy, f->tensor("img2img_noisy"));
        const double img2imgErr = maxAbs(denoise(*s2, noisy, r.beginIndex, noise2), f->tensor("img2img_latents"));

        qInfo("%-26s inputs %.2e  final %.2e  img2img noisy %.2e  final %.2e", name.c_str(), inputErr, finalErr,
              noisyErr, img2imgErr);
        QVERIFY(inputErr <= tol);
        QVERIFY(finalErr <= tol);
        QVERIFY(noisyErr <= 1e-5);
        QVERIFY(img2imgErr <= tol);
    }

    // scipy quad in diffusers vs Gauss–Legendre here.
    void lmsCoefficients() {
        if (!fs::exists(kDir / "lms.json")) QSKIP("LMS fixtures need scipy in the fixture environment");
        for (const char* c : {"lms", "lms_karras", "lms_v_trailing"}) {
            const nlohmann::json meta = readJson(kDir / (std::string(c) + ".json"));
            auto s = makeScheduler("LMS", meta["config"]);
            s->setTimesteps(meta["steps"].get<int64_t>());
            const at::Tensor sig = s->sigmas().contiguous();
            const std::vector<float> sigmas(sig.data_ptr<float>(), sig.data_ptr<float>() + sig.numel());
            double err = 0;
            const auto& want = meta["lms_coefficients"];
            for (size_t i = 0; i < want.size(); ++i)
                for (size_t k = 0; k < want[i].size(); ++k)
                    err = std::max(err, std::abs(lmsCoefficient(sigmas, int(want[i].size()), int64_t(i), int(k)) -
                                                 want[i][k].get<double>()));
            qInfo("%-14s LMS coefficients max abs diff %.2e", c, err);
            QVERIFY(err <= 1e-6);
        }
    }

    // The schedules quoted by sd_reference.md §11, recomputed by diffusers.
    void referenceSchedules() {
        for (const auto& e : readJson(kDir / "reference.json")) {
            auto s = makeScheduler(e["name"], e["config"]);
            s->setTimesteps(e["steps"].get<int64_t>());
            const std::vector<double> want = e["timesteps"];
            const at::Tensor got = s->timesteps().to(torch::kDouble).contiguous();
            QCOMPARE(got.size(0), int64_t(want.size()));
            for (size_t i = 0; i < want.size(); ++i) QVERIFY(std::abs(got[i].item<double>() - want[i]) <= 1e-4);
            QVERIFY(std::abs(s->initNoiseSigma() - e["init_noise_sigma"].get<double>()) <= 1e-5);
            if (e.contains("sigmas")) {
                const std::vector<double> ws = e["sigmas"];
                for (size_t i = 0; i < ws.size(); ++i)
                    QVERIFY(std::abs(s->sigmas()[i].item<double>() - ws[i]) <= 1e-6 * std::max(1.0, ws[i]));
            }
        }
    }

    // The numbers written in sd_reference.md §11 (float64 recomputations: 4–5 significant digits).
    void referenceNumbers() {
        const nlohmann::json sd1 = readJson(kDir / "ddim.json")["config"];
        auto karras = makeScheduler("DPM++ 2M Karras", sd1);
        karras->setTimesteps(25);
        const std::vector<int64_t> want = {999, 970, 938, 905, 868, 829, 786, 739, 687, 630, 568, 500, 427,
                                           352, 278, 207, 146, 96,  59,  34,  18,  9,   4,   1,   0};
        QCOMPARE(karras->timesteps().size(0), int64_t(want.size()));
        for (size_t i = 0; i < want.size(); ++i) QCOMPARE(karras->timesteps()[i].item<int64_t>(), want[i]);
        QVERIFY(std::abs(karras->sigmas()[0].item<double>() - 14.6146) < 1e-4);
        QVERIFY(std::abs(karras->sigmas()[1].item<double>() - 12.283) < 1e-3);
        QVERIFY(std::abs(karras->sigmas()[23].item<double>() - 0.0437) < 1e-4);
        QVERIFY(std::abs(karras->sigmas()[24].item<double>() - 0.0292) < 1e-4);
        QCOMPARE(karras->sigmas()[25].item<double>(), 0.0);

        auto dpm = makeScheduler("DPM++ 2M", sd1);
        dpm->setTimesteps(25);
        QCOMPARE(dpm->timesteps()[0].item<int64_t>(), int64_t(951));
        QCOMPARE(dpm->timesteps()[1].item<int64_t>(), int64_t(913));
        QCOMPARE(dpm->timesteps()[23].item<int64_t>(), int64_t(77));
        QCOMPARE(dpm->timesteps()[24].item<int64_t>(), int64_t(39));

        auto euler = makeScheduler("Euler", sd1);
        for (auto [n, sigma] : std::vector<std::pair<int, double>>{{50, 13.1204}, {25, 11.6760}, {30, 11.4768}}) {
            euler->setTimesteps(n);
            QVERIFY(std::abs(euler->sigmas()[0].item<double>() - sigma) < 2e-4);
        }
        euler->setTimesteps(50);
        QVERIFY(std::abs(euler->initNoiseSigma() - 13.1585) < 2e-4);
        QCOMPARE(euler->timesteps()[0].item<double>(), 981.0);
        QCOMPARE(euler->timesteps()[49].item<double>(), 1.0);
        nlohmann::json trailing = sd1;
        trailing["timestep_spacing"] = "trailing";
        auto eulerT = makeScheduler("Euler", trailing);
        eulerT->setTimesteps(50);
        QCOMPARE(eulerT->timesteps()[0].item<double>(), 999.0);
        QCOMPARE(eulerT->timesteps()[49].item<double>(), 19.0);
        QVERIFY(std::abs(eulerT->initNoiseSigma() - 14.614641) < 1e-4);

        auto plms = makeScheduler("PLMS", sd1);
        plms->setTimesteps(50);
        QCOMPARE(plms->timesteps().size(0), int64_t(51));
        QCOMPARE(plms->timesteps()[1].item<int64_t>(), int64_t(961));
        QCOMPARE(plms->timesteps()[2].item<int64_t>(), int64_t(961));
    }

    void unknownNameListsValidNames() {
        try {
            makeScheduler("Euler b", nlohmann::json::object());
            QFAIL("no exception");
        } catch (const std::invalid_argument& e) {
            const QString msg = e.what();
            QVERIFY(msg.contains("Euler b"));
            for (const auto& n : dd::api::samplerNames()) QVERIFY2(msg.contains(QString::fromStdString("\"" + n + "\"")), e.what());
        }
        QCOMPARE(dd::api::samplerNames().size(), size_t(17));
    }

    void unsupportedConfigIsRefused() {
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                                 makeScheduler("Euler", {{"timestep_spacing", "sometimes"}}));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, makeScheduler("DDIM", {{"beta_schedule", "sigmoid"}}));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, makeScheduler("DPM++ 2M", {{"solver_order", 3}}));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, makeScheduler("Euler", {{"steps_offset", "one"}}));
    }

    // On a GPU: timesteps on the device, latents there, noise still from the CPU generator; same numbers.
    void onDevice() {
        if (dd::memory::cudaDeviceCount() == 0) QSKIP("no CUDA device");  // loads CUDA's backend where a driver is
        const nlohmann::json sd1 = readJson(kDir / "ddim.json")["config"];
        for (const auto& name : dd::api::samplerNames()) {
            auto run = [&](c10::Device device) {
                auto s = makeScheduler(name, sd1);
                s->setTimesteps(8, device);
                auto noise = seeded(42);
                at::Tensor x = noise.randn({2, 4, 8, 8}, torch::kFloat, device) * s->initNoiseSigma();
                return denoise(*s, x, 0, noise).cpu();
            };
            const double err = maxAbs(run(torch::kCPU), run(torch::kCUDA));
            qInfo("%-16s CPU vs CUDA max abs %.2e", name.c_str(), err);
            QVERIFY2(err <= 1e-3, name.c_str());
        }
    }

    // A list of generators draws each image from its own generator, like diffusers given a list.
    void perImageGenerators() {
        NoiseSource both(std::vector<ImageRng>{ImageRng(ImageRng::Kind::Cpu, 7), ImageRng(ImageRng::Kind::Cpu, 8)});
        const at::Tensor x = both.randn({2, 4, 8, 8}, torch::kFloat, torch::kCPU);
        auto a = seeded(7), b = seeded(8);
        QVERIFY(torch::equal(x[0], a.randn({1, 4, 8, 8}, torch::kFloat, torch::kCPU)[0]));
        QVERIFY(torch::equal(x[1], b.randn({1, 4, 8, 8}, torch::kFloat, torch::kCPU)[0]));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, both.randn({3, 4}, torch::kFloat, torch::kCPU));
    }
};

DD_REGISTER_TEST(TestSchedulers)

} // namespace test_schedulers
#include "test_schedulers.moc"
