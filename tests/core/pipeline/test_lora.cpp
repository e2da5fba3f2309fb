// LoRA against diffusers (fixtures: tests/parity/fixtures_lora.py): PEFT and kohya files (SD 1.x and SDXL with
// LDM names) applied by merging and as a side path give diffusers' UNet and text-encoder outputs and final
// latents; unmerging restores every weight bit for bit; switching LoRAs between runs needs no reload; tags,
// hashes, A1111 text and bad files.
#include "core/api/memory_plan.h"
#include "core/io/lora_file.h"
#include "core/io/model_error.h"
#include "core/io/model_hash.h"
#include "core/io/safetensors.h"
#include "core/memory/predictor.h"
#include "core/nn/cpu_kernels.h"
#include "core/nn/lora.h"
#include "core/pipeline/engine.h"
#include "core/pipeline/engine_test_hooks.h"
#include "core/pipeline/memory_prediction.h"
#include "core/pipeline/sd_model.h"
#include "core/settings/a1111_parameters.h"
#include "core/text/prompt_parser.h"
#include "tests/common/test_program.h"

#include "tests/common/pipeline_case.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <QFile>
#include <QJsonArray>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

namespace test_lora {  // the test program is a unity build: each file keeps its names

using namespace dd;
using dd::test::LastLatents;
using dd::test::maxAbs;

namespace {

const QString kDir = QString(DD_FIXTURES_DIR) + "/lora";
const QString kModels = QString(DD_FIXTURES_DIR) + "/pipeline";

// Every parameter and buffer, copied, to check that unmerging gives the same bits back.
std::map<std::string, torch::Tensor> snapshot(const pipeline::SdModel& m) {
    std::map<std::string, torch::Tensor> out;
    auto add = [&](const std::string& prefix, const torch::nn::Module& net) {
        for (const auto& p : net.named_parameters(true)) out[prefix + p.key()] = p.value().clone();
    };
    add("unet.", *m.unet);
    if (m.textEncoder) add("te.", *m.textEncoder);
    if (m.textEncoder2) add("te2.", *m.textEncoder2);
    return out;
}

bool sameBits(const std::map<std::string, torch::Tensor>& a, const std::map<std::string, torch::Tensor>& b, std::string& first) {
    for (const auto& [k, t] : a)
        if (!torch::equal(t, b.at(k))) {
            first = k;
            return false;
        }
    return a.size() == b.size();
}

api::GenerationSettings caseSettings(const QJsonObject& c) {
    api::GenerationSettings s = test::caseSettings(c, (kModels + "/" + c["model"].toString()).toStdString());
    s.prompt = c["prompt"].toString().replace("NAME", c["lora"].toString()).toStdString();
    s.width = s.height = 64;
    return s;
}

void writeFile(const QString& path, const QByteArray& bytes) {
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(bytes);
}

} // namespace

class TestLora : public QObject {
    Q_OBJECT
    QJsonArray m_cases;
    std::map<QString, std::pair<std::vector<uint8_t>, std::vector<uint8_t>>> m_withoutOffload;  // mode → (LoRA, none)

private slots:
    void initTestCase() {
        QVERIFY2(test::readCases(kDir, m_cases), "run tests/parity/make_fixtures.py first");
        QCOMPARE(m_cases.size(), 3);
    }

    void promptTags() {
        auto e = text::extractExtraNetworks("a photo <lora:style_v2:0.8>of a cat, <lora:detail:0.5:1.2> <hypernet:old:1>x");
        QCOMPARE(e.prompt, std::string("a photo of a cat,  x"));
        QCOMPARE(int(e.loras.size()), 2);
        QVERIFY((e.loras[0] == text::LoraTag{"style_v2", 0.8, 0.8}));
        QVERIFY((e.loras[1] == text::LoraTag{"detail", 0.5, 1.2}));
        QCOMPARE(e.ignored, std::vector<std::string>{"<hypernet:old:1>"});
        e = text::extractExtraNetworks("<lora:a> <lyco:b:te=0.25:unet=2> (red:1.2) <not a tag> <x:>");
        QCOMPARE(e.prompt, std::string("  (red:1.2) <not a tag> <x:>"));
        QVERIFY((e.loras[0] == text::LoraTag{"a", 1.0, 1.0}));
        QVERIFY((e.loras[1] == text::LoraTag{"b", 0.25, 2.0}));
        QVERIFY_THROWS_EXCEPTION(text::PromptError, text::extractExtraNetworks("x <lora:a:lots>"));
    }

