// The embedded default model (resources/models/shapes, trained by tools/train): it loads, follows prompts
// (an OpenCV reading of each picture names the prompt's colour and shape) and matches diffusers' own
// pipeline on the same folder and seed (fixtures: tests/parity/fixtures_embedded.py).
#include "core/io/safetensors.h"
#include "core/pipeline/engine.h"
#include "core/resources.h"
#include "tests/common/test_program.h"
#include "tools/train/shapes_analysis.h"
#include "tools/train/shapes_phrasing.h"
#include "tools/train/shapes_prompts.h"
#include "tools/train/shapes_scene.h"

#include <opencv2/imgproc.hpp>
#include <torch/torch.h>

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <fstream>
#include <set>
#include <sstream>
#include <unordered_set>

#include <cstdlib>
#include <filesystem>

namespace test_embedded_model {

using namespace dd;

namespace {

// DD_EMBEDDED_MODEL points the test at another folder (a checkpoint of a training run in progress).
std::string modelDir() {
    if (const char* env = std::getenv("DD_EMBEDDED_MODEL"); env && *env) return env;
    return std::string(DD_SOURCE_DIR) + "/resources/models/shapes";
}

// The app's defaults for this model (Euler a, 20 steps; its own size and guidance scale, dd::kEmbeddedModel).
api::GenerationSettings defaults(const std::string& prompt, int64_t seed) {
    api::GenerationSettings s;
    s.model = modelDir();
    s.prompt = prompt;
    s.seed = seed;
    s.width = s.height = kEmbeddedModel.size;
    s.cfgScale = kEmbeddedModel.cfgScale;
    return s;
}

cv::Mat toMat(const api::Image& img) {
    return cv::Mat(img.height, img.width, CV_8UC3, const_cast<uint8_t*>(img.rgb.data())).clone();
}

// A prompt of tests/core/embedded/heldout_prompts.tsv and what its picture must show (background -1: not named).
struct HeldOutPrompt {
    std::string prompt;
    int colour = -1, shape = -1, background = -1;
};

template <typename List, typename Name>
int indexOf(const List& list, const std::string& name, Name nameOf) {
    for (size_t i = 0; i < list.size(); ++i)
        if (nameOf(list[i]) == name) return int(i);
    return -1;
}

std::vector<HeldOutPrompt> heldOutPrompts() {
    const std::string path = std::string(DD_SOURCE_DIR) + "/tests/core/embedded/heldout_prompts.tsv";
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot read " + path);
    const auto colourName = [](const shapes::NamedColour& c) { return std::string(c.name); };
    std::vector<HeldOutPrompt> prompts;
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#') continue;
        std::vector<std::string> f;
        std::istringstream fields(line);
        for (std::string field; std::getline(fields, field, '\t');) f.push_back(field);
        if (f.size() != 4) throw std::runtime_error(path + ": not four tab-separated fields: " + line);
        HeldOutPrompt p{f[3], indexOf(shapes::shapeColours(), f[0], colourName),
                        indexOf(shapes::shapeNames(), f[1], [](const std::string& n) { return n; }),
                        f[2] == "-" ? -1 : indexOf(shapes::backgroundColours(), f[2], colourName)};
        if (p.colour < 0 || p.shape < 0 || (f[2] != "-" && p.background < 0))
            throw std::runtime_error(path + ": unknown colour, shape or background: " + line);
        prompts.push_back(p);
    }
    return prompts;
}

// Every scene the captions can describe (jitter aside).
std::vector<shapes::Scene> everyScene() {
    std::vector<shapes::Scene> scenes;
    for (size_t c = 0; c < shapes::shapeColours().size(); ++c)
        for (size_t sh = 0; sh < shapes::shapeNames().size(); ++sh)
            for (size_t sz = 0; sz < shapes::sizeNames().size(); ++sz)
                for (size_t pos = 0; pos < shapes::positionNames().size(); ++pos)
                    for (size_t bg = 0; bg < shapes::backgroundColours().size(); ++bg)
                        if (bg != c) scenes.push_back({int(c), int(sh), int(sz), int(pos), int(bg)});
    return scenes;
}

} // namespace

