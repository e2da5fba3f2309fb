#pragma once
// Wildcards (docs/explore.md): "__name__" in a prompt is one line of name.txt from the wildcard folders ("__a/b__":
// a/b.txt), picked by a generator seeded with the run's seed, so a rerun picks the same lines. Lines may hold
// wildcards of their own; empty lines and lines starting with '#' are not picked. The settings keep the prompt as
// written (promptTemplate) and the picked one (prompt), which the A1111 text carries.
#include "core/api/generation_settings.h"

#include <string>
#include <string_view>
#include <vector>

namespace dd::settings {

bool hasWildcards(std::string_view prompt);
// The lines of a wildcard file that can be picked.
std::vector<std::string> wildcardLines(std::string_view fileText);
// Every wildcard of `prompt` replaced, in order from the left, by a line drawn with a generator seeded by `seed`.
// Throws std::invalid_argument naming the wildcard and the folders for a missing or empty file, or wildcards nested
// more than 16 deep.
std::string resolveWildcards(std::string_view prompt, int64_t seed, const std::vector<std::string>& folders);
// The run's prompt and negative prompt resolved with the run's seed (the negative's draws follow the prompt's);
// their templates kept. Settings without wildcards keep their prompts and lose any template (a restored run's).
void resolveWildcards(api::GenerationSettings& s, const std::vector<std::string>& folders);

} // namespace dd::settings