    void shortHashMatchesA1111() {
        for (const auto& v : m_cases) {
            const auto c = v.toObject();
            const auto path = (kDir + "/" + c["lora"].toString() + ".safetensors").toStdString();
            QCOMPARE(QString::fromStdString(io::loraShortHash(path)), c["hash"].toString());
        }
    }

    void networksMatchDiffusers_data() {
        QTest::addColumn<int>("index");
        QTest::addColumn<bool>("side");
        for (int i = 0; i < 3; ++i)
            for (bool side : {false, true})
                QTest::newRow(qPrintable(m_cases.at(i).toObject()["lora"].toString() + (side ? " side" : " merge"))) << i << side;
    }
    void networksMatchDiffusers() {
        QFETCH(int, index);
        QFETCH(bool, side);
        c10::InferenceMode inference;
        // diffusers' own convolution arithmetic, so the bound below measures the LoRA and not the kernels (the
        // pipeline test further down runs the default plan's Winograd and small-image matmul).
        const nn::WinogradConvScope diffusersArithmetic(false);
        const auto c = m_cases.at(index).toObject();
        const auto model = pipeline::loadSdModel((kModels + "/" + c["model"].toString()).toStdString(), torch::kCPU);
        const auto ref = io::SafetensorsFile::open((kDir + "/ref_" + c["lora"].toString() + ".safetensors").toStdString());
        const auto before = snapshot(*model);

        const auto file = io::loadLoraFile((kDir + "/" + c["lora"].toString() + ".safetensors").toStdString());
        QVERIFY(file.unknownKeys.empty());
        const double scale = c["scale"].toDouble();
        const auto bound = nn::bindLora(file, {model->unet, model->textEncoder, model->textEncoder2}, scale, scale);
        QVERIFY2(bound.unmatched.empty(), bound.unmatched.empty() ? "" : bound.unmatched.front().c_str());
        QCOMPARE(bound.patches.size(), file.layers.size());
        nn::LoraApplier applier;
        applier.apply(bound.patches, side ? nn::LoraMode::SidePath : nn::LoraMode::Merge);
        QVERIFY(applier.extraBytes() > 0);

        std::optional<nn::AddedCond> added;
        if (ref->contains("pooled")) added = nn::AddedCond{ref->tensor("pooled"), ref->tensor("time_ids")};
        const auto out = model->unet->forward(ref->tensor("sample"), 500.0, ref->tensor("context"), added);
        const double unetErr = maxAbs(out, ref->tensor("unet_out"));
        const auto te = model->textEncoder->forward(ref->tensor("ids"));
        const double teErr = maxAbs(te.lastHiddenState, ref->tensor("te_hidden"));
        double te2Err = 0;
        if (ref->contains("te2_hidden")) te2Err = maxAbs(model->textEncoder2->forward(ref->tensor("ids")).hiddenState(2), ref->tensor("te2_hidden"));
        // Without the LoRA the outputs are far away: the comparison can fail.
        applier.clear();
        const double unetOff = maxAbs(model->unet->forward(ref->tensor("sample"), 500.0, ref->tensor("context"), added), ref->tensor("unet_out"));
        qInfo("unet %.3g, text encoder %.3g / %.3g (without the LoRA: unet %.3g)", unetErr, teErr, te2Err, unetOff);
        QVERIFY2(unetErr < 1e-4, "UNet output differs from diffusers'");
        QVERIFY2(teErr < 1e-4 && te2Err < 1e-4, "text encoder output differs from diffusers'");
        QVERIFY(unetOff > 1e-2);

        std::string differs;
        QVERIFY2(sameBits(before, snapshot(*model), differs), ("not restored exactly: " + differs).c_str());
        QCOMPARE(applier.extraBytes(), int64_t(0));
    }

    void pipelineMatchesDiffusers_data() {
        QTest::addColumn<int>("index");
        QTest::addColumn<QString>("mode");
        for (int i = 0; i < 3; ++i)
            for (QString mode : {"merge", "side"})
                QTest::newRow(qPrintable(m_cases.at(i).toObject()["lora"].toString() + " " + mode)) << i << mode;
    }
    void pipelineMatchesDiffusers() {
        QFETCH(int, index);
        QFETCH(QString, mode);
        const auto c = m_cases.at(index).toObject();
        auto s = caseSettings(c);
        s.loraMode = mode.toStdString();
        const auto ref = io::SafetensorsFile::open((kDir + "/ref_" + c["lora"].toString() + ".safetensors").toStdString());
        pipeline::Engine engine;
        engine.setLoraFolders({kDir.toStdString()});
        api::CancelToken cancel;
        LastLatents observer;
        const auto result = engine.generate(s, cancel, &observer);
        // Merging rounds W + ΔW once in fp32, the side path adds the two products: diffusers' fuse_lora and PEFT's
        // unmerged forward are the matching references.
        const double err = maxAbs(observer.latents, ref->tensor(mode == "merge" ? "latents_fused" : "latents"));
        qInfo("latents max abs %.3g", err);
        QVERIFY2(err < 1e-4, qPrintable(QString("latents differ by %1").arg(err)));
        QCOMPARE(int(result.settings.loras.size()), 1);
        QCOMPARE(QString::fromStdString(result.settings.loras[0].hash), c["hash"].toString());
        QVERIFY(result.settings.loras[0].fromPrompt);
        QVERIFY(result.warnings.empty());
    }

