#pragma once
// Prompt styles, as A1111's styles.csv keeps them (docs/explore.md): a name, a prompt and a negative prompt, where
// "{prompt}" marks the place of the artist's prompt (without it, the style is added after, ", "-separated). Applying
// a style writes it into the prompt boxes and removing takes it out again, as A1111's buttons do; the styles a run
// used are named in its sidecar. Pure functions.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dd::settings {

struct PromptStyle {
    std::string name, prompt, negativePrompt;
    bool operator==(const PromptStyle&) const = default;
};

// A styles.csv: a header naming the columns (name, prompt, negative_prompt in any order; others ignored), then one
// style per row, quoted as CSV quotes ("" inside quotes, line breaks allowed). Rows without a name are skipped.
// Throws std::invalid_argument("styles.csv line N: …") for a header without "name" or an unclosed quote.
std::vector<PromptStyle> readStylesCsv(std::string_view text);
// The styles the window and the CLI share: styles.csv in the app's data folder (io/app_data.h).
std::string defaultStylesPath();
// That file's styles (none when it does not exist); throws std::invalid_argument naming the file when it cannot be read.
std::vector<PromptStyle> readStylesFile(const std::string& path);
// Written whole or not at all (io/atomic_file.h).
void writeStylesFile(const std::string& path, const std::vector<PromptStyle>& styles);
std::string writeStylesCsv(const std::vector<PromptStyle>& styles);
// `incoming` over `styles`: same names replaced in place, new ones added after.
std::vector<PromptStyle> mergeStyles(std::vector<PromptStyle> styles, const std::vector<PromptStyle>& incoming);

// A style's text applied to a prompt: into its {prompt}, or after it.
std::string applyStyleText(std::string_view styleText, std::string_view prompt);
// The prompt without the style's text, when it carries it (as applyStyleText left it); nothing otherwise.
std::optional<std::string> removeStyleText(std::string_view styleText, std::string_view prompt);

} // namespace dd::settings
