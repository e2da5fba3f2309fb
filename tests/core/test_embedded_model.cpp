// The embedded default model (resources/models/shapes, trained by tools/train): it loads, follows prompts
// (an OpenCV reading of each picture names the prompt's colour and shape) and matches diffusers' own
// pipeline on the same folder and seed (fixtures: tests/parity/fixtures_embedded.py).
#include "core/io/safetensors.h"
#include "core/pipeline/engine.h"
#include "core/resources.h"
#include "tests/common/test_program.h"
#include "tools/train/shapes_analysis.h"
#include "tools/train/shapes_prompts.h"
#include "tools/train/shapes_scene.h"

#include <opencv2/imgproc.hpp>
#include <torch/torch.h>

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <set>

#include <cstdlib>
#include <filesystem>

namespace test_embedded_model {  // the test program is a unity build: each file keeps its names

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

DD_REGISTER_TEST(TestEmbeddedModel)

} // namespace test_embedded_model
#include "test_embedded_model.moc"