    // One engine: LoRA A, LoRA B, none — equal to fresh engines, with one model load and exact weights.
    void switchingWithoutReload() {
        const auto c = m_cases.at(0).toObject();
        auto s = caseSettings(c);
        s.prompt = "a photo of an astronaut riding a horse";
        api::CancelToken cancel;
        auto run = [&](pipeline::Engine& e, const api::GenerationSettings& st) {
            LastLatents o;
            const auto r = e.generate(st, cancel, &o);
            return std::make_pair(o.latents, r);
        };
        pipeline::Engine plain;
        const auto [noLora, _] = run(plain, s);

        int loads = 0;
        pipeline::Engine engine([&](const std::string& line) { loads += line.starts_with("loaded ") ? 1 : 0; });
        engine.setLoraFolders({kDir.toStdString()});
        auto withA = s;
        const double w = c["pipeline_scale"].toDouble();
        withA.loras = {{.name = "peft_sd1", .unetWeight = w, .textEncoderWeight = w}};
        auto withB = s;
        withB.loras = {{.name = "kohya_sd1", .unetWeight = w, .textEncoderWeight = w}};
        withB.loraMode = "side";
        const auto [a, ra] = run(engine, withA);
        QVERIFY(engine.loraBytes() > 0);
        const auto [b, rb] = run(engine, withB);
        const auto [none, rn] = run(engine, s);
        QCOMPARE(engine.loraBytes(), int64_t(0));
        QVERIFY(!torch::equal(a, noLora));
        QVERIFY(!torch::equal(b, a));
        QVERIFY2(torch::equal(none, noLora), "after taking the LoRAs off, the model is not the same as never having them");
        QCOMPARE(loads, 1);  // no reload for a LoRA switch
        // The conditioning cache must not hand out embeddings made with another text-encoder LoRA.
        QVERIFY(!rn.textEncodeCached);
        const auto ref = io::SafetensorsFile::open((kDir + "/ref_peft_sd1.safetensors").toStdString());
        QVERIFY(maxAbs(a, ref->tensor("latents_fused")) < 1e-4);  // an explicit LoRA = the same LoRA as a tag
    }

    // Offload (run on the CPU through the test hook) keeps each leaf's stored copy at home and placeholders in the
    // parameters: a merged LoRA must land in the stored copies, and taking it off must restore them exactly.
    // Every offload mode, merged or as a side path, gives the image the same LoRA gives without offload.
    void loraUnderOffload_data() {
        QTest::addColumn<int>("offload");
        QTest::addColumn<QString>("mode");
        for (auto o : {api::Offload::Model, api::Offload::Sequential, api::Offload::Group})
            for (QString mode : {"merge", "side"})
                QTest::newRow(qPrintable(QString(api::offloadName(o)) + " " + mode)) << int(o) << mode;
    }
    void loraUnderOffload() {
        QFETCH(int, offload);
        QFETCH(QString, mode);
        auto s = caseSettings(m_cases.at(0).toObject());
        s.loraMode = mode.toStdString();
        auto none = s;
        none.prompt = text::extractExtraNetworks(s.prompt).prompt;
        api::CancelToken cancel;
        if (!m_withoutOffload.count(mode)) {  // the references, once per mode
            pipeline::Engine plain;
            plain.setLoraFolders({kDir.toStdString()});
            m_withoutOffload[mode] = {plain.generate(s, cancel, nullptr).images.at(0).rgb,
                                      plain.generate(none, cancel, nullptr).images.at(0).rgb};
        }
        const auto& [want, wantNone] = m_withoutOffload[mode];
        QVERIFY(want != wantNone);

        int loads = 0;
        pipeline::Engine engine([&](const std::string& line) { loads += line.starts_with("loaded ") ? 1 : 0; });
        engine.setLoraFolders({kDir.toStdString()});
        pipeline::EngineTestHooks hooks;
        hooks.offloadOnCpu = true;
        engine.setTestHooks(hooks);
        for (auto* st : {&s, &none}) st->plan.offload = api::Offload(offload);
        const auto r = engine.generate(s, cancel, nullptr);
        QCOMPARE(r.environment.offload, std::string(api::offloadName(api::Offload(offload))));
        QVERIFY2(r.images.at(0).rgb == want, "the LoRA under offload gives another image than without offload");
        QCOMPARE(engine.ledger().resident("compute"), int64_t(0));  // everything went home
        QVERIFY2(engine.generate(none, cancel, nullptr).images.at(0).rgb == wantNone, "the LoRA was not taken off exactly");
        QVERIFY(engine.generate(s, cancel, nullptr).images.at(0).rgb == want);
        QCOMPARE(loads, 1);
    }

