#pragma once
// Finding LoRA and upscaler files by the names settings, prompt tags and A1111 metadata use. Torch-free (the CLI's
// memory warning and the window's upscaler list use it).
#include <string>
#include <vector>

namespace dd::pipeline {

// Where <lora:name> looks: `folders` (the engine's, e.g. --lora-dir), then DD_LORA_PATH (':'-separated), each
// with its sub-folders, for name + ".safetensors" (the first match in sorted order). With `allowPath` (a LoRA the
// user gave by path: --lora), a path to a file (with or without ".safetensors") is taken as it is; prompt tags
// name files in the folders only (a prompt may come from an image's metadata). Throws std::invalid_argument
// naming the folders searched.
std::string findLoraFile(const std::string& name, const std::vector<std::string>& folders, bool allowPath);
// Every .safetensors under `folders` and DD_LORA_PATH (sorted): what an API client may name in <lora:…>.
std::vector<std::string> loraFiles(const std::vector<std::string>& folders);

// An upscaler network named as A1111's "Hires upscaler" names it (the file name without .safetensors, e.g.
// "4x-UltraSharp") in `folders`, then DD_UPSCALER_PATH, with sub-folders; or a path to the file. Throws
// std::invalid_argument naming the folders searched.
std::string findUpscalerFile(const std::string& nameOrPath, const std::vector<std::string>& folders);
// Every .safetensors under `folders` and DD_UPSCALER_PATH (sorted): the window's and `--help`'s choices.
std::vector<std::string> upscalerFiles(const std::vector<std::string>& folders);

// Where textual-inversion embeddings are looked for (text::EmbeddingLibrary::scan): `folders` (--embeddings-dir,
// Preferences), then DD_EMBEDDINGS_PATH, then beside each LoRA folder (its own and DD_LORA_PATH's): a sibling
// "embeddings" folder, and for A1111's layout (<webui>/models/Lora) <webui>/embeddings. Only folders that exist.
std::vector<std::string> embeddingFolders(const std::vector<std::string>& folders, const std::vector<std::string>& loraFolders);

} // namespace dd::pipeline
