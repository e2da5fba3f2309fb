#pragma once
// Where the product's bundled data (CLIP vocabulary, presets, the default model) lives at run time:
// $DD_RESOURCE_DIR if set, else <executable dir>/../share/diffusiondesk (the build tree and an install
// prefix have the same shape).
#include <filesystem>

namespace dd {

std::filesystem::path resourceDir();

// The embedded default model (a diffusers folder trained by tools/train; docs/embedded-model.md).
std::filesystem::path embeddedModelDir();

// embeddedModelDir() when this install has the model in it, else empty (a build without the trained weights).
std::filesystem::path installedEmbeddedModel();

} // namespace dd
