#pragma once
// A1111's prompt editing (docs/explore.md): a prompt whose text changes during sampling.
//   [from:to:when]  from until step `when`, then to      [to:when]    nothing, then to
//   [from::when]    from, then nothing                   [a|b|c]      a, b, c, a… one per step
// `when` with a decimal point is a fraction of the steps, without one a step number (A1111's scheduling since 1.6).
// Brackets that are not one of these stay text: "[word]" and "(word:1.2)" are emphasis, read later by
// parsePromptAttention; a prompt the grammar rejects is used as written, as A1111 does. Pure functions.
//
//   for (const auto& part : promptSchedule("a [cat:dog:0.5]", 20)) use(part.text, until part.lastStep);
#include <string>
#include <string_view>
#include <vector>

namespace dd::text {

struct ScheduledText {
    int lastStep = 0;  // this text is used while the step (0-based, counted from the first model call) <= lastStep
    std::string text;
    bool operator==(const ScheduledText&) const = default;
};

// The prompt's texts over `steps` model calls, in order; the last one's lastStep is `steps`. A hires fix's second pass
// passes the first pass's calls as `firstPassSteps`: its step numbers then count on from the first pass, and its
// fractions from 1 (A1111: "[a:b:1.5]" switches half way through the second pass).
std::vector<ScheduledText> promptSchedule(std::string_view prompt, int steps, int firstPassSteps = 0);

// Whether the prompt changes during sampling (more than one text).
bool hasPromptEditing(std::string_view prompt);

// A1111's composable diffusion: "a castle AND a dragon:0.7" is two prompts guided together, each with its weight
// (":w" at its end; 1 without). The word AND alone, in capitals, splits; each part is then scheduled on its own.
// A prompt without AND is one part of weight 1.
struct PromptPart {
    std::string text;
    double weight = 1.0;
    bool operator==(const PromptPart&) const = default;
};
std::vector<PromptPart> splitAnd(std::string_view prompt);

} // namespace dd::text