class TestEmbeddedModel : public QObject {
    Q_OBJECT

private slots:
    // The analysis reads the training scenes themselves without error: a failure of the model test is the
    // model's, not the ruler's.
    void analysisReadsRenderedScenes() {
        int wrong = 0;
        for (uint64_t i = 0; i < 300; ++i) {
            const auto scene = shapes::randomScene(shapes::mix(i + 77));
            const auto a = shapes::analyse(shapes::render(scene));
            if (a.colour != scene.colour || a.shape != scene.shape) {
                ++wrong;
                qWarning("scene %d '%s' read as %s", int(i), shapes::caption(scene).c_str(), a.describe().c_str());
            }
        }
        QCOMPARE(wrong, 0);
    }

    void captionsCoverEveryColourAndShape() {
        const auto cases = shapes::promptCases();
        QVERIFY(cases.size() >= 40);
        std::set<std::pair<int, int>> seen;
        for (const auto& c : cases) seen.insert({c.colour, c.shape});
        QCOMPARE(seen.size(), shapes::shapeColours().size() * shapes::shapeNames().size());
    }

    void followsPrompts() {
        QVERIFY2(std::filesystem::exists(modelDir() + "/model_index.json"),
                 qPrintable(QString::fromStdString(modelDir()) + " has no model_index.json"));
        pipeline::Engine engine;
        api::CancelToken cancel;
        const auto cases = shapes::promptCases();
        int right = 0, rightColour = 0, rightShape = 0;
        for (const auto& c : cases) {
            const auto result = engine.generate(defaults(c.prompt, c.seed), cancel, nullptr);
            QCOMPARE(result.images.size(), size_t(1));
            const auto a = shapes::analyse(toMat(result.images[0]));
            const bool colourOk = a.colour == c.colour, shapeOk = a.shape == c.shape;
            rightColour += colourOk;
            rightShape += shapeOk;
            right += colourOk && shapeOk;
            qInfo("%s  seed %lld: %s — %s", colourOk && shapeOk ? "ok  " : "MISS", (long long)c.seed, c.prompt.c_str(),
                  a.describe().c_str());
        }
        const double rate = double(right) / double(cases.size());
        qInfo("prompt following: %d / %d = %.1f %% (colour %d, shape %d)", right, int(cases.size()), 100 * rate,
              rightColour, rightShape);
        QVERIFY2(rate >= 0.8, qPrintable(QString("prompt-following rate %1 % is below 80 %").arg(100 * rate, 0, 'f', 1)));
    }

    // The held-out prompts are not training captions: every caption the recipe that made the model trained on
    // (its seed, steps, batch and scene count, from the weights' metadata) is re-created and compared.
    void heldOutPromptsAreNotTrainingCaptions() {
        const auto file = io::SafetensorsFile::open(modelDir() + "/unet/diffusion_pytorch_model.safetensors");
        const auto& meta = file->metadata();
        for (const char* key : {"dd_seed", "dd_unet_steps", "dd_unet_batch", "dd_latents"})
            QVERIFY2(meta.count(key), qPrintable(QString("the model's metadata has no %1").arg(key)));
        const uint64_t seed = std::stoull(meta.at("dd_seed"));
        const int steps = std::stoi(meta.at("dd_unet_steps")), batch = std::stoi(meta.at("dd_unet_batch"));
        const int latents = std::stoi(meta.at("dd_latents"));
        std::unordered_set<std::string> heldOut;
        for (const auto& p : heldOutPrompts()) heldOut.insert(shapes::normalisedPrompt(p.prompt));
        QVERIFY(heldOut.size() >= 60);
        const auto tok = bundledClipTokenizer();
        std::vector<std::string> vocabulary;
        for (int id = 0; id < tok.vocabSize(); ++id) vocabulary.push_back(tok.token(id));
        const auto stray = shapes::strayWords(vocabulary);
        QVERIFY(stray.size() > 10000);
        int64_t captions = 0;
        for (int step = 0; step < steps; ++step)
            for (int i = 0; i < batch; ++i) {
                const auto sample = shapes::trainingSample(seed, step, i, latents, stray);
                captions += !sample.caption.empty();
                QVERIFY2(!heldOut.count(shapes::normalisedPrompt(sample.caption)),
                         qPrintable(QString::fromStdString("held-out prompt trained on: " + sample.caption)));
            }
        qInfo("%lld training captions, none equal to one of %zu held-out prompts", (long long)captions, heldOut.size());
        // A model fine-tuned from a plain-caption one (dd_init_phrasing) also learned the plain grammar: all of it.
        int plain = 0;
        for (const auto& s : everyScene())
            for (int drop = 0; drop < 8; ++drop) {
                const std::string c = shapes::caption(s, {!(drop & 1), !(drop & 2), !(drop & 4)});
                ++plain;
                QVERIFY2(!heldOut.count(shapes::normalisedPrompt(c)),
                         qPrintable(QString::fromStdString("held-out prompt in the plain grammar: " + c)));
            }
        qInfo("nor one of the %d captions of the plain grammar", plain);
    }

