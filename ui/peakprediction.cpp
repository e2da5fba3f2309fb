#include "ui/peakprediction.h"

#include "core/memory/predictor.h"
#include "core/memory/shipped_presets.h"

#include <QHash>
#include <QMutex>
#include <QSet>

#include <optional>

namespace dd::ui {
namespace {

// Shapes per model path: reading configs and tensor headers costs milliseconds, a prediction microseconds.
std::optional<memory::ModelShape> shapeOf(const std::string& model) {
    static QMutex mutex;
    static QHash<QString, std::optional<memory::ModelShape>> cache;
    const QString key = QString::fromStdString(model);
    QMutexLocker lock(&mutex);
    if (auto it = cache.find(key); it != cache.end()) return *it;
    std::optional<memory::ModelShape> shape;
    try {
        shape = memory::modelShapeOf(model);
    } catch (const std::exception&) {
        // An unreadable model: no prediction (the load itself reports the problem).
    }
    cache.insert(key, shape);
    return shape;
}

// Parameters per ControlNet path, cached the same way (0 for one that cannot be read: the run reports it).
int64_t controlNetParams(const std::vector<settings::ControlNetSetting>& units) {
    static QMutex mutex;
    static QHash<QString, int64_t> cache;
    QMutexLocker lock(&mutex);
    QSet<QString> seen;
    int64_t total = 0;
    for (const auto& c : units) {
        const QString key = QString::fromStdString(c.model);
        if (seen.contains(key)) continue;
        seen.insert(key);
        auto it = cache.find(key);
        if (it == cache.end()) {
            int64_t n = 0;
            try {
                n = memory::controlNetParameters({c.model});
            } catch (const std::exception&) {
            }
            it = cache.insert(key, n);
        }
        total += *it;
    }
    return total;
}

} // namespace

bool sameTextInputs(const settings::GenerationSettings& a, const settings::GenerationSettings& b) {
    return a.model == b.model && a.prompt == b.prompt && a.negativePrompt == b.negativePrompt && a.clipSkip == b.clipSkip &&
           a.promptSyntax == b.promptSyntax && a.emphasis == b.emphasis && a.plan.textEncoder == b.plan.textEncoder;
}

PeakPrediction predictPeak(const settings::GenerationSettings& s, bool cuda, const settings::GenerationSettings* lastRun,
                           qint64 budgetBytes) {
    const auto shape = shapeOf(s.model.empty() ? std::string("demo:tiny-sd1") : s.model);
    if (!shape) return {};
    memory::PredictInput in;
    in.width = s.width;
    in.height = s.height;
    in.batch = s.batchSize;
    in.plan = s.plan;
    in.cfg = s.cfgScale > 1.0;
    in.cuda = cuda && s.plan.device != "cpu";
    in.textCached = lastRun && sameTextInputs(s, *lastRun);
    if (s.refiner.enabled()) {
        // The refiner's weights, together with the base or in its place (docs/refiner.md).
        if (const auto refiner = shapeOf(s.refiner.model)) in.refinerBytes = memory::modelWeightBytes(*refiner, s.plan);
    }
    in.controlNetParams = controlNetParams(s.controlnets);
    try {
        const auto p = memory::predict(*shape, in);
        PeakPrediction out;
        out.peakBytes = p.peak();
        out.stage = QString::fromLatin1(p.peakStage());
        const auto& stage = out.stage == "load" ? p.load : out.stage == "encode" ? p.encode : out.stage == "decode" ? p.decode : p.denoise;
        out.detail = QString::fromStdString(stage.peakAt);
        if (budgetBytes > 0) {
            const auto fit = memory::fits(p, budgetBytes, &memory::shippedPresets());
            out.fits = fit.fits;
            out.advice = QString::fromStdString(fit.message);
        }
        return out;
    } catch (const std::exception&) {
        return {};
    }
}

} // namespace dd::ui
