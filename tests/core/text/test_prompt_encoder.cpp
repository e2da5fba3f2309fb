// Prompt encoding (core/text/prompt_encoder.h): A1111 syntax against the step-by-step re-creation of A1111's
// sd_hijack_clip in tests/parity/fixtures_prompts.py (fp32, max abs 1e-4); reference syntax against the
// diffusers path of conditioning.h, bit for bit; a long weighted prompt through the engine's demo model.
#include "core/api/generation_settings.h"
#include "core/io/safetensors.h"
#include "core/nn/clip_text.h"
#include "core/pipeline/engine.h"
#include "core/text/clip_tokenizer.h"
#include "core/text/prompt_encoder.h"
#include "tests/common/test_program.h"

#include <QtTest>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <map>

namespace test_prompt_encoder {  // the test program is a unity build: each file keeps its names

using namespace dd;
namespace fs = std::filesystem;

const fs::path kFixtures = fs::path(DD_FIXTURES_DIR);
constexpr double kTol = 1e-4;

nlohmann::json readJson(const fs::path& p) {
    std::ifstream f(p);
    return nlohmann::json::parse(f);
}

io::TensorMap readTensors(const fs::path& p) { return io::SafetensorsFile::open(p.string())->all(); }

nn::ClipTextModel loadFolder(const fs::path& dir) {
    const auto cfg = nn::ClipTextConfig::fromJson(readJson(dir / "config.json"));
    return nn::loadClipText(cfg, readTensors(dir / "model.safetensors"), dir.filename().string());
}

double maxAbs(const torch::Tensor& got, const torch::Tensor& want) {
    if (got.sizes() != want.sizes()) return std::numeric_limits<double>::infinity();
    return (got.to(torch::kFloat64) - want.to(torch::kFloat64)).abs().max().item<double>();
}

// The fixture encoders (clip/encode/<family>) with the tiny models' own tokenizers, as the engine loads them.
struct Family {
    nn::ClipTextModel te1{nullptr}, te2{nullptr};
    std::optional<text::ClipTokenizer> tok1, tok2;
    text::TextModel model() const {
        return {te1, te2, tok1 ? &*tok1 : nullptr, tok2 ? &*tok2 : nullptr, te2 ? true : false};
    }
};

Family loadFamily(const std::string& name) {
    Family f;
    const fs::path enc = kFixtures / "clip/encode" / name, models = kFixtures / "models" / ("tiny-" + name);
    f.te1 = loadFolder(enc / "text_encoder");
    f.tok1 = text::ClipTokenizer::fromFolder(models / "tokenizer");
    if (name == "sdxl") {
        f.te2 = loadFolder(enc / "text_encoder_2");
        f.tok2 = text::ClipTokenizer::fromFolder(models / "tokenizer_2");
    }
    return f;
}

text::PromptEncodeOptions optionsFor(const std::string& syntax, const std::string& emphasis, int clipSkip) {
    text::TextInput input;
    input.promptSyntax = syntax;
    input.emphasis = emphasis;
    input.clipSkip = clipSkip;
    return text::promptEncodeOptions(input);
}

bool bitEqual(const text::TextConditioning& a, const text::TextConditioning& b) {
    auto same = [](const torch::Tensor& x, const torch::Tensor& y) {
        return x.defined() == y.defined() && (!x.defined() || (x.sizes() == y.sizes() && torch::equal(x, y)));
    };
    return same(a.embeds, b.embeds) && same(a.pooled, b.pooled);
}

// The chunks A1111 feeds each encoder: OpenCLIP ones ("!" text, 0 after the first EOS) for a tokenizer padding 0.
void checkChunkIds(const nlohmann::json& c, const io::TensorMap& ref) {
    const fs::path models = kFixtures / "models" / ("tiny-" + c["family"].get<std::string>());
    for (const char* side : {"positive", "negative"}) {
        for (int e = 1; e <= 2; ++e) {
            const auto key = std::string(side) + "_ids_" + std::to_string(e);
            if (!ref.count(key)) continue;
            auto tok = text::ClipTokenizer::fromFolder(models / (e == 1 ? "tokenizer" : "tokenizer_2"));
            text::PromptOptions o;
            o.emphasis = c["emphasis"] != "None";
            if (tok.padId() != tok.eosId()) o.padId = tok.padId(), tok = tok.withPad(text::ClipPad::EndOfText);
            const auto chunks = text::tokenizePrompt(tok, c[side == std::string("positive") ? "prompt" : "negative"].get<std::string>(), o).chunks;
            std::vector<int64_t> ids;
            for (const auto& chunk : chunks) ids.insert(ids.end(), chunk.ids.begin(), chunk.ids.end());
            const auto want = ref.at(key).flatten();
            QVERIFY2(torch::equal(torch::tensor(ids, torch::kLong), want.to(torch::kLong)), key.c_str());
        }
    }
}

class TestPromptEncoder : public QObject {
    Q_OBJECT
    std::map<std::string, Family> m_families;

