#pragma once
// What the pipeline parity tests share: a fixture case's settings as the reference script ran them
// (tests/parity/fixtures_*.py write the same keys), the latents a run ended with, and the largest difference.
#include "core/api/generation_settings.h"
#include "core/api/image.h"
#include "core/pipeline/latent_observer.h"

#include <torch/torch.h>

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <string>

namespace dd::test {

inline double maxAbs(const torch::Tensor& a, const torch::Tensor& b) { return (a - b).abs().max().item<double>(); }

struct LastLatents : pipeline::LatentObserver {
    torch::Tensor latents;
    int steps = 0;
    void onStep(int, int, const api::Image&) override { ++steps; }
    void onLatents(int, const at::Tensor& l) override { latents = l.clone(); }
};

// The cases a fixtures_*.py script wrote to <dir>/cases.json; false when the fixtures are missing.
inline bool readCases(const QString& dir, QJsonArray& cases) {
    QFile f(dir + "/cases.json");
    if (!f.open(QIODevice::ReadOnly)) return false;
    cases = QJsonDocument::fromJson(f.readAll()).array();
    return true;
}

// Keys a case may leave out keep the defaults; "reference" prompt syntax because diffusers truncates at 77
// tokens and has no weighting; direct convolutions (Winograd's rounding is tested on its own in test_pipeline).
inline api::GenerationSettings caseSettings(const QJsonObject& c, const std::string& model) {
    api::GenerationSettings s;
    s.model = model;
    s.prompt = c["prompt"].toString().toStdString();
    s.negativePrompt = c["negative"].toString().toStdString();
    s.seed = c["seed"].toInt();
    s.steps = c["steps"].toInt();
    s.cfgScale = c["cfg"].toDouble();
    s.guidanceRescale = c["rescale"].toDouble(0.0);
    s.sampler = c["sampler"].toString().toStdString();
    s.width = c["width"].toInt(s.width);
    s.height = c["height"].toInt(s.height);
    s.batchSize = c["batch"].toInt(1);
    s.promptSyntax = "reference";
    // A fixed count: tests also compare runs bit for bit, and a count that follows the machine's load (the
    // default) may split sums differently from one run to the next (docs/cli.md).
    s.plan.threads = 2;
    s.plan.winogradConv = false;  // diffusers' own arithmetic: the cases hold latents to 1e-4
    return s;
}

} // namespace dd::test
