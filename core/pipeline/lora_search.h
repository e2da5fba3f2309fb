#pragma once
// Finding a LoRA file by the name a prompt tag or --lora uses. Torch-free (the CLI's memory warning uses it).
#include <string>
#include <vector>

namespace dd::pipeline {

// Where <lora:name> looks: `folders` (the engine's, e.g. --lora-dir), then DD_LORA_PATH (':'-separated), each
// with its sub-folders, for name + ".safetensors" (the first match in sorted order). With `allowPath` (a LoRA the
// user gave by path: --lora), a path to a file (with or without ".safetensors") is taken as it is; prompt tags
// name files in the folders only (a prompt may come from an image's metadata). Throws std::invalid_argument
// naming the folders searched.
std::string findLoraFile(const std::string& name, const std::vector<std::string>& folders, bool allowPath);

} // namespace dd::pipeline
