// Textual inversion: embedding files as A1111 and diffusers save them, parity with diffusers' load_textual_inversion
// on the tiny pipelines' encoders (tests/parity/fixtures_textual_inversion.py: encode_prompt's outputs, A1111's
// emphasis re-created for a weighted case, the files' SHA-256 short hashes), the refusals, and runs through the
// engine: the sidecar's list, "TI hashes" there and back, and the warnings a rerun gives.
#include "core/api/generation_settings.h"
#include "core/io/embedding_file.h"
#include "core/io/model_error.h"
#include "core/io/safetensors.h"
#include "core/pipeline/engine.h"
#include "core/pipeline/model_search.h"
#include "core/settings/a1111_parameters.h"
#include "core/text/embedding_vectors.h"
#include "core/text/prompt_encoder.h"
#include "tests/common/test_program.h"

#include <QTemporaryDir>
#include <QtTest>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>

namespace test_textual_inversion {  // the test program is a unity build: each file keeps its names

using namespace dd;
namespace fs = std::filesystem;

const fs::path kRoot = fs::path(DD_FIXTURES_DIR) / "textual_inversion";
const fs::path kModels = fs::path(DD_FIXTURES_DIR) / "models";

nlohmann::json cases() {
    std::ifstream f(kRoot / "cases.json");
    return nlohmann::json::parse(f);
}

nn::ClipTextModel encoder(const fs::path& dir) {
    std::ifstream f(dir / "config.json");
    const auto cfg = nn::ClipTextConfig::fromJson(nlohmann::json::parse(f));
    return nn::loadClipText(cfg, io::SafetensorsFile::open((dir / "model.safetensors").string())->all(), dir.filename().string());
}

double maxAbs(const torch::Tensor& got, const torch::Tensor& want) {
    if (got.sizes() != want.sizes()) return std::numeric_limits<double>::infinity();
    return (got.to(torch::kFloat64) - want.to(torch::kFloat64)).abs().max().item<double>();
}

bool contains(const std::vector<std::string>& lines, const std::string& part) {
    return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(part) != std::string::npos; });
}

class TestTextualInversion : public QObject {
    Q_OBJECT

private slots:
    void libraryReadsEveryLayoutAndRefusesPickles() {
        const auto lib = text::EmbeddingLibrary::scan({(kRoot / "embeddings").string()});
        QCOMPARE(lib.files.size(), size_t(3));
        const auto* starry = lib.find("starry");
        const auto* tinyneg = lib.find("tinyneg");
        const auto* xlneg = lib.find("xlneg");
        QVERIFY(starry && tinyneg && xlneg);
        QCOMPARE(starry->tensorKey, std::string("<starry>"));  // diffusers' layout, one 1-D vector
        QCOMPARE(starry->vectors, 1);
        QCOMPARE(tinyneg->tensorKey, std::string("emb_params"));  // A1111's
        QCOMPARE(tinyneg->vectors, 3);
        QVERIFY(xlneg->isXlPair());
        QCOMPARE(xlneg->vectors, 2);
        QVERIFY(tinyneg->fits(32, 0) && !tinyneg->fits(32, 64) && !xlneg->fits(32, 0));
        QCOMPARE(lib.problems.size(), size_t(1));
        QCOMPARE(lib.problems[0].name, std::string("oldstyle"));
        QVERIFY2(lib.problems[0].message.find("pickle") != std::string::npos, lib.problems[0].message.c_str());
        QVERIFY(lib.problems[0].message.find("oldstyle.pt") != std::string::npos);
    }

    void hashesAreA1111s() {
        text::EmbeddingVectors vectors(text::EmbeddingLibrary::scan({(kRoot / "embeddings").string()}));
        const auto want = cases()["hashes"];
        for (size_t i = 0; i < vectors.library().files.size(); ++i) {
            const auto& name = vectors.library().files[i].name;
            QCOMPARE(vectors.hash(i), want.at(name).get<std::string>());
        }
    }

