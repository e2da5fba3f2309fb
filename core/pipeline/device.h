#pragma once
// Which torch device a name means.
#include <torch/types.h>

#include <string>

namespace dd::pipeline {

// A device as settings and the CLI name it: "cpu", "cuda", "cuda:N", or "auto" (the first CUDA device when
// there is one, else the CPU; asking loads CUDA's backend where a driver is). Throws std::invalid_argument when
// the CUDA device asked for does not exist.
torch::Device resolveDevice(const std::string& wanted);

} // namespace dd::pipeline