    const Family& family(const std::string& name) {
        auto it = m_families.find(name);
        if (it == m_families.end()) it = m_families.emplace(name, loadFamily(name)).first;
        return it->second;
    }

private slots:
    void initTestCase() {
        QVERIFY2(fs::exists(kFixtures / "prompts/cases.json"), "run tests/parity/make_fixtures.py first");
        torch::set_num_threads(2);
    }

    void matchesA1111_data() {
        QTest::addColumn<int>("index");
        const auto cases = readJson(kFixtures / "prompts/cases.json");
        for (size_t i = 0; i < cases.size(); ++i)
            QTest::newRow(cases[i]["name"].get<std::string>().c_str()) << int(i);
    }
    void matchesA1111() {
        QFETCH(int, index);
        const auto c = readJson(kFixtures / "prompts/cases.json").at(size_t(index));
        const auto name = c["name"].get<std::string>();
        const auto ref = readTensors(kFixtures / "prompts" / (name + ".safetensors"));
        const auto opts = optionsFor("a1111", c["emphasis"], c["clip_skip"]);
        const auto got = text::encodePrompts(family(c["family"]).model(), c["prompt"].get<std::string>(),
                                             c["negative"].get<std::string>(), opts);
        checkChunkIds(c, ref);
        const double pos = maxAbs(got.positive.embeds, ref.at("positive"));
        const double neg = maxAbs(got.negative.embeds, ref.at("negative"));
        double pooled = 0;
        if (ref.count("positive_pooled"))
            pooled = std::max(maxAbs(got.positive.pooled, ref.at("positive_pooled")),
                              maxAbs(got.negative.pooled, ref.at("negative_pooled")));
        qInfo("%s: %lld tokens, positive %.3g, negative %.3g, pooled %.3g", name.c_str(),
              static_cast<long long>(got.positive.embeds.size(1)), pos, neg, pooled);
        QVERIFY2(pos <= kTol, qPrintable(QString("positive differs by %1").arg(pos)));
        QVERIFY2(neg <= kTol, qPrintable(QString("negative differs by %1").arg(neg)));
        QVERIFY2(pooled <= kTol, qPrintable(QString("pooled differs by %1").arg(pooled)));
    }

    // Reference syntax is the diffusers path the pipeline parity test covers, unchanged.
    void referenceIsTheDiffusersPath() {
        const std::string prompt = "a (cat:1.3) BREAK " + std::string(400, 'x') + " [dog]", negative = "((ugly))";
        const auto ref = optionsFor("reference", "Original", 2);
        {
            const Family& f = family("sd1");
            const auto got = text::encodePrompts(f.model(), prompt, negative, ref);
            const auto want = text::encodeSdCfg(f.te1, text::tokenIds(*f.tok1, {prompt}), text::tokenIds(*f.tok1, {negative}), 1);
            QVERIFY(bitEqual(got.positive, want.positive));
            QVERIFY(bitEqual(got.negative, want.negative));
            QCOMPARE(got.positive.embeds.size(1), 77);
            const auto alone = text::encodePrompts(f.model(), prompt, std::nullopt, ref);
            QVERIFY(!alone.negative.embeds.defined());
            QVERIFY(bitEqual(alone.positive, text::encodeSd(f.te1, text::tokenIds(*f.tok1, {prompt}), 1)));
        }
        const Family& f = family("sdxl");
        for (const std::string& neg : {negative, std::string()}) {
            const auto got = text::encodePrompts(f.model(), prompt, neg, ref);
            const auto want = text::encodeSdxlCfg(f.te1, f.te2, text::tokenIds(*f.tok1, {prompt}), text::tokenIds(*f.tok2, {prompt}),
                                                  text::tokenIds(*f.tok1, {neg}), text::tokenIds(*f.tok2, {neg}), neg.empty(), 1);
            QVERIFY(bitEqual(got.positive, want.positive));
            QVERIFY(bitEqual(got.negative, want.negative));
        }
    }