    // fp8 layerwise storage (the UNet's stored copies in float8): merging writes the merged weight in fp8, a side
    // path computes in the compute dtype; both change the image, and taking either off gives the fp8 image
    // without LoRA back bit for bit. The LoRA touches the UNet only (the text encoders are not fp8), so the image
    // can only change through the UNet's fp8 stored copies.
    void loraWithFp8Storage() {
        const auto c = m_cases.at(0).toObject();
        auto none = caseSettings(c);
        none.prompt = text::extractExtraNetworks(none.prompt).prompt;
        none.plan.fp8Storage = "e4m3fn";
        auto s = none;
        s.loras = {{.name = c["lora"].toString().toStdString(), .unetWeight = 1.0, .textEncoderWeight = 0.0}};
        api::CancelToken cancel;
        pipeline::Engine engine;
        engine.setLoraFolders({kDir.toStdString()});
        const auto r = engine.generate(none, cancel, nullptr);
        QVERIFY(r.environment.offload.find("fp8-e4m3fn") != std::string::npos);
        const auto withoutLora = r.images.at(0).rgb;
        for (const char* mode : {"merge", "side"}) {
            s.loraMode = mode;
            QVERIFY2(engine.generate(s, cancel, nullptr).images.at(0).rgb != withoutLora, mode);
            QVERIFY2(engine.generate(none, cancel, nullptr).images.at(0).rgb == withoutLora, mode);
        }
    }

    // The predictor's LoRA bytes, from file shapes alone, equal what the applier holds (fp32 plan), and go into
    // the stages after the load.
    void memoryPrediction() {
        c10::InferenceMode inference;
        const auto c = m_cases.at(1).toObject();
        const auto path = (kDir + "/" + c["lora"].toString() + ".safetensors").toStdString();
        const auto model = pipeline::loadSdModel((kModels + "/" + c["model"].toString()).toStdString(), torch::kCPU);
        const auto file = io::loadLoraFile(path);
        const auto bound = nn::bindLora(file, {model->unet, model->textEncoder, model->textEncoder2}, 1, 1);
        api::MemoryPlan fp32;
        fp32.unet = fp32.textEncoder = api::Precision::FP32;
        for (bool side : {false, true}) {
            nn::LoraApplier applier;
            applier.apply(bound.patches, side ? nn::LoraMode::SidePath : nn::LoraMode::Merge);
            QCOMPARE(pipeline::loraExtraBytes({path}, fp32, side), applier.extraBytes());
        }
        memory::PredictInput in;
        in.plan = fp32;
        const auto shape = pipeline::modelShapeOf(*model);
        const auto without = memory::predict(shape, in);
        in.loraBytes = 12345;
        const auto with = memory::predict(shape, in);
        QCOMPARE(with.load.total(), without.load.total() + 12345);
        QCOMPARE(with.denoise.total(), without.denoise.total() + 12345);
        in.cuda = true;  // model offload: merged originals stay on the host, side paths visit the device
        in.plan.offload = api::Offload::Model;
        QCOMPARE(memory::predict(shape, in).denoise.weights, [&] { auto i = in; i.loraBytes = 0; return memory::predict(shape, i).denoise.weights; }());
        in.loraSidePath = true;
        QCOMPARE(memory::predict(shape, in).denoise.total(), [&] { auto i = in; i.loraBytes = 0; return memory::predict(shape, i).denoise.total(); }() + 12345);
    }