    void matchesDiffusers_data() {
        QTest::addColumn<int>("index");
        const auto all = cases()["cases"];
        for (size_t i = 0; i < all.size(); ++i) QTest::newRow(all[i]["name"].get<std::string>().c_str()) << int(i);
    }
    void matchesDiffusers() {
        QFETCH(int, index);
        const auto c = cases()["cases"][size_t(index)];
        const std::string family = c["family"];
        const bool xl = family == "sdxl";
        const fs::path enc = kRoot / family, tiny = kModels / ("tiny-" + family);
        const auto te1 = encoder(enc / "text_encoder");
        const auto te2 = xl ? encoder(enc / "text_encoder_2") : nn::ClipTextModel(nullptr);
        const auto tok1 = text::ClipTokenizer::fromFolder(tiny / "tokenizer");
        const auto tok2 = xl ? std::optional(text::ClipTokenizer::fromFolder(tiny / "tokenizer_2")) : std::nullopt;
        text::EmbeddingVectors vectors(text::EmbeddingLibrary::scan({(kRoot / "embeddings").string()}));
        const text::TextModel model{te1, te2, &tok1, tok2 ? &*tok2 : nullptr, xl, &vectors};
        const auto negative = c["negative"].is_null() ? std::nullopt : std::optional<std::string>(c["negative"]);
        const auto got = text::encodePrompts(model, c["prompt"].get<std::string>(), negative, text::PromptEncodeOptions{});
        const auto want = io::SafetensorsFile::open((kRoot / (c["name"].get<std::string>() + ".safetensors")).string())->all();
        double worst = maxAbs(got.positive.embeds, want.at("positive"));
        if (negative) worst = std::max(worst, maxAbs(got.negative.embeds, want.at("negative")));
        if (xl) worst = std::max({worst, maxAbs(got.positive.pooled, want.at("positive_pooled")),
                                  maxAbs(got.negative.pooled, want.at("negative_pooled"))});
        qInfo("%s: max |ours - diffusers| = %.3g", c["name"].get<std::string>().c_str(), worst);
        QVERIFY2(worst <= 1e-5, std::to_string(worst).c_str());
        QCOMPARE(got.embeddings, c["used"].get<std::vector<std::string>>());
        QVERIFY(got.unfitEmbeddings.empty());  // the prompts name only embeddings made for the family
    }

    void refusesWhatIsNotAnEmbedding() {
        QTemporaryDir dir;
        const auto path = [&](const char* name) { return (fs::path(dir.path().toStdString()) / name).string(); };
        const auto f = torch::zeros({2, 8});
        io::writeSafetensors(path("two.safetensors"), {{"a", f}, {"b", f}});
        io::writeSafetensors(path("long.safetensors"), {{"emb_params", torch::zeros({76, 8})}});
        io::writeSafetensors(path("ints.safetensors"), {{"emb_params", torch::zeros({2, 8}, torch::kInt32)}});
        io::writeSafetensors(path("pair.safetensors"), {{"clip_l", torch::zeros({2, 8})}, {"clip_g", torch::zeros({3, 16})}});
        io::writeSafetensors(path("cube.safetensors"), {{"emb_params", torch::zeros({2, 2, 8})}});
        for (const auto& [file, why] : std::vector<std::pair<const char*, const char*>>{
                 {"two.safetensors", "holds 2 tensors"}, {"long.safetensors", "at most 75"}, {"ints.safetensors", "I32"},
                 {"pair.safetensors", "they must match"}, {"cube.safetensors", "[2, 2, 8]"}}) {
            try {
                io::readEmbeddingFile(path(file));
                QFAIL(file);
            } catch (const io::ModelFileError& e) {
                const std::string m = e.what();
                QVERIFY2(m.find(file) != std::string::npos && m.find(why) != std::string::npos, m.c_str());
            }
        }
        QCOMPARE(text::EmbeddingLibrary::scan({dir.path().toStdString()}).problems.size(), size_t(5));
    }