    // Prompts phrased the way people write them, with words the captions never use.
    void followsHeldOutPrompts() {
        pipeline::Engine engine;
        api::CancelToken cancel;
        const auto prompts = heldOutPrompts();
        int colours = 0, shapesRight = 0, backgrounds = 0, named = 0;
        for (size_t i = 0; i < prompts.size(); ++i) {
            const auto& p = prompts[i];
            const auto result = engine.generate(defaults(p.prompt, 3000 + int64_t(i)), cancel, nullptr);
            const auto a = shapes::analyse(toMat(result.images.at(0)));
            const bool colourOk = a.colour == p.colour, shapeOk = a.shape == p.shape;
            const bool backgroundOk = p.background < 0 || a.background == p.background;
            colours += colourOk;
            shapesRight += shapeOk;
            named += p.background >= 0;
            backgrounds += p.background >= 0 && backgroundOk;
            qInfo("%s %s — %s", colourOk && shapeOk && backgroundOk ? "ok  " : "MISS", p.prompt.c_str(), a.describe().c_str());
        }
        const double n = double(prompts.size());
        qInfo("held-out prompts: colour %d / %d (%.0f %%), shape %d / %d (%.0f %%), background %d / %d (%.0f %%)", colours,
              int(n), 100 * colours / n, shapesRight, int(n), 100 * shapesRight / n, backgrounds, named,
              100.0 * backgrounds / named);
        QVERIFY2(colours >= 0.9 * n, "colour below 90 %");
        QVERIFY2(backgrounds >= 0.9 * named, "background below 90 %");
        QVERIFY2(shapesRight >= 0.85 * n, "shape below 85 %");
    }

    void matchesDiffusers() {
        const QString dir = QString(DD_FIXTURES_DIR) + "/embedded";
        QFile f(dir + "/cases.json");
        QVERIFY2(f.open(QIODevice::ReadOnly), "no embedded-model fixtures: train resources/models/shapes (docs/embedded-model.md), then run tests/parity/fixtures_embedded.py");
        const QJsonArray cases = QJsonDocument::fromJson(f.readAll()).array();
        QVERIFY(cases.size() >= 2);
        pipeline::Engine engine;
        api::CancelToken cancel;
        for (int i = 0; i < cases.size(); ++i) {
            const QJsonObject c = cases.at(i).toObject();
            auto s = defaults(c["prompt"].toString().toStdString(), c["seed"].toInt());
            s.model = (dir + "/shapes").toStdString();  // the copy the fixture ran, so a retrained model cannot mismatch
            s.sampler = c["sampler"].toString().toStdString();
            s.steps = c["steps"].toInt();
            s.cfgScale = c["cfg"].toDouble();
            s.promptSyntax = "reference";
            const auto result = engine.generate(s, cancel, nullptr);
            const auto ref = io::SafetensorsFile::open((dir + QString("/case_%1.safetensors").arg(i)).toStdString())->tensor("image");
            const auto& img = result.images.at(0);
            const auto ours = torch::from_blob(const_cast<uint8_t*>(img.rgb.data()), {img.height, img.width, 3}, torch::kUInt8);
            QCOMPARE(ours.sizes(), ref.sizes());
            const int maxDiff = (ours.to(torch::kInt32) - ref.to(torch::kInt32)).abs().max().item<int>();
            qInfo("%s, %s: max difference %d/255", qPrintable(c["sampler"].toString()), qPrintable(c["prompt"].toString()), maxDiff);
            QVERIFY2(maxDiff <= 1, qPrintable(QString("case %1 differs by %2/255").arg(i).arg(maxDiff)));
        }
    }
};

} // namespace test_embedded_model

// A program of its own (labelled slow: CI runs it on the plain build), not one of core_tests' units.
QTEST_GUILESS_MAIN(test_embedded_model::TestEmbeddedModel)
#include "test_embedded_model.moc"
