// CLIP text encoders and SD/SDXL prompt conditioning against transformers 5.24 / diffusers 0.42 outputs
// written by tests/parity/fixtures_clip.py. fp32 must match within 1e-4 (max abs). Half precision is
// compared with the fp32 reference, the error scaled by the reference's largest magnitude (see kHalfTol).
#include "core/io/checkpoint.h"
#include "core/io/model_error.h"
#include "core/io/single_file.h"
#include "core/nn/clip_text.h"
#include "core/text/clip_tokenizer.h"
#include "core/text/conditioning.h"
#include "tests/common/test_program.h"

#include <QtTest>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>

namespace test_clip_text {  // the test program is a unity build: each file keeps its names

using namespace dd;
namespace fs = std::filesystem;

namespace {

const fs::path kFixtures = fs::path(DD_FIXTURES_DIR);
const fs::path kClip = kFixtures / "clip";
constexpr double kFp32Tol = 1e-4;
// Half precision vs the fp32 reference, as max abs error / max(1, max |reference|) per output. Measured on CPU
// (x86-64, libtorch 2.15) with the random-weight CLIP-L (12 layers, |x| up to ~13): fp16 2.4e-3, bf16 1.8e-2.
// transformers itself in fp16/bf16 on the same CPU errs by 2.3e-3 / 1.7e-2. On an H200 (CUDA SDPA kernels,
// torch 2.11) ours gave 2.3e-3 / 1.8e-2, transformers 2.2e-3 / 1.6e-2. The tolerances leave about 3× headroom.
double halfTolerance(torch::Dtype d) { return d == torch::kBFloat16 ? 5e-2 : 8e-3; }

nlohmann::json readJson(const fs::path& p) {
    std::ifstream f(p);
    return nlohmann::json::parse(f);
}

io::TensorMap readTensors(const fs::path& p) { return io::SafetensorsFile::open(p.string())->all(); }

nn::ClipTextModel loadFolder(const fs::path& dir, torch::Dtype dtype = torch::kFloat32) {
    const auto cfg = nn::ClipTextConfig::fromJson(readJson(dir / "config.json"));
    return nn::loadClipText(cfg, readTensors(dir / "model.safetensors"), dir.filename().string(), dtype);
}

double maxAbs(const torch::Tensor& got, const torch::Tensor& want) {
    if (got.sizes() != want.sizes()) return std::numeric_limits<double>::infinity();
    return (got.to(torch::kFloat64) - want.to(torch::kFloat64)).abs().max().item<double>();
}

// Compares every output with the reference file; returns the largest error relative to `scale(want)`.
struct Compared {
    double worst = 0;
    std::string where;
};
Compared compareOutputs(const nn::ClipTextOutput& out, const io::TensorMap& ref, bool relative) {
    Compared c;
    auto check = [&](const std::string& name, const torch::Tensor& got) {
        const auto& want = ref.at(name);
        double e = maxAbs(got, want);
        if (relative) e /= std::max(1.0, want.abs().max().item<double>());
        if (e > c.worst) c = {e, name};
    };
    check("last_hidden_state", out.lastHiddenState);
    check("pooler_output", out.pooled);
    for (size_t i = 0; i < out.hiddenStates.size(); ++i) check("hidden_states." + std::to_string(i), out.hiddenStates[i]);
    if (ref.count("text_embeds")) check("text_embeds", out.textEmbeds);
    return c;
}

std::string errorOf(const std::function<void()>& f) {
    try {
        f();
    } catch (const io::ModelFileError& e) {
        return e.what();
    }
    return "no error";
}

} // namespace

class TestClipText : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
        if (!fs::exists(kClip / "clip-l.safetensors"))
            QFAIL("fixtures missing: run .venv/bin/python tests/parity/make_fixtures.py " DD_FIXTURES_DIR);
        torch::manual_seed(0);
    }

    void config() {
        auto c = nn::ClipTextConfig::fromJson(readJson(kFixtures / "models/tiny-sdxl/text_encoder_2/config.json"));
        QCOMPARE(c.projectionDim, int64_t(32));
        QVERIFY(c.hiddenAct == nn::ClipActivation::Gelu);
        QCOMPARE(c.eosTokenId, int64_t(2));
        c = nn::ClipTextConfig::fromJson(readJson(kFixtures / "models/tiny-sd2/text_encoder/config.json"));
        QCOMPARE(c.projectionDim, int64_t(0));  // SD2 lists projection_dim 512 but is a CLIPTextModel
        c = nn::ClipTextConfig::fromJson(readJson(kClip / "clip-l/config.json"));
        QVERIFY(c.hiddenAct == nn::ClipActivation::QuickGelu);
        QCOMPARE(c.numHiddenLayers, int64_t(12));
        QCOMPARE(c.eosTokenId, int64_t(49407));
        const auto bad = errorOf([] { nn::ClipTextConfig::fromJson(nlohmann::json{{"hidden_act", "swish"}}); });
        QVERIFY2(bad.find("hidden_act 'swish'") != std::string::npos, bad.c_str());
    }

    // Each tiny encoder through both loaders: the diffusers folder (keys without "text_model.") and the
    // single file (LDM / OpenCLIP names mapped to transformers'), against the same reference.
    void tinyEncoders_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("component");
        QTest::addColumn<QString>("reference");
        for (const char* form : {"", ".safetensors"}) {
            QTest::newRow(qPrintable(QString("sd1") + form)) << QString("tiny-sd1") + form << "text_encoder" << "tiny-sd1";
            QTest::newRow(qPrintable(QString("sd2") + form)) << QString("tiny-sd2") + form << "text_encoder" << "tiny-sd2";
            QTest::newRow(qPrintable(QString("sdxl-1") + form)) << QString("tiny-sdxl") + form << "text_encoder" << "tiny-sdxl-1";
            QTest::newRow(qPrintable(QString("sdxl-2") + form)) << QString("tiny-sdxl") + form << "text_encoder_2" << "tiny-sdxl-2";
        }
    }
    void tinyEncoders() {
        QFETCH(QString, model);
        QFETCH(QString, component);
        QFETCH(QString, reference);
        const std::string comp = component.toStdString();
        const fs::path path = kFixtures / "models" / model.toStdString();
        io::Checkpoint ck;
        if (path.extension() == ".safetensors") {
            // What the weights cannot tell (head count, activation) comes from the matching folder's config.
            const auto folder = readJson(fs::path(path).replace_extension() / comp / "config.json");
            io::SingleFileOptions opt;
            opt.configOverrides[comp] = {{"num_attention_heads", folder.at("num_attention_heads")}, {"hidden_act", folder.at("hidden_act")}};
            ck = io::loadSingleFile(path.string(), opt);
        } else {
            ck = io::loadCheckpoint(path.string());
        }
        auto te = nn::loadClipText(nn::ClipTextConfig::fromJson(ck.configs.at(comp)), ck.components.at(comp), comp);
        const auto ref = readTensors(kClip / (reference.toStdString() + ".safetensors"));
        torch::NoGradGuard g;
        const auto c = compareOutputs(te->forward(ref.at("ids")), ref, false);
        qInfo("%s fp32: max abs %.3g (%s)", qPrintable(model + "/" + component), c.worst, c.where.c_str());
        QVERIFY2(c.worst <= kFp32Tol, c.where.c_str());
    }

    void clipLargeFp32() {
        auto te = loadFolder(kClip / "clip-l");
        const auto ref = readTensors(kClip / "clip-l.safetensors");
        torch::NoGradGuard g;
        const auto out = te->forward(ref.at("ids"));
        QCOMPARE(out.hiddenStates.size(), size_t(13));
        const auto c = compareOutputs(out, ref, false);
        qInfo("CLIP-L fp32: max abs %.3g (%s)", c.worst, c.where.c_str());
        QVERIFY2(c.worst <= kFp32Tol, c.where.c_str());
    }

    void clipLargeHalf_data() {
        QTest::addColumn<int>("dtype");
        QTest::newRow("fp16") << int(torch::kHalf);
        QTest::newRow("bf16") << int(torch::kBFloat16);
    }
    void clipLargeHalf() {
        QFETCH(int, dtype);
        const auto d = static_cast<torch::Dtype>(dtype);
        auto te = loadFolder(kClip / "clip-l", d);
        QCOMPARE(te->dtype(), d);
        const auto ref = readTensors(kClip / "clip-l.safetensors");
        torch::NoGradGuard g;
        const auto out = te->forward(ref.at("ids"));
        QCOMPARE(out.lastHiddenState.scalar_type(), d);
        const auto c = compareOutputs(out, ref, true);
        const auto a = compareOutputs(out, ref, false);
        qInfo("CLIP-L %s: max abs / max|ref| %.3g (%s), max abs %.3g (%s)", QTest::currentDataTag(), c.worst, c.where.c_str(),
              a.worst, a.where.c_str());
        QVERIFY2(c.worst <= halfTolerance(d), c.where.c_str());
    }

    void encodeSd_data() {
        QTest::addColumn<QString>("family");
        QTest::addColumn<int>("clipSkip");
        for (const char* f : {"sd1", "sd2"})
            for (int skip : {0, 1, 2}) QTest::newRow(qPrintable(QString("%1 skip %2").arg(f).arg(skip))) << QString(f) << skip;
    }
    void encodeSd() {
        QFETCH(QString, family);
        QFETCH(int, clipSkip);
        auto te = loadFolder(kClip / "encode" / family.toStdString() / "text_encoder");
        const auto ref = readTensors(kClip / ("encode-" + family.toStdString() + ".safetensors"));
        const std::string s = ".skip" + std::to_string(clipSkip);
        const auto cfg = text::encodeSdCfg(te, ref.at("ids"), ref.at("negative_ids"), clipSkip);
        QVERIFY(!cfg.positive.pooled.defined());
        const double pos = maxAbs(cfg.positive.embeds, ref.at("prompt_embeds" + s));
        const double neg = maxAbs(cfg.negative.embeds, ref.at("negative_prompt_embeds" + s));
        const double none = maxAbs(text::encodeSd(te, ref.at("empty_ids")).embeds, ref.at("negative_prompt_embeds.none"));
        qInfo("encode %s clip_skip %d: prompt %.3g, negative %.3g, empty negative %.3g", qPrintable(family), clipSkip, pos, neg, none);
        QVERIFY(pos <= kFp32Tol && neg <= kFp32Tol && none <= kFp32Tol);
        const auto batched = cfg.batched().embeds;
        QCOMPARE(batched.size(0), 2 * cfg.positive.embeds.size(0));
        QVERIFY(torch::equal(batched.narrow(0, 0, cfg.negative.embeds.size(0)), cfg.negative.embeds));
    }

    void encodeSdxl_data() {
        QTest::addColumn<QString>("negative");
        QTest::addColumn<int>("clipSkip");
        QTest::newRow("negative prompt") << "skip0" << 0;
        QTest::newRow("negative prompt, clip skip 1") << "skip1" << 1;
        QTest::newRow("no negative prompt → zeros") << "none" << 0;
    }
    void encodeSdxl() {
        QFETCH(QString, negative);
        QFETCH(int, clipSkip);
        const fs::path dir = kClip / "encode/sdxl";
        auto te1 = loadFolder(dir / "text_encoder");
        auto te2 = loadFolder(dir / "text_encoder_2");
        const auto ref = readTensors(kClip / "encode-sdxl.safetensors");
        const std::string s = "." + negative.toStdString();
        const bool zero = negative == "none";
        const auto cfg = text::encodeSdxlCfg(te1, te2, ref.at("ids_1"), ref.at("ids_2"), zero ? torch::Tensor() : ref.at("negative_ids_1"),
                                             zero ? torch::Tensor() : ref.at("negative_ids_2"), zero, clipSkip);
        QCOMPARE(cfg.positive.embeds.size(2), int64_t(64));
        double worst = 0;
        const std::vector<std::pair<torch::Tensor, std::string>> outputs = {
            {cfg.positive.embeds, "prompt_embeds"}, {cfg.negative.embeds, "negative_prompt_embeds"},
            {cfg.positive.pooled, "pooled_prompt_embeds"}, {cfg.negative.pooled, "negative_pooled_prompt_embeds"}};
        for (const auto& [got, name] : outputs) {
            const double e = maxAbs(got, ref.at(name + s));
            QVERIFY2(e <= kFp32Tol, name.c_str());
            worst = std::max(worst, e);
        }
        qInfo("encode sdxl %s: max abs %.3g", qPrintable(negative), worst);
        if (zero) QVERIFY(cfg.negative.embeds.abs().max().item<float>() == 0.f);
    }

    // The refiner has only text_encoder_2: its conditioning is encoder 2's part of the base's.
    void encodeSdxlRefiner() {
        const fs::path dir = kClip / "encode/sdxl";
        auto te1 = loadFolder(dir / "text_encoder");
        auto te2 = loadFolder(dir / "text_encoder_2");
        const auto ref = readTensors(kClip / "encode-sdxl.safetensors");
        const auto base = text::encodeSdxl(te1, te2, ref.at("ids_1"), ref.at("ids_2"));
        const auto refiner = text::encodeSdxl(nn::ClipTextModel(nullptr), te2, {}, ref.at("ids_2"));
        QVERIFY(torch::equal(refiner.embeds, base.embeds.narrow(2, 32, 32)));
        QVERIFY(torch::equal(refiner.pooled, base.pooled));
    }

    // Our tokenizer gives the ids the pipelines fed their encoders (both pad styles).
    void tokenIdsMatchPipelineTokenizers() {
        const std::vector<std::string> prompts = {"a photo of an astronaut riding a horse on mars", "hello,world!!", ""};
        const auto ref = readTensors(kClip / "encode-sdxl.safetensors");
        const auto tok1 = text::ClipTokenizer::fromFolder(kFixtures / "models/tiny-sdxl/tokenizer");
        const auto tok2 = text::ClipTokenizer::fromFolder(kFixtures / "models/tiny-sdxl/tokenizer_2");
        QVERIFY(torch::equal(text::tokenIds(tok1, prompts), ref.at("ids_1").narrow(0, 0, 3)));
        QVERIFY(torch::equal(text::tokenIds(tok2, prompts), ref.at("ids_2").narrow(0, 0, 3)));
    }

    void clipSkipNumbering() {
        static_assert(text::clipSkipFromA1111(1) == 0 && text::clipSkipFromA1111(2) == 1 && text::clipSkipToA1111(1) == 2);
        auto te = loadFolder(kClip / "encode/sd1/text_encoder");
        const auto ids = readTensors(kClip / "encode-sd1.safetensors").at("ids");
        torch::NoGradGuard g;
        const auto out = te->forward(ids);
        QVERIFY(torch::equal(text::encodeSd(te, ids, 1).embeds, te->finalLayerNorm(out.hiddenState(2))));
        QVERIFY(torch::equal(out.hiddenState(1), out.hiddenStates.back()));
        bool threw = false;
        try {
            out.hiddenState(7);  // 5 layers → 6 hidden states
        } catch (const std::out_of_range&) {
            threw = true;
        }
        QVERIFY(threw);
    }

    void weightErrorsNameTheKey() {
        const fs::path dir = kFixtures / "models/tiny-sdxl/text_encoder_2";
        const auto cfg = nn::ClipTextConfig::fromJson(readJson(dir / "config.json"));
        const auto good = readTensors(dir / "model.safetensors");
        const std::string key = "text_model.encoder.layers.3.mlp.fc1.weight";
        QVERIFY(good.count(key));

        auto missing = good;
        missing.erase(key);
        auto e = errorOf([&] { nn::loadClipText(cfg, missing, "text_encoder_2"); });
        QVERIFY2(e.find("text_encoder_2") != std::string::npos && e.find(key) != std::string::npos && e.find("missing") != std::string::npos,
                 e.c_str());

        auto wrong = good;
        wrong[key] = torch::zeros({37, 31});
        e = errorOf([&] { nn::loadClipText(cfg, wrong, "text_encoder_2"); });
        QVERIFY2(e.find(key) != std::string::npos && e.find("[37, 31]") != std::string::npos, e.c_str());

        auto noProjection = good;
        noProjection.erase("text_projection.weight");
        e = errorOf([&] { nn::loadClipText(cfg, noProjection, "text_encoder_2"); });
        QVERIFY2(e.find("text_projection.weight") != std::string::npos, e.c_str());

        auto extra = good;
        extra["text_model.encoder.layers.9.mlp.fc1.weight"] = torch::zeros({37, 32});
        e = errorOf([&] { nn::loadClipText(cfg, extra, "text_encoder_2"); });
        QVERIFY2(e.find("layers.9.mlp.fc1.weight") != std::string::npos, e.c_str());

        extra = good;
        extra["text_model.embeddings.position_ids"] = torch::arange(77).unsqueeze(0);
        QCOMPARE(errorOf([&] { nn::loadClipText(cfg, extra, "text_encoder_2"); }), std::string("no error"));
    }
};

DD_REGISTER_TEST(TestClipText)

} // namespace test_clip_text
#include "test_clip_text.moc"
