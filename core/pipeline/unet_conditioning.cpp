#include "core/pipeline/unet_conditioning.h"

#include "core/pipeline/sd_model.h"
#include "core/text/prompt_schedule.h"

#include <set>
#include <stdexcept>

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
    if (cfg && neg.embeds.size(1) != pos.embeds.size(1))
        c.sides = {repeatRows(neg.embeds, batch).to(device, dtype), repeatRows(pos.embeds, batch).to(device, dtype)};
    else
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

Conditioning batchConditioning(const std::vector<text::CfgConditioning>& parts, const std::vector<double>& weights,
                               const torch::Tensor& emptyChunk, const SdModel& m, const api::GenerationSettings& s,
                               int64_t batch, torch::ScalarType dtype, torch::Device device) {
    std::vector<torch::Tensor> sides{parts.front().negative.embeds};
    for (const auto& p : parts) sides.push_back(p.positive.embeds);
    int64_t longest = 0;
    for (const auto& t : sides) longest = std::max(longest, t.size(1));
    std::vector<torch::Tensor> rows;
    for (const auto& t : sides) {
        const int64_t missing = (longest - t.size(1)) / emptyChunk.size(1);
        const auto padded = missing > 0 ? torch::cat({t, emptyChunk.to(t.options()).repeat({1, missing, 1})}, 1) : t;
        rows.push_back(repeatRows(padded, batch));
    }
    Conditioning c;
    c.embeds = torch::cat(rows).to(device, dtype);
    c.weights = weights;
    if (m.isXl()) {
        // Each part's pooled embedding and the time ids of one CFG pair, as batchConditioning makes them.
        std::vector<torch::Tensor> pooled{repeatRows(parts.front().negative.pooled, batch)};
        for (const auto& p : parts) pooled.push_back(repeatRows(p.positive.pooled, batch));
        const auto pair = batchConditioning(parts.front(), m, s, true, batch, dtype, device);
        const auto ids = pair.added->timeIds.chunk(2);
        std::vector<torch::Tensor> timeIds{ids[0]};
        for (size_t k = 0; k < parts.size(); ++k) timeIds.push_back(ids[1]);
        c.added = nn::AddedCond{torch::cat(pooled).to(device, dtype), torch::cat(timeIds)};
    }
    return c;
}

torch::Tensor unetForward(nn::UNet2DConditionModelImpl& unet, const torch::Tensor& x, const torch::Tensor& t,
                          const Conditioning& c, const nn::ControlResiduals* residuals) {
    if (c.sides.empty()) return unet.forward(x, t, c.embeds, c.added, {}, residuals);
    if (residuals) throw std::logic_error("ControlNet residuals need the sides padded to one length");
    const int64_t rows = x.size(0) / int64_t(c.sides.size());
    std::vector<torch::Tensor> out;
    for (size_t k = 0; k < c.sides.size(); ++k) {
        std::optional<nn::AddedCond> added;
        if (c.added) added = nn::AddedCond{c.added->textEmbeds.narrow(0, int64_t(k) * rows, rows), c.added->timeIds.narrow(0, int64_t(k) * rows, rows)};
        out.push_back(unet.forward(x.narrow(0, int64_t(k) * rows, rows), t, c.sides[k], added));
    }
    return torch::cat(out);
}

const Conditioning& StepConditioning::at(int64_t step) const {
    for (size_t k = 0; k < lastStep.size(); ++k)
        if (step <= lastStep[k]) return conds[k];
    return conds.back();
}

std::vector<TextStretch> textSchedule(const text::TextInput& input, int calls, int firstPassCalls) {
    if (input.promptSyntax != "a1111") return {{calls, {input}, {1.0}}};
    std::vector<std::vector<text::ScheduledText>> parts;
    std::vector<double> weights;
    for (const auto& part : text::splitAnd(input.prompt)) {
        parts.push_back(text::promptSchedule(part.text, calls, firstPassCalls));
        weights.push_back(part.weight);
    }
    const auto negative = input.negative ? text::promptSchedule(*input.negative, calls, firstPassCalls)
                                         : std::vector<text::ScheduledText>{{calls, {}}};
    std::set<int> ends;
    for (const auto& schedule : parts)
        for (const auto& part : schedule) ends.insert(part.lastStep);
    for (const auto& part : negative) ends.insert(part.lastStep);
    std::vector<TextStretch> out;
    for (int end : ends) {
        TextStretch stretch{end, {}, weights};
        for (const auto& schedule : parts) {
            text::TextInput part = input;
            part.prompt = textAt(schedule, end);
            if (input.negative) part.negative = textAt(negative, end);
            stretch.parts.push_back(std::move(part));
        }
        // Neighbours with the same texts are one stretch: alternation lists every step.
        if (!out.empty() && out.back().parts == stretch.parts) out.back().lastStep = end;
        else out.push_back(std::move(stretch));
    }
    return out;
}

} // namespace dd::pipeline
