#include "core/pipeline/unet_conditioning.h"

#include "core/pipeline/sd_model.h"
#include "core/text/prompt_schedule.h"

#include <set>

namespace dd::pipeline {
namespace {

// Each image of the batch repeats the prompt's row (diffusers: num_images_per_prompt).
torch::Tensor repeatRows(const torch::Tensor& t, int64_t n) {
    std::vector<int64_t> reps(size_t(t.dim()), 1);
    reps[0] = n;
    return t.repeat(reps);
}

const std::string& textAt(const std::vector<text::ScheduledText>& schedule, int step) {
    for (const auto& part : schedule)
        if (step <= part.lastStep) return part.text;
    return schedule.back().text;
}

} // namespace

Conditioning batchConditioning(const text::CfgConditioning& text, const SdModel& m, const api::GenerationSettings& s,
                               bool cfg, int64_t batch, torch::ScalarType dtype, torch::Device device) {
    const auto& neg = text.negative;
    const auto& pos = text.positive;
    auto side = [&](const torch::Tensor& n, const torch::Tensor& p) {
        const auto t = cfg ? torch::cat({repeatRows(n, batch), repeatRows(p, batch)}) : repeatRows(p, batch);
        return t.to(device, dtype);
    };
    Conditioning c;
    c.embeds = side(neg.embeds, pos.embeds);
    if (m.isXl()) {
        // add_time_ids = original (h, w) + crop (0, 0) + target (h, w), equal for both CFG halves; the refiner
        // (requires_aesthetics_score) ends them in the aesthetic score instead, the negative half in its own.
        auto ids = [&](double aesthetic) {
            const auto last = m.requiresAestheticsScore ? std::vector<double>{aesthetic}
                                                        : std::vector<double>{double(s.height), double(s.width)};
            std::vector<double> v{double(s.height), double(s.width), 0.0, 0.0};
            v.insert(v.end(), last.begin(), last.end());
            return torch::tensor(v).unsqueeze(0);
        };
        c.added = nn::AddedCond{side(neg.pooled, pos.pooled),
                                side(ids(s.refiner.negativeAestheticScore), ids(s.refiner.aestheticScore))};
    }
    return c;
}

const Conditioning& StepConditioning::at(int64_t step) const {
    for (size_t k = 0; k < lastStep.size(); ++k)
        if (step <= lastStep[k]) return conds[k];
    return conds.back();
}

std::vector<TextStretch> textSchedule(const text::TextInput& input, int calls, int firstPassCalls) {
    if (input.promptSyntax != "a1111") return {{calls, input}};
    const auto positive = text::promptSchedule(input.prompt, calls, firstPassCalls);
    const auto negative = input.negative ? text::promptSchedule(*input.negative, calls, firstPassCalls)
                                         : std::vector<text::ScheduledText>{{calls, {}}};
    std::set<int> ends;
    for (const auto* schedule : {&positive, &negative})
        for (const auto& part : *schedule) ends.insert(part.lastStep);
    std::vector<TextStretch> out;
    for (int end : ends) {
        TextStretch stretch{end, input};
        stretch.input.prompt = textAt(positive, end);
        if (input.negative) stretch.input.negative = textAt(negative, end);
        // Neighbours with the same texts are one stretch: alternation lists every step.
        if (!out.empty() && out.back().input == stretch.input) out.back().lastStep = end;
        else out.push_back(std::move(stretch));
    }
    return out;
}

} // namespace dd::pipeline
