#pragma once
// Where the product's bundled data (CLIP vocabulary, presets, the default model) lives at run time:
// $DD_RESOURCE_DIR if set, else <executable dir>/../share/diffusiondesk (the build tree and an install
// prefix have the same shape).
#include "core/text/clip_tokenizer.h"

#include <filesystem>

namespace dd {

std::filesystem::path resourceDir();

// The CLIP vocabulary shipped in resources/clip/, read once a process and shared by every caller (a copy is a
// pointer: ClipTokenizer shares its vocabulary). A failed read is not kept; the next call tries again. Throws
// dd::io::ModelFileError.
text::ClipTokenizer bundledClipTokenizer(text::ClipPad pad = text::ClipPad::EndOfText);

// The embedded default model (a diffusers folder trained by tools/train; docs/embedded-model.md).
std::filesystem::path embeddedModelDir();

// embeddedModelDir() when this install has the model in it, else empty (a build without the trained weights).
std::filesystem::path installedEmbeddedModel();

// Whether `path` is the embedded model's folder however it is spelled (relative, through a symlink, "x/."): the
// app gives the model its own defaults and banner by this, not by comparing strings.
bool isEmbeddedModel(const std::filesystem::path& path);

// What the embedded model works best with: the size it was trained at, and the guidance scale a sweep over the
// prompt-following cases picked (docs/embedded-model.md: it follows prompts best near CFG 3, not SD's 7). The app
// switches to these when the model is chosen; the prompt-following test and dd_shapes_grid use them too.
struct EmbeddedModelSettings {
    int size = 128;
    double cfgScale = 3.0;
};
inline constexpr EmbeddedModelSettings kEmbeddedModel{};

} // namespace dd