    void a1111Text() {
        api::GenerationSettings s;
        s.prompt = "a cat <lora:style:0.8>";
        s.loras = {{"style", 0.8, 0.8, "0123456789ab", true}, {"/x/y/detail.safetensors", 1.0, 0.5, "ba9876543210", false}};
        const auto text = settings::writeA1111Parameters(s);
        QVERIFY2(text.starts_with("a cat <lora:style:0.8> <lora:detail:0.5:1>\n"), text.c_str());
        QVERIFY2(text.find("Lora hashes: \"style: 0123456789ab, detail: ba9876543210\"") != std::string::npos, text.c_str());
        const auto info = settings::parseA1111Parameters(text);
        QCOMPARE(int(info.settings.loras.size()), 2);
        QCOMPARE(info.settings.loras[0].hash, std::string("0123456789ab"));
        QCOMPARE(info.settings.loras[1].name, std::string("detail"));
        QCOMPARE(info.settings.loras[1].unetWeight, 1.0);
        QCOMPARE(info.settings.loras[1].textEncoderWeight, 0.5);
        QCOMPARE(info.settings.loras[1].hash, std::string("ba9876543210"));
        QVERIFY(info.settings.loras[1].fromPrompt);
        QVERIFY(info.has("loras"));
        // sidecar JSON round trip
        nlohmann::json j = s;
        QCOMPARE(j.get<api::GenerationSettings>().loras, s.loras);
        nlohmann::json plain = api::GenerationSettings{};
        QVERIFY(!plain.contains("loras"));
    }

    void badFiles() {
        QTemporaryDir dir;
        const QString garbage = dir.filePath("garbage.safetensors");
        writeFile(garbage, "this is not a safetensors file at all");
        try {
            io::loadLoraFile(garbage.toStdString());
            QFAIL("garbage accepted");
        } catch (const io::ModelFileError& e) {
            QVERIFY2(std::string(e.what()).find("garbage.safetensors") != std::string::npos, e.what());
        }
        auto expectError = [&](const io::TensorMap& t, const std::string& name, const std::string& words) {
            const auto path = dir.filePath(QString::fromStdString(name)).toStdString();
            io::writeSafetensors(path, t);
            try {
                io::loadLoraFile(path);
                QFAIL(("accepted " + name).c_str());
            } catch (const io::ModelFileError& e) {
                const std::string m = e.what();
                QVERIFY2(m.find(name) != std::string::npos && m.find(words) != std::string::npos, m.c_str());
            }
        };
        const auto r = torch::randn({4, 8});
        expectError({{"lora_unet_x_to_q.lora_down.weight", r}}, "half.safetensors", "not its up matrix");
        expectError({{"lora_unet_x.lora_down.weight", r}, {"lora_unet_x.lora_up.weight", torch::randn({8, 3})}}, "rank.safetensors",
                    "are not the two factors");
        expectError({{"model.diffusion_model.out.2.weight", r}}, "checkpoint.safetensors", "no LoRA layers found");

        // Unknown keys and layers the model lacks: a warning naming the file, the rest still applied.
        const auto good = io::SafetensorsFile::open((kDir + "/kohya_sd1.safetensors").toStdString())->all();
        auto mixed = good;
        mixed["lora_unet_nowhere_to_q.lora_down.weight"] = torch::randn({4, 8});
        mixed["lora_unet_nowhere_to_q.lora_up.weight"] = torch::randn({8, 4});
        mixed["lora_unet_mid_block_attentions_0_proj_in.hada_w1_a"] = torch::randn({4, 8});
        io::writeSafetensors(dir.filePath("mixed.safetensors").toStdString(), mixed);
        auto s = caseSettings(m_cases.at(1).toObject());
        s.prompt = "a photo <lora:mixed:0.7>";
        pipeline::Engine engine;
        engine.setLoraFolders({dir.path().toStdString()});
        api::CancelToken cancel;
        const auto result = engine.generate(s, cancel, nullptr);
        QCOMPARE(int(result.warnings.size()), 1);
        const auto& w = result.warnings.front();
        QVERIFY2(w.find("mixed.safetensors") != std::string::npos && w.find("2 LoRA entries not applied") != std::string::npos &&
                     w.find("nowhere_to_q") != std::string::npos && w.find("hada_w1_a") != std::string::npos, w.c_str());

        s.prompt = "a photo <lora:../../mixed:1>";
        try {
            engine.generate(s, cancel, nullptr);
            QFAIL("a tag reached outside the LoRA folders");
        } catch (const std::invalid_argument& e) {
            QVERIFY2(std::string(e.what()).find("names a path") != std::string::npos, e.what());
        }
        s.prompt = "a photo <lora:absent:1>";
        try {
            engine.generate(s, cancel, nullptr);
            QFAIL("missing LoRA accepted");
        } catch (const std::invalid_argument& e) {
            QVERIFY2(std::string(e.what()).find("LoRA 'absent' not found") != std::string::npos, e.what());
        }
    }
};

DD_REGISTER_TEST(TestLora)

} // namespace test_lora
#include "test_lora.moc"