    // An "embeddings" folder beside the LoRA folder, and A1111's <webui>/embeddings beside <webui>/models/Lora.
    void foldersBesideTheLoraFolder() {
        QTemporaryDir dir;
        const fs::path root = dir.path().toStdString();
        fs::create_directories(root / "models" / "Lora");
        fs::create_directories(root / "models" / "embeddings");
        fs::create_directories(root / "embeddings");
        const auto found = pipeline::embeddingFolders({}, {(root / "models" / "Lora").string()});
        QCOMPARE(found, (std::vector<std::string>{(root / "models" / "embeddings").string(), (root / "embeddings").string()}));
        QVERIFY(pipeline::embeddingFolders({(root / "nowhere").string()}, {}).empty());
    }

    // The demo model's encoder is as wide as the SD 1.x fixtures' (32): their embeddings fit it.
    void engineRecordsAndChecksTheEmbeddings() {
        api::GenerationSettings s;
        s.model = pipeline::kDemoModel;
        s.prompt = "a red star";
        s.negativePrompt = "tinyneg, blurry";
        s.steps = 2;
        s.width = s.height = 64;
        api::CancelToken cancel;
        pipeline::Engine plain;
        const auto without = plain.generate(s, cancel, nullptr);
        QVERIFY(without.settings.embeddings.empty());

        pipeline::Engine engine;
        engine.setEmbeddingFolders({(kRoot / "embeddings").string()});
        const auto with = engine.generate(s, cancel, nullptr);
        const std::string hash = cases()["hashes"]["tinyneg"];
        QCOMPARE(with.settings.embeddings, (std::vector<api::EmbeddingSetting>{{"tinyneg", hash}}));
        QVERIFY(with.images[0].rgb != without.images[0].rgb);
        QVERIFY(!contains(with.warnings, "embedding"));

        // A1111's text carries the hash and gives it back; a rerun from it is the same picture without a warning.
        const std::string text = settings::writeA1111Parameters(with.settings);
        QVERIFY2(text.find("TI hashes: \"tinyneg: " + hash + "\"") != std::string::npos || text.find("TI hashes: tinyneg: " + hash) != std::string::npos,
                 text.c_str());
        auto restored = settings::parseA1111Parameters(text).settings;
        QCOMPARE(restored.embeddings, with.settings.embeddings);
        restored.model = pipeline::kDemoModel;
        restored.plan = with.settings.plan;
        const auto again = engine.generate(restored, cancel, nullptr);
        QVERIFY(again.images[0].rgb == with.images[0].rgb);
        QVERIFY(!contains(again.warnings, "embedding"));

        // Where the embedding is missing, or is another file, the rerun says so.
        const auto missing = plain.generate(restored, cancel, nullptr);
        QVERIFY2(contains(missing.warnings, "'tinyneg' (" + hash + "), which is not in the embeddings folders"),
                 missing.warnings.empty() ? "" : missing.warnings.back().c_str());
        auto other = restored;
        other.embeddings[0].hash = "0123456789ab";
        QVERIFY(contains(engine.generate(other, cancel, nullptr).warnings, "is not the file the image was made with (0123456789ab)"));

        // An SDXL embedding named to an SD 1.x model, and a pickle: words, with the reason.
        s.negativePrompt = "xlneg, oldstyle";
        const auto unfit = engine.generate(s, cancel, nullptr);
        QVERIFY(unfit.settings.embeddings.empty());
        QVERIFY(contains(unfit.warnings, "embedding 'xlneg' is made for SDXL"));
        QVERIFY(contains(unfit.warnings, "oldstyle.pt: a pickle embedding"));
    }
};

DD_REGISTER_TEST(TestTextualInversion)

} // namespace test_textual_inversion
#include "test_textual_inversion.moc"