    // A1111 syntax on a plain prompt of at most 75 tokens with the default clip skip: one chunk, weights 1, and
    // SD 1.x's tokenizer pads with EOS as diffusers does, so both syntaxes give the same tensors.
    void plainShortPromptAgrees() {
        const Family& f = family("sd1");
        const auto a = text::encodePrompts(f.model(), "a photo of a cat", std::string("blurry"), optionsFor("a1111", "Original", 1));
        const auto r = text::encodePrompts(f.model(), "a photo of a cat", std::string("blurry"), optionsFor("reference", "Original", 1));
        QVERIFY(maxAbs(a.positive.embeds, r.positive.embeds) <= 1e-6);
        QVERIFY(maxAbs(a.negative.embeds, r.negative.embeds) <= 1e-6);
    }

    // Clip skip N on SDXL as each tool reads it: diffusers hidden state −(N+1), A1111 −2 whatever N, ComfyUI −N.
    void sdxlClipSkipAsEachToolReadsIt() {
        const auto opts = [](const std::string& how, int n) {
            text::TextInput in;
            in.sdxlClipSkip = how, in.clipSkip = n;
            return text::promptEncodeOptions(in);
        };
        const auto embeds = [&](const std::string& fam, const text::PromptEncodeOptions& o) {
            return text::encodePrompts(family(fam).model(), "a photo of a cat", std::nullopt, o).positive.embeds;
        };
        QCOMPARE(maxAbs(embeds("sdxl", opts("A1111", 2)), embeds("sdxl", opts("diffusers", 1))), 0.0);
        QCOMPARE(maxAbs(embeds("sdxl", opts("A1111", 3)), embeds("sdxl", opts("diffusers", 1))), 0.0);
        QCOMPARE(maxAbs(embeds("sdxl", opts("ComfyUI", 3)), embeds("sdxl", opts("diffusers", 2))), 0.0);
        QVERIFY(maxAbs(embeds("sdxl", opts("ComfyUI", 1)), embeds("sdxl", opts("diffusers", 1))) > 1e-3);  // −1: the last
        QVERIFY(maxAbs(embeds("sdxl", opts("diffusers", 2)), embeds("sdxl", opts("diffusers", 1))) > 1e-3);
        QCOMPARE(maxAbs(embeds("sd1", opts("A1111", 2)), embeds("sd1", opts("diffusers", 2))), 0.0);  // SD 1.x: one reading
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, opts("Forge", 2));
    }

    void rejectsUnknownNames() {
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, optionsFor("comfy", "Original", 1));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, optionsFor("a1111", "Strong", 1));
        api::GenerationSettings s;
        s.emphasis = "no norm";
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, api::validate(s));
        s = {};
        s.promptSyntax = "A1111";
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, api::validate(s));
    }

    void engineRunsLongWeightedPrompt() {
        api::GenerationSettings s;
        s.model = pipeline::kDemoModel;
        std::string prompt;
        for (int i = 0; i < 12; ++i) prompt += "(masterpiece:1.2), [best quality], ((a lighthouse)), ";
        s.prompt = prompt + "BREAK stormy sea";
        s.negativePrompt = "(blurry:1.3)";
        s.steps = 2;
        s.width = s.height = 64;
        s.batchSize = 2;
        s.emphasis = "No norm";
        pipeline::Engine engine;
        api::CancelToken cancel;
        const auto result = engine.generate(s, cancel, nullptr);  // each side at its own length (A1111's default)
        QCOMPARE(int(result.images.size()), 2);
        QCOMPARE(result.images[0].width, 64);
        s.padConds = true;  // the negative padded with empty chunks: another picture
        const auto padded = engine.generate(s, cancel, nullptr);
        QVERIFY(padded.images[0].rgb != result.images[0].rgb);
        QCOMPARE(padded.settings.padConds, true);
    }
};

DD_REGISTER_TEST(TestPromptEncoder)

} // namespace test_prompt_encoder
#include "test_prompt_encoder.moc"
